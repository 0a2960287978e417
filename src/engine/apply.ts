// Applying one fill request: each file checked, filled and written as its mode says, then one restart or reload.
import { dirname } from 'node:path';
import type { Logger } from '../shared/cli/log.ts';
import {
  contentDigest,
  contentText,
  DEFAULT_COMMENT,
  DEFAULT_FILE_MODE,
  LEFT_REASON,
  SECRET_FILE_MODE,
  type FillFile,
  type FillRequest,
  type FillResult,
} from '../shared/contract/fill-protocol.ts';
import type { Declaration } from './declaration.ts';
import type { Drift } from './drift.ts';
import { blockDigest, digestOf, type Held } from './drift-mark.ts';
import { PROGRAM_ACTIONS, type Journal, type ProgramAction } from './journal.ts';
import type { TempSweeper } from './leftovers.ts';
import { markerInContent, spliceBlock } from './managed.ts';
import { resolveOwner, type Ownership } from './owner.ts';
import { resolveInsideRoot } from './paths.ts';
import type { WrittenFile } from './record.ts';
import { fillSecrets, type SecretSource } from './secrets.ts';
import { exists, readOnDisk, syncDir, writeAtomic, type OnDisk } from './writer.ts';
import { errorText } from '../shared/base/errors.ts';

/** What applying a request needs from the engine. */
export type ApplyContext = {
  /** The root with every link resolved; nothing is written outside it. */
  realRoot: string;
  /** The paths that may be written, as read for this request. */
  declaration: Declaration;
  /** Where secrets are read. */
  secrets: SecretSource;
  /** Where restarts and reloads are recorded. */
  journal: Journal;
  /** Where refusals and failures are said. */
  log: Logger;
  /** Removes what a cut-short write left in a file's directory before the file is written there (once per run). */
  sweep?: TempSweeper;
  /** Notes each file the request took (not refused), so that it can be removed once no declaration names it. */
  record?: (file: WrittenFile) => void;
  /** What the engine last wrote of each file, watched for a change by something else (DESIGN §14). */
  drift?: Drift;
};

/** What became of one file; a written or restored file names the directory its rename is to be synced in. */
type Outcome = { action: 'written' | 'restored'; dir: string } | { action: 'unchanged' | 'kept' } | { action: 'refused' | 'left'; reason: string };

/**
 * Applies every file in request order, syncs each directory written once (not once per file), and
 * restarts or reloads the module's program at most once.
 */
export async function applyFill(req: FillRequest, ctx: ApplyContext): Promise<FillResult[]> {
  const outcomes: Outcome[] = [];
  for (const file of req.files) outcomes.push(await applyFile(file, req, ctx));
  const synced = syncWrittenDirs(outcomes);
  const results: FillResult[] = [];
  let program: ProgramAction | undefined;
  for (const [i, file] of req.files.entries()) {
    const outcome = synced[i]!;
    results.push('dir' in outcome ? { path: file.path, action: outcome.action } : { path: file.path, ...outcome });
    if (outcome.action === 'refused') ctx.log.warn(`fill ${req.module}: ${file.path} refused: ${outcome.reason}`);
    else ctx.record?.({ module: req.module, path: file.path, mode: file.mode, ...(file.comment === undefined ? {} : { comment: file.comment }) });
    // A restore runs the file's change too: the program may have read the bytes it replaced.
    if (!('dir' in outcome) || file.change === 'none') continue;
    if (file.change === 'restart' || program === undefined) program = PROGRAM_ACTIONS[file.change];
  }
  ctx.log.info(`fill ${req.module} ${req.build}: ${summarize(results)}`);
  if (program) {
    try {
      await ctx.journal(program, req.module);
    } catch (err) {
      ctx.log.error(`fill ${req.module}: journal of ${program} failed: ${errorText(err)}`);
    }
  }
  return results;
}

/** The outcomes with every written file's directory synced; a file whose directory could not be is refused, naming it. */
function syncWrittenDirs(outcomes: readonly Outcome[]): Outcome[] {
  const failed = new Map<string, string>();
  const dirs = new Set(outcomes.flatMap((o) => ('dir' in o ? [o.dir] : [])));
  for (const dir of dirs) {
    try {
      syncDir(dir);
    } catch (err) {
      failed.set(dir, `write failed: syncing ${dir}: ${errorText(err)}`);
    }
  }
  return outcomes.map((o) => ('dir' in o && failed.has(o.dir) ? { action: 'refused', reason: failed.get(o.dir)! } : o));
}

async function applyFile(file: FillFile, req: FillRequest, ctx: ApplyContext): Promise<Outcome> {
  const refuse = (reason: string): Outcome => ({ action: 'refused', reason });
  try {
    const target = await resolveInsideRoot(ctx.realRoot, file.path);
    if (!target.ok) return refuse(target.reason);
    const declared = ctx.declaration(file.path, req.module);
    if (!declared.ok) return refuse(declared.reason);
    if (contentDigest(file.content) !== file.digest) return refuse('digest does not match content');
    await ctx.sweep?.(dirname(target.value));
    const filled = await fillSecrets(file.content, req.secrets ?? {}, ctx.secrets, req.module);
    if (!filled.ok) return refuse(filled.reason);
    const owner = await resolveOwner(file.owner);
    // Written as root instead, a file meant for the module's user would be one that user cannot read, or one nobody asked root to own.
    if (owner.unknown) return refuse(`owner "${owner.unknown}" is not a user on this node`);
    const write = { target: target.value, content: filled.value, ownership: owner.ownership, module: req.module, path: file.path, drift: ctx.drift };
    if (file.mode === 'seed') {
      // A seed is the program's once written: not watched, whatever the path was before.
      ctx.drift?.forget(req.module, file.path);
      return (await exists(write.target)) ? { action: 'kept' } : writeOwned({ ...write, drift: undefined }, file);
    }
    if (file.mode === 'managed') return writeManaged(write, file, req.module);
    return writeOwned(write, file);
  } catch (err) {
    return refuse(`write failed: ${errorText(err)}`);
  }
}

type Write = { target: string; content: string; ownership: Ownership | undefined; module: string; path: string; drift: Drift | undefined };

async function writeOwned(write: Write, file: FillFile): Promise<Outcome> {
  const bytes = Buffer.from(write.content, 'utf8');
  const mode = parseMode(file.fileMode ?? defaultModeOf(file));
  const held: Held = { ...heldOf(write, 'owned', ''), digest: digestOf(bytes), mode };
  return put(write, { current: await readOnDisk(write.target), bytes, mode, held });
}

// Foreign bytes are carried as latin1 so every byte outside the block survives, UTF-8 or not.
async function writeManaged(write: Write, file: FillFile, module: string): Promise<Outcome> {
  const current = await readOnDisk(write.target);
  const asLatin1 = (s: string) => Buffer.from(s, 'utf8').toString('latin1');
  const comment = asLatin1(file.comment ?? DEFAULT_COMMENT);
  // A marker made with a secret's value is refused without quoting the line, which would show the value.
  if (markerFromSecret(file, write.content, comment, asLatin1))
    return { action: 'refused', reason: "a secret part's value makes a BEGIN or END line of a managed block" };
  const spliced = spliceBlock(current?.bytes.toString('latin1'), module, comment, asLatin1(write.content));
  if (!spliced.ok) return { action: 'refused', reason: spliced.reason };
  // A file others write too keeps its own mode and owner unless the request names them, or a secret of its block would be read by others.
  const mode = file.fileMode ? parseMode(file.fileMode) : holdsSecret(file) ? parseMode(SECRET_FILE_MODE) : (current?.mode ?? parseMode(DEFAULT_FILE_MODE));
  const keepOwner = current && process.getuid?.() === 0 ? { uid: current.uid, gid: current.gid } : undefined;
  // The engine answers for the block alone, and for the mode only when it chose it.
  const digest = blockDigest(spliced.value, module, comment)!;
  const held: Held = { ...heldOf(write, 'managed', comment), digest, ...(file.fileMode || holdsSecret(file) ? { mode } : {}) };
  return put({ ...write, ownership: write.ownership ?? keepOwner }, { current, bytes: Buffer.from(spliced.value, 'latin1'), mode, held });
}

/** What a file's write holds, before its bytes: the module, the path, where it lies, and the owner the engine gives it. */
function heldOf(write: Write, kind: Held['kind'], comment: string): Omit<Held, 'digest'> {
  const { module, path, target, ownership } = write;
  return { module, path, target, kind, comment, ...(ownership ? { owner: ownership } : {}) };
}

function markerFromSecret(file: FillFile, filled: string, comment: string, asLatin1: (s: string) => string): boolean {
  if (typeof file.content === 'string') return false;
  return markerInContent(asLatin1(contentText(file.content)), comment) === undefined && markerInContent(asLatin1(filled), comment) !== undefined;
}

/** What is to be on disk, and what the engine answers for of it. */
type Wanted = { current: OnDisk | undefined; bytes: Buffer; mode: number; held: Held };

/**
 * Writes the file unless it already is as wanted. A content left as it is (DESIGN §14) is not
 * written; the same content as last written, found changed on disk, is put back (`restored`), or
 * left at the fifth change in the window. A written, restored or unchanged file is held: remembered
 * and watched from the moment its rename is done, so the engine's own write knocks for nothing.
 */
async function put(write: Write, wanted: Wanted): Promise<Outcome> {
  const { target, ownership, drift } = write;
  const { current, bytes, mode, held } = wanted;
  if (drift?.isLeft(held)) return { action: 'left', reason: LEFT_REASON };
  const sameOwner = !ownership || (current?.uid === ownership.uid && current.gid === ownership.gid);
  if (current && current.bytes.equals(bytes) && current.mode === mode && sameOwner) {
    drift?.hold(held);
    return { action: 'unchanged' };
  }
  const verdict = drift ? drift.judge(held) : 'written';
  if (verdict === 'left') return { action: 'left', reason: LEFT_REASON };
  // The directory is synced once per request by applyFill, after every file of it is renamed.
  await writeAtomic(target, bytes, mode, ownership, { syncDir: false });
  drift?.hold(held);
  return { action: verdict, dir: dirname(target) };
}

/** Whether a file's content has a secret part: its value must not be readable by every user of the node. */
function holdsSecret(file: FillFile): boolean {
  return typeof file.content !== 'string' && file.content.some((part) => typeof part !== 'string');
}

/** The mode of a file that declares none: SECRET_FILE_MODE when it holds a secret part, else DEFAULT_FILE_MODE. */
function defaultModeOf(file: FillFile): string {
  return holdsSecret(file) ? SECRET_FILE_MODE : DEFAULT_FILE_MODE;
}

function parseMode(octal: string): number {
  return parseInt(octal, 8);
}

function summarize(results: readonly FillResult[]): string {
  const counts = new Map<string, number>();
  for (const r of results) counts.set(r.action, (counts.get(r.action) ?? 0) + 1);
  return results.length === 0 ? 'no files' : [...counts].map(([action, n]) => `${n} ${action}`).join(', ');
}
