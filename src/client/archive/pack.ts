// The archive cache as one file (DESIGN §7 point 1: a cached archive is not fetched again):
// `<cacheDir>/archives.pack`, records appended one after another, each
//   MESHARCHIVE sha256-<hex> <length>\n<the archive's bytes as fetched>\n
// Making a file costs this project's bench machine (a VM on ext4) 0.8–0.9 ms of CPU, 0.6–0.7 in the
// kernel: a file an archive cost a cold start of 1,000 modules 0.6 s of CPU behind its last report,
// where one append of the archives waiting costs a few milliseconds (docs/scale.md, issue 34).
//
// Nothing read here is trusted: the index says where a digest's bytes should be, and the caller
// hashes what it reads (client/archive/load.ts). So a record torn by a crash or a full disk, bytes
// changed on disk, or a second client appending to the same pack cost a fetch again, never a fill
// from wrong bytes. The scan skips what is not a record to the next record's start.
import { constants, type Stats } from 'node:fs';
import { mkdir, open, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { notRegularKind } from '../../shared/base/regular-file.ts';

/** The pack's name in the cache dir. */
export const PACK_NAME = 'archives.pack';

const MAGIC = 'MESHARCHIVE ';
/** A record's header: the digest's hex and the length of the bytes that follow it. */
const HEADER = /^MESHARCHIVE sha256-([0-9a-f]{64}) (\d{1,15})\n/;
/** The longest header: the magic, `sha256-`, 64 hex, a space, 15 digits, a newline. */
const HEADER_MAX = MAGIC.length + 7 + 64 + 1 + 15 + 1;
/** How much of the pack one read of the scan takes. */
const SCAN_WINDOW = 64 * 1024;
const NEWLINE = 0x0a;

/** Where a record's bytes are in the pack. */
export type PackEntry = { offset: number; length: number };

/** An archive to append: its digest's hex and its bytes. */
export type PackRecord = { hex: string; bytes: Uint8Array };

/** The record header of `hex`'s `length` bytes. */
function packHeader(hex: string, length: number): string {
  return `${MAGIC}sha256-${hex} ${length}\n`;
}

/** One pack, indexed once per process on its first use; its appends and reads. */
export class ArchivePack {
  readonly path: string;
  readonly #index = new Map<string, PackEntry>();
  /** The inode the index describes: another file under the pack's name (a removed dir or pack) has none of its records. */
  #ino: number | undefined;
  #scanned: Promise<void> | undefined;

  constructor(readonly dir: string) {
    this.path = join(dir, PACK_NAME);
  }

  /** Where `hex`'s bytes are said to be, or undefined when the pack holds no record of it. */
  async find(hex: string): Promise<PackEntry | undefined> {
    await this.#indexed();
    return this.#index.get(hex);
  }

  /**
   * The bytes at `entry` (fewer when the pack was cut short), or undefined when the pack is gone or
   * is another file than the one indexed: then no record of the index is there any more.
   */
  async read(entry: PackEntry): Promise<Uint8Array | undefined> {
    const opened = await this.#open();
    if (!opened) return this.#lost();
    const { handle, ino } = opened;
    try {
      if (ino !== this.#ino) return this.#lost();
      const bytes = Buffer.alloc(entry.length);
      const { bytesRead } = await handle.read(bytes, 0, entry.length, entry.offset);
      return bytes.subarray(0, bytesRead);
    } finally {
      await handle.close();
    }
  }

  /** `hex`'s record holds other bytes than its digest's: it is read no more (a new one is appended once fetched). */
  forget(hex: string): void {
    this.#index.delete(hex);
  }

  /**
   * Appends `records` in one write and indexes them. A write that fails (ENOSPC) is cut off the
   * pack again, so nothing half-written stays (a pack left empty is removed), and thrown.
   */
  async append(records: readonly PackRecord[]): Promise<void> {
    await this.#indexed();
    const parts: Uint8Array[] = [];
    const placed: { hex: string; at: number; length: number }[] = [];
    let at = 0;
    for (const { hex, bytes } of records) {
      const header = Buffer.from(packHeader(hex, bytes.length), 'latin1');
      parts.push(header, bytes, Buffer.of(NEWLINE));
      placed.push({ hex, at: at + header.length, length: bytes.length });
      at += header.length + bytes.length + 1;
    }
    const whole = Buffer.concat(parts);
    const { handle, stat } = await this.#openForAppend();
    const size = stat.size;
    let failed = false;
    try {
      // Another file than the one indexed (the pack or its dir was removed): the old records are gone.
      if (stat.ino !== this.#ino) this.#index.clear();
      this.#ino = stat.ino;
      // A short write (a disk filling up) goes on with the rest, which says why it cannot (ENOSPC).
      for (let written = 0; written < whole.length;) {
        const { bytesWritten } = await handle.write(whole, written, whole.length - written);
        if (bytesWritten === 0) throw new Error(`only ${written} of ${whole.length} bytes written`);
        written += bytesWritten;
      }
      for (const p of placed) this.#index.set(p.hex, { offset: size + p.at, length: p.length });
    } catch (err) {
      failed = true;
      await handle.truncate(size).catch(() => undefined);
      throw err;
    } finally {
      await handle.close();
      if (failed && size === 0) await unlink(this.path).catch(() => undefined);
    }
  }

  /** The index, read on the first use. */
  #indexed(): Promise<void> {
    return (this.#scanned ??= this.#scan());
  }

  /** Reads every record header once: the index of what the pack holds when this process first looks. */
  async #scan(): Promise<void> {
    const opened = await this.#open();
    if (!opened) return;
    const { handle, ino, size } = opened;
    try {
      this.#ino = ino;
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
            this.#index.set(head[1]!, { offset, length: Number(head[2]) });
            pos = end + 1;
            continue;
          }
        }
        // No record starts here (a torn write, bytes changed): on from the next record's start, if any.
        const next = await window.find(MAGIC, pos + 1);
        if (next === undefined) break;
        pos = next;
      }
    } finally {
      await handle.close();
    }
  }

  /** The pack opened to read with its inode and size, or undefined when it is not there; a pack that is no regular file is refused. */
  async #open(): Promise<{ handle: FileHandle; ino: number; size: number } | undefined> {
    let handle: FileHandle;
    try {
      handle = await open(this.path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW | constants.O_NOCTTY);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
    const stat = await handle.stat();
    const kind = notRegularKind(stat);
    if (kind === undefined) return { handle, ino: stat.ino, size: stat.size };
    await handle.close();
    throw new Error(`${this.path} is ${kind}, not a regular file`);
  }

  /** The pack opened to append, made (and its dir) when it is not there, with its stat as opened. */
  async #openForAppend(): Promise<{ handle: FileHandle; stat: Stats }> {
    const flags = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NONBLOCK | constants.O_NOFOLLOW | constants.O_NOCTTY;
    let handle: FileHandle;
    try {
      handle = await open(this.path, flags, 0o666);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      await mkdir(this.dir, { recursive: true });
      handle = await open(this.path, flags, 0o666);
    }
    const stat = await handle.stat();
    const kind = notRegularKind(stat);
    if (kind === undefined) return { handle, stat };
    await handle.close();
    throw new Error(`${this.path} is ${kind}, not a regular file`);
  }

  #lost(): undefined {
    this.#index.clear();
    this.#ino = undefined;
    return undefined;
  }
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

const packs = new Map<string, ArchivePack>();

/** The pack of `dir`, one per process. */
export function packOf(dir: string): ArchivePack {
  let pack = packs.get(dir);
  if (!pack) packs.set(dir, (pack = new ArchivePack(dir)));
  return pack;
}
