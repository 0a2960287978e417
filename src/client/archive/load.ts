// A module's templates (DESIGN §4, §7.1): from the cache by digest, or fetched by ref, checked
// against the digest, cached, and unpacked. Fetching is client/archive/fetch.ts, unpacking module/untar.ts.
import { createHash } from 'node:crypto';
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fail, type Parsed } from '../../shared/base/result.ts';
import type { Logger } from '../../shared/cli/log.ts';
import { fetchSource, parseRef, type ObjectFetcher } from './fetch.ts';
import { readFileWithin } from '../../module/read-file.ts';
import { DEFAULT_ARCHIVE_LIMITS, type ArchiveLimits } from '../../module/archive-limits.ts';
import { unpackArchive } from '../../module/untar.ts';
import { errorText } from '../../shared/base/errors.ts';
import { packOf } from './pack.ts';

export { natsObjectFetcher, type ObjectFetcher } from './fetch.ts';
export { DEFAULT_ARCHIVE_LIMITS, type ArchiveLimits } from '../../module/archive-limits.ts';

/** Where to keep archives and how to fetch and bound them. */
export type LoadArchiveOptions = {
  /** The cache directory: `<cacheDir>/archives.pack` holds the archives' bytes as fetched (client/archive/pack.ts). */
  cacheDir: string;
  /** Fetches `obj://` references. */
  fetchObject: ObjectFetcher;
  /** Size and count limits; DEFAULT_ARCHIVE_LIMITS when absent. */
  limits?: ArchiveLimits;
  /** Says cache trouble (warn) and fetches (info). */
  log?: Logger;
  /** The only directory `file://` refs are read from; absent: `file://` refused. */
  archiveDir?: string;
};

const DIGEST = /^sha256:([0-9a-fA-F]{64})$/;

/**
 * Loads a module's templates: from the cache by digest, or fetched by ref, checked against digest,
 * cached, unpacked. Errors are data: reason names the ref and what is wrong (with the limit for a size refusal).
 */
export async function loadArchive(ref: string, digest: string, opts: LoadArchiveOptions): Promise<Parsed<Map<string, Uint8Array>>> {
  const limits = opts.limits ?? DEFAULT_ARCHIVE_LIMITS;
  const bytes = await archiveBytes(ref, digest, opts, limits);
  const files = bytes.ok ? await unpackArchive(bytes.value, limits) : bytes;
  return files.ok ? files : fail(`archive ${ref}: ${files.reason}`);
}

/** The archive's bytes as fetched: from the cache, or fetched, checked and cached. */
async function archiveBytes(ref: string, digest: string, opts: LoadArchiveOptions, limits: ArchiveLimits): Promise<Parsed<Uint8Array>> {
  const wanted = DIGEST.exec(digest);
  if (!wanted) return fail(`digest ${JSON.stringify(digest)} is not sha256:<64 hex>`);
  // The ref is checked even when the digest is cached, so a bad ref fails alike on every node.
  const source = parseRef(ref);
  if (!source.ok) return source;
  const hex = wanted[1]!.toLowerCase();
  const cached =
    (await readPacked(ref, opts.cacheDir, hex, limits.maxArchiveBytes, opts.log)) ??
    (await readLegacy(ref, opts.cacheDir, hex, limits.maxArchiveBytes, opts.log));
  if (cached) return cached;
  const fetched = await fetchSource(source.value, opts.fetchObject, limits.maxArchiveBytes, opts.archiveDir);
  if (!fetched.ok) return fetched;
  const got = sha256Hex(fetched.value);
  if (got !== hex) return fail(`digest mismatch: wants sha256:${hex}, got sha256:${got}`);
  opts.log?.info(`archive ${ref}: fetched ${fetched.value.length} bytes, sha256:${hex}`);
  await writeCache(ref, opts.cacheDir, hex, fetched.value, opts.log);
  return fetched;
}

/** The bytes the pack holds for `hex` when they hash to it; undefined when they must be fetched (client/archive/pack.ts). */
async function readPacked(ref: string, dir: string, hex: string, maxBytes: number, log: Logger | undefined): Promise<Parsed<Uint8Array> | undefined> {
  const pack = packOf(dir);
  try {
    const entry = await pack.find(hex);
    if (!entry) return undefined;
    // Same bytes as any fetch by this digest would give, so the limit refuses them here just the same.
    if (entry.length > maxBytes) return fail(`larger than the archive limit of ${maxBytes} bytes`);
    const bytes = await pack.read(hex);
    if (!bytes) return undefined;
    const got = sha256Hex(bytes);
    if (got === hex) {
      troubled.delete(pack.path);
      log?.debug(`archive ${ref}: from cache ${pack.path}`);
      return { ok: true, value: bytes };
    }
    log?.warn(`archive ${ref}: cache ${pack.path} holds sha256:${got} at byte ${entry.offset}, not sha256:${hex}; dropping it and fetching again`);
  } catch (err) {
    packTrouble(pack.path, log, `archive ${ref}: cache ${pack.path} unreadable, fetching again: ${errorText(err, { cause: true })}`);
  }
  pack.forget(hex);
  return undefined;
}

/**
 * The bytes of `<dir>/sha256-<hex>`, where a client before the pack kept each archive, when they hash
 * to the digest: moved into the pack and the file removed, so an upgraded node fetches nothing again
 * and leaves no file behind. A file holding other bytes is removed, and the archive fetched.
 */
async function readLegacy(ref: string, dir: string, hex: string, maxBytes: number, log: Logger | undefined): Promise<Parsed<Uint8Array> | undefined> {
  const name = `sha256-${hex}`;
  if (!(await listing(dir)).has(name)) return undefined;
  const path = join(dir, name);
  let bytes: Uint8Array;
  try {
    bytes = await readFileWithin(path, maxBytes);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
      log?.warn(`archive ${ref}: cache ${path} unreadable, fetching again: ${errorText(err, { cause: true })}`);
    return undefined;
  }
  if (bytes.length > maxBytes) return fail(`larger than the archive limit of ${maxBytes} bytes`);
  const got = sha256Hex(bytes);
  if (got === hex) {
    log?.debug(`archive ${ref}: from cache ${path}, moved into ${packOf(dir).path}`);
    await writeCache(ref, dir, hex, bytes, log, path);
    return { ok: true, value: bytes };
  }
  log?.warn(`archive ${ref}: cache ${path} holds sha256:${got}, not sha256:${hex}; deleting it and fetching again`);
  await rm(path, { force: true }).catch((err: unknown) => log?.warn(`archive ${ref}: cannot delete ${path}: ${errorText(err, { cause: true })}`));
  return undefined;
}

/**
 * The packs whose trouble (unreadable, not writable: the pack's, not one archive's) was said as a
 * warning: said again at debug until the pack is read or written again, or a cold start of a thousand
 * archives on a pack it may not open would warn two thousand times.
 */
const troubled = new Set<string>();

function packTrouble(path: string, log: Logger | undefined, line: string): void {
  if (troubled.has(path)) return log?.debug(line);
  troubled.add(path);
  log?.warn(`${line} (this cache's trouble is said at debug from now on, until it reads or writes again)`);
}

/** How many bytes of archives may wait to be cached before a load waits for its own write. */
export const MAX_PENDING_CACHE_BYTES = 32 * 1024 * 1024;

/** The most bytes one append takes of the archives waiting. */
const MAX_APPEND_BYTES = 8 * 1024 * 1024;

// Archives are appended to the pack behind the fills, those waiting in one write, one write at a
// time: on the 2-core bench machine, a file an archive made four at a time cost about 1 s of CPU and
// 0.7 s of a cold start of 1,000 archives, one at a time behind the fills 0.6 s of CPU after it,
// one append of those waiting a few milliseconds (docs/scale.md).
type Waiting = { ref: string; dir: string; hex: string; bytes: Uint8Array; log: Logger | undefined; legacy?: string; done(): void };
let waiting: Waiting[] = [];
let cacheWrites: Promise<void> = Promise.resolve();
let draining = false;
let pendingCacheBytes = 0;

/** Resolves once every cache write asked for so far is done (tests look at the cache after it). */
export function cacheWritesSettled(): Promise<void> {
  return cacheWrites;
}

/**
 * Keeps the bytes in the pack under their digest, after the writes asked before (and then removes
 * `legacy`, the file they were read from); resolves at once unless too many bytes already wait. A
 * failure is only said: the archive is still used.
 */
function writeCache(ref: string, dir: string, hex: string, bytes: Uint8Array, log: Logger | undefined, legacy?: string): Promise<void> {
  pendingCacheBytes += bytes.length;
  const written = new Promise<void>((done) => waiting.push({ ref, dir, hex, bytes, log, ...(legacy ? { legacy } : {}), done }));
  cacheWrites = cacheWrites.then(() => written);
  if (!draining) {
    draining = true;
    setImmediate(() => void drain());
  }
  return pendingCacheBytes > MAX_PENDING_CACHE_BYTES ? written : Promise.resolve();
}

/** Appends what waits, a dir's archives at a time and MAX_APPEND_BYTES at most in one write, until nothing does. */
async function drain(): Promise<void> {
  while (waiting.length > 0) {
    // The first waiting's dir (a client has one), in the order asked, MAX_APPEND_BYTES at most (one archive at least).
    const dir = waiting[0]!.dir;
    const batch: Waiting[] = [];
    let bytes = 0;
    for (const w of waiting) {
      if (w.dir !== dir) continue;
      if (batch.length > 0 && bytes + w.bytes.length > MAX_APPEND_BYTES) break;
      batch.push(w);
      bytes += w.bytes.length;
    }
    const taken = new Set(batch);
    waiting = waiting.filter((w) => !taken.has(w));
    const pack = packOf(dir);
    try {
      await pack.append(batch.map((w) => ({ hex: w.hex, bytes: w.bytes })));
      troubled.delete(pack.path);
      for (const w of batch) if (w.legacy) await rm(w.legacy, { force: true }).catch(() => undefined);
    } catch (err) {
      for (const w of batch) packTrouble(pack.path, w.log, `archive ${w.ref}: not cached at ${pack.path}: ${errorText(err, { cause: true })}`);
    }
    for (const w of batch) {
      pendingCacheBytes -= w.bytes.length;
      w.done();
    }
  }
  draining = false;
}

/**
 * Keeps in `dir`'s pack only the archives of `digests` (`sha256:<hex>`, those the node's plans name)
 * once the others take more room than they and at least COMPACT_MIN_DEAD_BYTES (client/archive/pack.ts):
 * a pack that only grew would keep every build a node ever had. After the writes asked before; a
 * failure is said, and the pack left as it was.
 */
export function keepArchives(dir: string, digests: Iterable<string>, log: Logger | undefined): Promise<void> {
  const keep = new Set<string>();
  for (const digest of digests) {
    const hex = DIGEST.exec(digest)?.[1];
    if (hex) keep.add(hex.toLowerCase());
  }
  const pack = packOf(dir);
  return pack.compact(keep).then(
    (freed) => {
      if (freed === 0) return;
      troubled.delete(pack.path);
      log?.info(`archive cache ${pack.path}: compacted to the ${keep.size} archive(s) in use, ${freed} bytes freed`);
    },
    (err: unknown) => packTrouble(pack.path, log, `archive cache ${pack.path}: not compacted: ${errorText(err, { cause: true })}`),
  );
}

// The legacy files the cache dir held when the process first looked: a cold start with a thousand
// archives does not try a thousand opens that fail.
const listings = new Map<string, Promise<Set<string>>>();
function listing(dir: string): Promise<Set<string>> {
  let names = listings.get(dir);
  if (!names) {
    names = readdir(dir).then(
      (list) => new Set(list),
      () => new Set<string>(),
    );
    listings.set(dir, names);
  }
  return names;
}

function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}
