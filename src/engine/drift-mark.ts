// What the engine answers for in a file it wrote (DESIGN §14), and whether the disk still holds it:
// an `owned` file's bytes, a `managed` file's block, and the mode and owner when the engine set them.
import { createHash } from 'node:crypto';
import { blockOf } from './managed.ts';
import { readOnDisk, type OnDisk } from './writer.ts';

/** What of one file the engine last wrote (or found as it would write it), by module and path. */
export type Held = {
  /** The module whose request named it. */
  module: string;
  /** The path as the request named it. */
  path: string;
  /** Where it lies, links resolved. */
  target: string;
  /** `owned`: the whole file is the engine's; `managed`: the module's block alone. */
  kind: 'owned' | 'managed';
  /** The block's comment leader as the splice reads it, latin1 (empty for `owned`). */
  comment: string;
  /** sha256 (hex) of the bytes the engine answers for: the file, or the block from BEGIN to END. */
  digest: string;
  /** The permission bits, when the engine sets them (always for `owned`; for `managed` only when the request or a secret does). */
  mode?: number;
  /** The owner's uid and gid, when the engine gives the file an owner (as root, with `owner`). */
  owner?: { uid: number; gid: number };
};

/** The sha256 (hex) of bytes. */
export function digestOf(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** The digest of what a `managed` file's text (latin1) holds of the module's block; undefined when it holds no whole block. */
export function blockDigest(text: string, module: string, comment: string): string | undefined {
  const block = blockOf(text, module, comment);
  return block === undefined ? undefined : digestOf(Buffer.from(block, 'latin1'));
}

/** Whether two holds are the same content, the same way: a fill bringing one equal to the last is a restore, not a new write. */
export function sameHeld(a: Held, b: Held): boolean {
  return (
    a.target === b.target &&
    a.kind === b.kind &&
    a.comment === b.comment &&
    a.digest === b.digest &&
    a.mode === b.mode &&
    a.owner?.uid === b.owner?.uid &&
    a.owner?.gid === b.owner?.gid
  );
}

/** Whether the file as read holds what the engine answers for (its other bytes, and a mode or owner it did not set, are not looked at). */
export function diskHolds(held: Held, disk: OnDisk | undefined): boolean {
  if (!disk) return false;
  if (held.mode !== undefined && disk.mode !== held.mode) return false;
  if (held.owner && (disk.uid !== held.owner.uid || disk.gid !== held.owner.gid)) return false;
  if (held.kind === 'owned') return digestOf(disk.bytes) === held.digest;
  return blockDigest(disk.bytes.toString('latin1'), held.module, held.comment) === held.digest;
}

/**
 * Whether the disk still holds what the engine answers for. The file is read and compared each
 * time: a stat cannot tell, as Linux stamps a change with a clock ticking every few milliseconds,
 * so a write in the tick of the engine's own leaves the stat as it was.
 */
export async function observe(held: Held): Promise<boolean> {
  try {
    return diskHolds(held, await readOnDisk(held.target));
  } catch {
    // Whatever stands there now (a directory, a FIFO, a file the engine may not read) is not what it wrote.
    return false;
  }
}
