// Reading a file's current state and writing a new one atomically: temp file beside it, write, fsync, rename.
import { randomBytes } from 'node:crypto';
import { mkdir, open, readdir, readFile, rename, rm, stat, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
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

/** Reads a file's bytes, permission bits and owner; undefined when the path is absent. */
export async function readOnDisk(path: string): Promise<OnDisk | undefined> {
  try {
    const [info, bytes] = await Promise.all([stat(path), readFile(path)]);
    return { bytes, mode: info.mode & 0o7777, uid: info.uid, gid: info.gid };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** Whether anything exists at the path (a seed is kept even when it is not a regular file). */
export async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}

/** Writes the bytes so a reader sees the old file or the new one, never a part; creates the parent dirs. */
export async function writeAtomic(path: string, bytes: Buffer, mode: number, ownership?: Ownership): Promise<void> {
  const dir = dirname(path);
  await mkdir(dir, { recursive: true });
  const temp = join(dir, `.${basename(path)}.mesh-${randomBytes(6).toString('hex')}.tmp`);
  try {
    const file = await open(temp, 'wx', 0o600);
    try {
      await file.writeFile(bytes);
      await file.chmod(mode);
      if (ownership) await file.chown(ownership.uid, ownership.gid);
      await file.sync();
    } finally {
      await file.close();
    }
    await rename(temp, path);
  } catch (err) {
    await rm(temp, { force: true });
    throw err;
  }
  await syncDir(dir);
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
    entries = await readdir(dir, { withFileTypes: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const left = entries.filter((e) => e.isFile() && TEMP_NAME.test(e.name)).map((e) => e.name);
  for (const name of left) {
    await unlink(join(dir, name)).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
    });
  }
  return left;
}

// The rename lives in the directory; without this fsync a crash may lose it.
async function syncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } catch {
    // Some file systems refuse fsync on a directory; the rename is still atomic there.
  } finally {
    await handle.close();
  }
}
