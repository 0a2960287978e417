// Reading a file a person names (a command's FILE, a login's seed, a daemon's --consumers, --declare
// or --pg-password-file, a secret under --secrets): a regular file only, and read within a limit
// (DESIGN §3), so a FIFO never hangs the program, a device such as /dev/zero never fills its memory,
// and a file past the limit is refused by its size before a byte of it is read. Every read is
// synchronous and non-blocking: none waits in one of Node's file threads, which a process exiting
// waits for (a FIFO opened there held a stopped daemon alive until SIGKILL).
import { closeSync, constants, fstatSync, lstatSync, openSync, readSync, statSync, type Stats } from 'node:fs';
import { errorText } from './errors.ts';
import { fail, ok, type Parsed } from './result.ts';

/** The largest piece read at once. */
const CHUNK_BYTES = 64 * 1024;

// Non-blocking, so that a FIFO put in the file's place between the look and the open is opened
// without waiting for a writer; never the controlling terminal.
const OPEN_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY;

/** How a file is read, and named in a refusal. */
export type RegularFileOptions = {
  /** Refuse a symbolic link as the last component (`… is a symbolic link`), for a file whose links were resolved and checked already. */
  noFollow?: boolean;
  /** How a refusal names the file (default its path): `secret "module/web/key"`, where the path is nobody's business. */
  name?: string;
};

/**
 * What a read came to: the bytes, nothing there (ENOENT), or why it is refused, naming the file;
 * `code` is the file system's (EACCES, ELOOP…) when it refused the open or the read.
 */
export type RegularRead = { state: 'read'; bytes: Uint8Array } | { state: 'absent' } | { state: 'refused'; reason: string; code?: string };

/** What a path is when it is no regular file: `a FIFO`, `a directory`…; undefined for a regular file. */
export function notRegularKind(info: Stats): string | undefined {
  if (info.isFile()) return undefined;
  if (info.isDirectory()) return 'a directory';
  if (info.isFIFO()) return 'a FIFO';
  if (info.isCharacterDevice()) return 'a character device';
  if (info.isBlockDevice()) return 'a block device';
  if (info.isSocket()) return 'a socket';
  if (info.isSymbolicLink()) return 'a symbolic link';
  return 'not a regular file';
}

/** Says why `info` (of `path`) is not a regular file within `maxBytes`; nothing when it is. */
function statProblem(path: string, info: Stats, maxBytes: number): string | undefined {
  const kind = notRegularKind(info);
  if (kind !== undefined) return `${path} is ${kind}, not a regular file`;
  if (info.size > maxBytes) return `${path} is ${info.size} bytes, past the limit of ${maxBytes} bytes`;
  return undefined;
}

/**
 * Says why `path` cannot be read as a regular file within `maxBytes` — not there, not a regular
 * file, or larger — looking at it only (links followed); nothing when it can.
 */
export function regularFileProblem(path: string, maxBytes: number): string | undefined {
  let info: Stats;
  try {
    info = statSync(path);
  } catch (err) {
    return `cannot read ${path}: ${errorText(err)}`;
  }
  return statProblem(path, info, maxBytes);
}

/**
 * Says why a path that is there cannot be read as a regular file within `maxBytes`; nothing when it
 * can or when nothing is there yet — for a file a daemon waits for (a provider's consumers file,
 * which its node's engine writes later), judged at start.
 */
export function presentFileProblem(path: string, maxBytes: number): string | undefined {
  const info = statSync(path, { throwIfNoEntry: false });
  return info === undefined ? undefined : statProblem(path, info, maxBytes);
}

/**
 * The bytes of the regular file at `path`, or why not: a FIFO, a device, a directory or a socket
 * refused at once; a file past `maxBytes` refused by its size, never read; one that grows past it
 * while being read refused when it does. The reason names the path.
 */
export function readRegularFile(path: string, maxBytes: number, opts: RegularFileOptions = {}): Parsed<Uint8Array> {
  const read = readRegularFileIfThere(path, maxBytes, opts);
  if (read.state === 'read') return ok(read.bytes);
  return fail(read.state === 'refused' ? read.reason : `cannot read ${path}: no such file or directory`);
}

/** As readRegularFile, with a file that is not there (ENOENT) told apart: a daemon waits for it. */
export function readRegularFileIfThere(path: string, maxBytes: number, opts: RegularFileOptions = {}): RegularRead {
  const name = opts.name ?? path;
  const refused = (reason: string): RegularRead => ({ state: 'refused', reason });
  const failed = (err: unknown): RegularRead => {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { state: 'absent' };
    if (code === 'ELOOP') return { state: 'refused', reason: `${name} is a symbolic link, not a regular file`, code };
    return { state: 'refused', reason: `cannot read ${name}: ${errorText(err)}`, ...(code ? { code } : {}) };
  };
  let info: Stats;
  try {
    info = opts.noFollow ? lstatSync(path) : statSync(path);
  } catch (err) {
    return failed(err);
  }
  const looked = statProblem(name, info, maxBytes);
  if (looked !== undefined) return refused(looked);
  let fd: number;
  try {
    fd = openSync(path, OPEN_FLAGS | (opts.noFollow ? constants.O_NOFOLLOW : 0));
  } catch (err) {
    return failed(err);
  }
  try {
    // Looked at again through the open file: the path may have been replaced since.
    const problem = statProblem(name, fstatSync(fd), maxBytes);
    if (problem !== undefined) return refused(problem);
    const bytes = readWithin(fd, name, maxBytes);
    return bytes.ok ? { state: 'read', bytes: bytes.value } : refused(bytes.reason);
  } catch (err) {
    return failed(err);
  } finally {
    closeSync(fd);
  }
}

/** Reads `fd` to its end, refused once it holds more than `maxBytes`. */
function readWithin(fd: number, path: string, maxBytes: number): Parsed<Uint8Array> {
  const chunks: Buffer[] = [];
  let total = 0;
  for (;;) {
    const chunk = Buffer.allocUnsafe(Math.min(CHUNK_BYTES, maxBytes - total + 1));
    const got = readSync(fd, chunk, 0, chunk.length, null);
    if (got === 0) return ok(new Uint8Array(Buffer.concat(chunks, total)));
    total += got;
    if (total > maxBytes) return fail(`${path} grew past the limit of ${maxBytes} bytes while it was read`);
    chunks.push(chunk.subarray(0, got));
  }
}

/** A limit as a person reads it in --help: `16 MiB`, `64 KiB`, else bytes. */
export function limitText(bytes: number): string {
  if (bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)} MiB`;
  if (bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes} bytes`;
}
