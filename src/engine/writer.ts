// Reading a file's current state and writing a new one atomically: temp file beside it, write, fsync, rename.
import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, rm, stat } from 'node:fs/promises';
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
  const temp = join(dir, `.${basename(path)}.${randomBytes(6).toString('hex')}.tmp`);
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
