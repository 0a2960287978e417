// The archive cache as one file (DESIGN §7 point 1: a cached archive is not fetched again):
// `<cacheDir>/archives.pack`, records appended one after another (client/archive/pack-records.ts).
// Making a file costs this project's bench machine (a VM on ext4) 0.8–0.9 ms of CPU, 0.6–0.7 in the
// kernel: a file an archive cost a cold start of 1,000 modules 0.6 s of CPU behind its last report,
// where one append of the archives waiting costs a few milliseconds (docs/scale.md, issue 34).
//
// Nothing read here is trusted: the index says where a digest's bytes should be, and the caller
// hashes what it reads (client/archive/load.ts). So a record torn by a crash or a full disk, bytes
// changed on disk, or a second client appending to the same pack cost a fetch again, never a fill
// from wrong bytes. The scan skips what is not a record to the next record's start.
import { constants } from 'node:fs';
import { open, rename, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { PackReader } from './pack-reader.ts';
import { copyRecords, openToAppend, openToRead, recordBytes, recordsOf, scanRecords, writeAll, type PackEntry, type PackRecord } from './pack-records.ts';

export type { PackEntry, PackRecord } from './pack-records.ts';

/** The pack's name in the cache dir. */
export const PACK_NAME = 'archives.pack';
/** Where a compaction writes the pack anew before renaming it over the old one. */
export const PACK_COMPACTING_NAME = 'archives.pack.compacting';
/**
 * A pack is written anew with only the archives in use once the others take at least this many bytes
 * and more than those in use: each compaction at least halves it, so the bytes copied stay below
 * the bytes appended.
 */
export const COMPACT_MIN_DEAD_BYTES = 8 * 1024 * 1024;

/** One pack, indexed once per process on its first use; its appends and reads. */
export class ArchivePack {
  readonly path: string;
  readonly #index = new Map<string, PackEntry>();
  /** The inode the index describes: another file under the pack's name (a removed dir or pack) has none of its records. */
  #ino: number | undefined;
  #scanned: Promise<void> | undefined;
  /** Whether the index was read (its size then known). */
  #read = false;
  /** The pack's size as this process last wrote or scanned it. */
  #size = 0;
  /** Appends and compactions, one at a time. */
  #writing: Promise<unknown> = Promise.resolve();
  /** Reads running; a compaction waits until none is, and reads asked meanwhile wait for it. */
  #readers = 0;
  #noReaders: (() => void) | undefined;
  #compacting: Promise<void> | undefined;

  readonly #reader: PackReader;

  constructor(readonly dir: string) {
    this.path = join(dir, PACK_NAME);
    this.#reader = new PackReader(this.path);
  }

  /** Where `hex`'s bytes are said to be, or undefined when the pack holds no record of it. */
  async find(hex: string): Promise<PackEntry | undefined> {
    await this.#indexed();
    return this.#index.get(hex);
  }

  /**
   * The bytes of `hex`'s record (fewer when the pack was cut short), or undefined when the pack holds
   * none any more, is gone, or is another file than the one indexed: then no record of the index is there.
   */
  async read(hex: string): Promise<Uint8Array | undefined> {
    while (this.#compacting) await this.#compacting;
    this.#readers++;
    try {
      const entry = this.#index.get(hex);
      if (!entry) return undefined;
      const forIno = this.#ino;
      return await this.#reader.use(forIno, async (opened) => {
        // The pack gone, or another file than the one indexed: no record of the index is there.
        if (!opened || opened.ino !== forIno) return this.#lost();
        const bytes = Buffer.alloc(entry.length);
        const { bytesRead } = await opened.handle.read(bytes, 0, entry.length, entry.offset);
        return bytes.subarray(0, bytesRead);
      });
    } finally {
      if (--this.#readers === 0) this.#noReaders?.();
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
  append(records: readonly PackRecord[]): Promise<void> {
    return this.#exclusive(() => this.#append(records));
  }

  /**
   * Writes the pack anew with only the records of `keep` (digests' hex) when the others take at least
   * COMPACT_MIN_DEAD_BYTES and more than those kept: beside it, synced, then renamed over it, so a crash
   * leaves the old pack or the new one whole. The records are copied as they are (every read is still
   * checked against its digest). Resolves with the bytes freed, 0 when it was not worth it.
   */
  compact(keep: ReadonlySet<string>): Promise<number> {
    // A pack read and smaller than the bound cannot hold that much dead: nothing to walk (a plan change each).
    if (this.#read && this.#size < COMPACT_MIN_DEAD_BYTES) return Promise.resolve(0);
    return this.#exclusive(() => this.#compact(keep));
  }

  #exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#writing.then(fn, fn);
    this.#writing = run.catch(() => undefined);
    return run;
  }

  async #compact(keep: ReadonlySet<string>): Promise<number> {
    await this.#indexed();
    const kept = [...this.#index].filter(([hex]) => keep.has(hex)).sort((a, b) => a[1].offset - b[1].offset);
    const live = kept.reduce((n, [hex, e]) => n + recordBytes(hex, e), 0);
    const dead = this.#size - live;
    if (dead < COMPACT_MIN_DEAD_BYTES || dead <= live) return 0;
    let done!: () => void;
    this.#compacting = new Promise((resolve) => (done = resolve));
    try {
      while (this.#readers > 0) await new Promise<void>((resolve) => (this.#noReaders = resolve));
      this.#noReaders = undefined;
      this.#reader.close();
      return await this.#rewrite(kept, this.#size);
    } finally {
      this.#compacting = undefined;
      done();
    }
  }

  /** Copies `kept` into a new pack and renames it over this one; the index then names the new file. */
  async #rewrite(kept: [string, PackEntry][], before: number): Promise<number> {
    const opened = await openToRead(this.path);
    if (!opened) return (this.#lost(), 0);
    const tmp = join(this.dir, PACK_COMPACTING_NAME);
    const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW | constants.O_NOCTTY;
    let out: FileHandle | undefined;
    try {
      if (opened.ino !== this.#ino) return (this.#lost(), 0);
      out = await open(tmp, flags, 0o666);
      const { index, size } = await copyRecords(opened.handle, kept, out);
      await out.datasync();
      const ino = (await out.stat()).ino;
      await out.close();
      out = undefined;
      await rename(tmp, this.path);
      this.#index.clear();
      for (const [hex, e] of index) this.#index.set(hex, e);
      this.#ino = ino;
      this.#size = size;
      return before - size;
    } catch (err) {
      await out?.close().catch(() => undefined);
      await unlink(tmp).catch(() => undefined);
      throw err;
    } finally {
      await opened.handle.close();
    }
  }

  async #append(records: readonly PackRecord[]): Promise<void> {
    await this.#indexed();
    const { whole, placed } = recordsOf(records);
    const { handle, stat } = await openToAppend(this.path, this.dir);
    const size = stat.size;
    let failed = false;
    try {
      // Another file than the one indexed (the pack or its dir was removed): the old records are gone.
      if (stat.ino !== this.#ino) this.#index.clear();
      this.#ino = stat.ino;
      await writeAll(handle, whole);
      for (const p of placed) this.#index.set(p.hex, { offset: size + p.at, length: p.length });
      this.#size = size + whole.length;
    } catch (err) {
      failed = true;
      await handle.truncate(size).catch(() => undefined);
      throw err;
    } finally {
      await handle.close();
      if (failed && size === 0) await unlink(this.path).catch(() => undefined);
    }
  }

  /** The index, read on the first use; a read that failed (a pack it may not open) is tried again by the next use. */
  #indexed(): Promise<void> {
    return (this.#scanned ??= this.#scan().then(
      () => void (this.#read = true),
      (err: unknown) => {
        this.#scanned = undefined;
        throw err;
      },
    ));
  }

  /** Reads every record header once: the index of what the pack holds when this process first looks. */
  async #scan(): Promise<void> {
    // What a compaction cut short by a crash left beside the pack: never renamed, so never the pack.
    await unlink(join(this.dir, PACK_COMPACTING_NAME)).catch(() => undefined);
    const opened = await openToRead(this.path);
    if (!opened) return;
    const { handle, ino, size } = opened;
    try {
      this.#ino = ino;
      this.#size = size;
      for (const [hex, entry] of await scanRecords(handle, size)) this.#index.set(hex, entry);
    } finally {
      await handle.close();
    }
  }

  #lost(): undefined {
    this.#index.clear();
    this.#ino = undefined;
    this.#size = 0;
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
