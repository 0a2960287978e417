// Removing what no declaration names any more (DESIGN §7.12), so that a removed module leaves
// nothing behind: an `owned` file deleted, a `managed` block cut out of its file, a `seed` left.
import { unlink } from 'node:fs/promises';
import { DEFAULT_COMMENT } from '../shared/contract/fill-protocol.ts';
import type { Logger } from '../shared/cli/log.ts';
import type { Declared } from './declaration.ts';
import type { Drift } from './drift.ts';
import { REMOVAL_ACTIONS, type Journal, type RemovalAction } from './journal.ts';
import { cutBlock } from './managed.ts';
import { resolveInsideRoot } from './paths.ts';
import type { WrittenFile, WrittenRecord } from './record.ts';
import { readOnDisk, writeAtomic } from './writer.ts';
import { errorText } from '../shared/base/errors.ts';

/** What a removal needs from the engine. */
export type RemovalContext = {
  /** The root with every link resolved; nothing outside it is touched. */
  realRoot: string;
  /** What the engine wrote, per module and path. */
  record: WrittenRecord;
  /** Where each removal is recorded. */
  journal: Journal;
  /** Where failures are said. */
  log: Logger;
  /** What the engine watches of what it wrote: a file removed is watched no more. */
  drift?: Drift;
};

/**
 * Removes every recorded file `declared` no longer names for its module, journals each, and saves
 * the record. A file that cannot be removed is said and stays recorded, to be tried
 * again at the next change of the declaration or start.
 */
export async function removeUndeclared(declared: Declared, ctx: RemovalContext): Promise<void> {
  for (const entry of ctx.record.list()) {
    if (declared.names(entry.path, entry.module)) continue;
    let done: RemovalAction | undefined;
    // Before the removal, or the engine's own unlink or cut would read as a change by something else.
    ctx.drift?.forget(entry.module, entry.path);
    try {
      done = await removeOne(entry, ctx);
    } catch (err) {
      ctx.log.warn(`${entry.path} of ${entry.module} is no longer declared but could not be removed: ${errorText(err)}`);
      continue;
    }
    ctx.record.forget(entry);
    if (!done) continue;
    try {
      await ctx.journal(done, entry.module, entry.path);
    } catch (err) {
      ctx.log.error(`journal of ${done} ${entry.module} ${entry.path} failed: ${errorText(err)}`);
    }
  }
  await ctx.record.flush();
}

/** Removes one file as its mode says; undefined when there was nothing left to remove. */
async function removeOne(entry: WrittenFile, ctx: RemovalContext): Promise<RemovalAction | undefined> {
  // A seed is written only when absent: from then on it is the program's (a key it made, a config an
  // operator edited), and removing it would lose what the engine never owned.
  if (entry.mode === 'seed') return REMOVAL_ACTIONS.leave;
  const target = await resolveInsideRoot(ctx.realRoot, entry.path);
  // A link changed since the write may point elsewhere now: nothing outside the root is touched.
  if (!target.ok) throw new Error(target.reason);
  if (entry.mode === 'owned') return (await unlinkIfThere(target.value)) ? REMOVAL_ACTIONS.remove : undefined;
  return cutManaged(target.value, entry);
}

/** Cuts the module's block; the file goes too when the block was all it held (nobody else's byte is lost). */
async function cutManaged(target: string, entry: WrittenFile): Promise<RemovalAction | undefined> {
  const current = await readOnDisk(target);
  if (!current) return undefined;
  // Latin1 as the writer splices: every byte outside the block survives, UTF-8 or not.
  const comment = Buffer.from(entry.comment ?? DEFAULT_COMMENT, 'utf8').toString('latin1');
  const cut = cutBlock(current.bytes.toString('latin1'), entry.module, comment);
  if (!cut.ok) throw new Error(cut.reason);
  if (cut.value === undefined) return undefined;
  if (cut.value === '') return (await unlinkIfThere(target)) ? REMOVAL_ACTIONS.remove : undefined;
  const keepOwner = process.getuid?.() === 0 ? { uid: current.uid, gid: current.gid } : undefined;
  await writeAtomic(target, Buffer.from(cut.value, 'latin1'), current.mode, keepOwner);
  return REMOVAL_ACTIONS.cut;
}

async function unlinkIfThere(path: string): Promise<boolean> {
  try {
    await unlink(path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}
