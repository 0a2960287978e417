// Reading a file's current state and writing a new one atomically: temp file beside it, write, fsync, rename.
// The calls are synchronous: the engine applies one request at a time, so a thread-pool hop per call
// (about fifteen a file) bought no overlap, only latency.
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  fchmodSync,
  fchownSync,
  fstatSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { notRegularKind } from '../shared/base/regular-file.ts';
import type { Ownership } from './owner.ts';

/** A file as it is on disk. */
export type OnDisk = {
  /** Its bytes. */
  bytes: Buffer;
  /** Its permission bits. */
  mode: number;
  /** Its owner. */
  uid: number;
  /** Its group. */
  gid: number;
};

/** Reads a file's bytes, permission bits and owner; undefined when the path is absent; throws naming what it is when it is no regular file. */
export async function readOnDisk(path: string): Promise<OnDisk | undefined> {
  try {
    // Non-blocking: a FIFO at a written path must not hang the engine (a blocking open waits for a writer for ever).
    const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
    try {
      const info = fstatSync(fd);
      const kind = notRegularKind(info);
      if (kind !== undefined) throw new Error(`${path} is ${kind}, not a regular file`);
      return { bytes: readAll(fd, info.size), mode: info.mode & 0o7777, uid: info.uid, gid: info.gid };
    } finally {
      closeSync(fd);
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

// Reads to the end in one call when the file is as large as its stat said: a buffer one byte larger
// sees the end at once, where readFileSync stats the file again and reads once more to find it.
function readAll(fd: number, size: number): Buffer {
  const chunks: Buffer[] = [];
  let total = 0;
  for (let room = size + 1; ; room = Math.max(room * 2, 64 * 1024)) {
    const chunk = Buffer.allocUnsafe(room);
    const got = readSync(fd, chunk, 0, room, null);
    if (got === 0) break;
    chunks.push(chunk.subarray(0, got));
    total += got;
    if (got < room) break;
  }
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, total);
}

/** Whether anything exists at the path (a seed is kept even when it is not a regular file). */
export async function exists(path: string): Promise<boolean> {
  try {
    statSync(path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}

/** How writeAtomic ends. */
export type WriteOptions = {
  /**
   * Whether the directory is synced before it returns (the default); false leaves it to the caller,
   * who syncs it (syncDir) once for every file it wrote there before it says any of them is written.
   */
  syncDir?: boolean;
};

/** Writes the bytes so a reader sees the old file or the new one, never a part; creates the parent dirs. */
export async function writeAtomic(path: string, bytes: Buffer, mode: number, ownership?: Ownership, opts: WriteOptions = {}): Promise<void> {
  const dir = dirname(path);
  const temp = join(dir, `.${basename(path)}.mesh-${tempSuffix()}.tmp`);
  try {
    const fd = openTemp(temp, dir);
    try {
      for (let at = 0; at < bytes.length;) at += writeSync(fd, bytes, at);
      fchmodSync(fd, mode);
      if (ownership) fchownSync(fd, ownership.uid, ownership.gid);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, path);
  } catch (err) {
    rmSync(temp, { force: true });
    throw err;
  }
  if (opts.syncDir !== false) syncDir(dir);
}

// The directory is made only when the temp file cannot be created in it: it exists for every write but a module's first.
function openTemp(temp: string, dir: string): number {
  try {
    return openSync(temp, 'wx', 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  mkdirSync(dir, { recursive: true });
  return openSync(temp, 'wx', 0o600);
}

// Random bytes drawn 256 names at a time: one draw cost as much as the rest of a small file's write.
let suffixes = Buffer.alloc(0);
let nextSuffix = 0;
function tempSuffix(): string {
  if (nextSuffix + 6 > suffixes.length) {
    suffixes = randomBytes(6 * 256);
    nextSuffix = 0;
  }
  return suffixes.toString('hex', nextSuffix, (nextSuffix += 6));
}

/** The name writeAtomic gives a temp file: `.<name>.mesh-<12 hex>.tmp`, beside the file it becomes. */
export const TEMP_NAME = /^\..+\.mesh-[0-9a-f]{12}\.tmp$/;

/**
 * Removes the temp files of writeAtomic in `dir` (regular files named like TEMP_NAME) and resolves
 * with their names. A running writer removes its own temp file when a write fails, so one found
 * here is what a killed engine left: a prefix of a file, or a whole secret, never renamed.
 */
export async function removeTempFiles(dir: string): Promise<string[]> {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const left = entries.filter((e) => e.isFile() && TEMP_NAME.test(e.name)).map((e) => e.name);
  for (const name of left) {
    try {
      unlinkSync(join(dir, name));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  return left;
}

/** Syncs a directory, so the renames in it survive a crash; a file system refusing fsync on a directory is no error, one that cannot open it is. */
export function syncDir(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } catch {
    // Some file systems refuse fsync on a directory; the rename is still atomic there.
  } finally {
    closeSync(fd);
  }
}
