// Reading a file a person names (a command's FILE, a login's seed): a regular file only, and read
// within a limit (DESIGN §3), so a FIFO never hangs the program, a device such as /dev/zero never
// fills its memory, and a file past the limit is refused by its size before a byte of it is read.
import { closeSync, constants, fstatSync, openSync, readSync, statSync, type Stats } from 'node:fs';
import { errorText } from './errors.ts';
import { fail, ok, type Parsed } from './result.ts';

/** The largest piece read at once. */
const CHUNK_BYTES = 64 * 1024;

// Non-blocking, so that a FIFO put in the file's place between the look and the open is opened
// without waiting for a writer; never the controlling terminal.
const OPEN_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY;

/** What a path is when it is no regular file: `a FIFO`, `a directory`…; undefined for a regular file. */
export function notRegularKind(info: Stats): string | undefined {
  if (info.isFile()) return undefined;
  if (info.isDirectory()) return 'a directory';
  if (info.isFIFO()) return 'a FIFO';
  if (info.isCharacterDevice()) return 'a character device';
  if (info.isBlockDevice()) return 'a block device';
  if (info.isSocket()) return 'a socket';
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
 * The bytes of the regular file at `path`, or why not: a FIFO, a device, a directory or a socket
 * refused at once; a file past `maxBytes` refused by its size, never read; one that grows past it
 * while being read refused when it does. The reason names the path.
 */
export function readRegularFile(path: string, maxBytes: number): Parsed<Uint8Array> {
  const looked = regularFileProblem(path, maxBytes);
  if (looked !== undefined) return fail(looked);
  let fd: number;
  try {
    fd = openSync(path, OPEN_FLAGS);
  } catch (err) {
    return fail(`cannot read ${path}: ${errorText(err)}`);
  }
  try {
    // Looked at again through the open file: the path may have been replaced since.
    const problem = statProblem(path, fstatSync(fd), maxBytes);
    if (problem !== undefined) return fail(problem);
    return readWithin(fd, path, maxBytes);
  } catch (err) {
    return fail(`cannot read ${path}: ${errorText(err)}`);
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
