// The file of the archive cache's pack (client/archive/pack.ts): opened only as a regular file, and
// its records, one after another, each
//   MESHARCHIVE sha256-<hex> <length>\n<the archive's bytes as fetched>\n
// made, found by a scan, and copied into a new pack; what a pack holds is judged here, never trusted:
// the scan skips what is not a record to the next record's start.
import { constants, type Stats } from 'node:fs';
import { mkdir, open, type FileHandle } from 'node:fs/promises';
import { notRegularKind } from '../../shared/base/regular-file.ts';

const MAGIC = 'MESHARCHIVE ';
/** A record's header: the digest's hex and the length of the bytes that follow it. */
const HEADER = /^MESHARCHIVE sha256-([0-9a-f]{64}) (\d{1,15})\n/;
/** The longest header: the magic, `sha256-`, 64 hex, a space, 15 digits, a newline. */
const HEADER_MAX = MAGIC.length + 7 + 64 + 1 + 15 + 1;
/** How much of the pack one read of the scan takes. */
const SCAN_WINDOW = 64 * 1024;
/** The most bytes a copy into a new pack writes at once. */
const COPY_WRITE_BYTES = 8 * 1024 * 1024;
const NEWLINE = 0x0a;

/** Where a record's bytes are in the pack. */
export type PackEntry = { offset: number; length: number };

/** An archive to append: its digest's hex and its bytes. */
export type PackRecord = { hex: string; bytes: Uint8Array };

/** The record header of `hex`'s `length` bytes. */
function packHeader(hex: string, length: number): Buffer {
  return Buffer.from(`${MAGIC}sha256-${hex} ${length}\n`, 'latin1');
}

/** How many bytes the record of `hex`'s `entry` takes in a pack, its header and newline counted. */
export function recordBytes(hex: string, entry: PackEntry): number {
  return packHeader(hex, entry.length).length + entry.length + 1;
}

/** `records` as the bytes of one append, with where each one's bytes start within them. */
export function recordsOf(records: readonly PackRecord[]): { whole: Buffer; placed: { hex: string; at: number; length: number }[] } {
  const parts: Uint8Array[] = [];
  const placed: { hex: string; at: number; length: number }[] = [];
  let at = 0;
  for (const { hex, bytes } of records) {
    const header = packHeader(hex, bytes.length);
    parts.push(header, bytes, Buffer.of(NEWLINE));
    placed.push({ hex, at: at + header.length, length: bytes.length });
    at += header.length + bytes.length + 1;
  }
  return { whole: Buffer.concat(parts), placed };
}

/** Writes all of `bytes`: a short write (a disk filling up) goes on with the rest, which says why it cannot (ENOSPC). */
export async function writeAll(handle: FileHandle, bytes: Buffer): Promise<void> {
  for (let written = 0; written < bytes.length;) {
    const { bytesWritten } = await handle.write(bytes, written, bytes.length - written);
    if (bytesWritten === 0) throw new Error(`only ${written} of ${bytes.length} bytes written`);
    written += bytesWritten;
  }
}

/** Every whole record of the `size` bytes of `handle`, by digest (a later record of a digest wins). */
export async function scanRecords(handle: FileHandle, size: number): Promise<Map<string, PackEntry>> {
  const index = new Map<string, PackEntry>();
  const window = new ScanWindow(handle, size);
  for (let pos = 0; pos < size;) {
    const head = HEADER.exec((await window.bytes(pos, HEADER_MAX)).toString('latin1'));
    if (head) {
      const offset = pos + head[0].length;
      const end = offset + Number(head[2]);
      // Its newline, then the pack's end or the next record's start: a record torn by a crash, with
      // records appended after it, says a length that can end on some other newline of theirs.
      if (
        end < size &&
        (await window.bytes(end, 1))[0] === NEWLINE &&
        (end + 1 === size || (await window.bytes(end + 1, MAGIC.length)).toString('latin1') === MAGIC)
      ) {
        index.set(head[1]!, { offset, length: Number(head[2]) });
        pos = end + 1;
        continue;
      }
    }
    // No record starts here (a torn write, bytes changed): on from the next record's start, if any.
    const next = await window.find(MAGIC, pos + 1);
    if (next === undefined) break;
    pos = next;
  }
  return index;
}

/**
 * Copies the records `kept` (in their order) of `from` into `to`, as they are; a record cut short
 * since it was indexed is left out (its archive is fetched again when used). Resolves with the new
 * index and the bytes written.
 */
export async function copyRecords(
  from: FileHandle,
  kept: readonly [string, PackEntry][],
  to: FileHandle,
): Promise<{ index: Map<string, PackEntry>; size: number }> {
  const index = new Map<string, PackEntry>();
  let size = 0;
  for (let i = 0; i < kept.length;) {
    const parts: Buffer[] = [];
    let bytes = 0;
    for (; i < kept.length && (parts.length === 0 || bytes + kept[i]![1].length <= COPY_WRITE_BYTES); i++) {
      const [hex, entry] = kept[i]!;
      const header = packHeader(hex, entry.length);
      const body = Buffer.alloc(entry.length + 1);
      const { bytesRead } = await from.read(body, 0, entry.length + 1, entry.offset);
      if (bytesRead !== entry.length + 1) continue;
      index.set(hex, { offset: size + bytes + header.length, length: entry.length });
      parts.push(header, body);
      bytes += header.length + body.length;
    }
    const whole = Buffer.concat(parts);
    await writeAll(to, whole);
    size += whole.length;
  }
  return { index, size };
}

/** The pack at `path` opened to read with its inode and size, or undefined when it is not there; a pack that is no regular file is refused. */
export async function openToRead(path: string): Promise<{ handle: FileHandle; ino: number; size: number } | undefined> {
  let handle: FileHandle;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW | constants.O_NOCTTY);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  const stat = await handle.stat();
  return { handle: await regularOrClosed(path, handle, stat), ino: stat.ino, size: stat.size };
}

/** The pack at `path` opened to append, made (and `dir`) when it is not there, with its stat as opened. */
export async function openToAppend(path: string, dir: string): Promise<{ handle: FileHandle; stat: Stats }> {
  const flags = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NONBLOCK | constants.O_NOFOLLOW | constants.O_NOCTTY;
  let handle: FileHandle;
  try {
    handle = await open(path, flags, 0o666);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    await mkdir(dir, { recursive: true });
    handle = await open(path, flags, 0o666);
  }
  const stat = await handle.stat();
  return { handle: await regularOrClosed(path, handle, stat), stat };
}

/** `handle` when `stat` says a regular file; closed, and thrown naming what it is, when not. */
async function regularOrClosed(path: string, handle: FileHandle, stat: Stats): Promise<FileHandle> {
  const kind = notRegularKind(stat);
  if (kind === undefined) return handle;
  await handle.close();
  throw new Error(`${path} is ${kind}, not a regular file`);
}

/** The scan's reads of a pack: a window of SCAN_WINDOW bytes, read again only when a read falls outside it. */
class ScanWindow {
  #bytes: Buffer = Buffer.alloc(0);
  #at = 0;

  constructor(
    private readonly handle: FileHandle,
    private readonly size: number,
  ) {}

  /** Up to `n` bytes at `pos` (fewer at the pack's end). */
  async bytes(pos: number, n: number): Promise<Buffer> {
    const want = Math.min(n, this.size - pos);
    if (pos < this.#at || pos + want > this.#at + this.#bytes.length) {
      const buffer = Buffer.alloc(Math.min(Math.max(want, SCAN_WINDOW), this.size - pos));
      const { bytesRead } = await this.handle.read(buffer, 0, buffer.length, pos);
      this.#bytes = buffer.subarray(0, bytesRead);
      this.#at = pos;
    }
    return this.#bytes.subarray(pos - this.#at, pos - this.#at + want);
  }

  /** Where `text` next starts at or after `from`, or undefined when nowhere. */
  async find(text: string, from: number): Promise<number | undefined> {
    const needle = Buffer.from(text, 'latin1');
    for (let pos = from; pos < this.size; pos += SCAN_WINDOW - needle.length) {
      const chunk = await this.bytes(pos, SCAN_WINDOW);
      const i = chunk.indexOf(needle);
      if (i >= 0) return pos + i;
      if (pos + chunk.length >= this.size) return undefined;
    }
    return undefined;
  }
}
