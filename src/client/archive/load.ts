// A module's templates (DESIGN §4, §7.1): from the cache by digest, or fetched by ref, checked
// against the digest, cached, and unpacked. Fetching is client/archive/fetch.ts, unpacking module/untar.ts.
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { fail, type Parsed } from '../../shared/base/result.ts';
import type { Logger } from '../../shared/cli/log.ts';
import { fetchSource, parseRef, type ObjectFetcher } from './fetch.ts';
import { readFileWithin } from '../../module/read-file.ts';
import { DEFAULT_ARCHIVE_LIMITS, type ArchiveLimits } from '../../module/archive-limits.ts';
import { unpackArchive } from '../../module/untar.ts';
import { errorText } from '../../shared/base/errors.ts';

export { natsObjectFetcher, type ObjectFetcher } from './fetch.ts';
export { DEFAULT_ARCHIVE_LIMITS, type ArchiveLimits } from '../../module/archive-limits.ts';

/** Where to keep archives and how to fetch and bound them. */
export type LoadArchiveOptions = {
  /** The cache directory: `<cacheDir>/sha256-<hex>` holds the archive's bytes as fetched. */
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
  const path = join(opts.cacheDir, `sha256-${hex}`);
  const cached = (await mayBeCached(opts.cacheDir, `sha256-${hex}`)) ? await readCached(ref, path, hex, limits.maxArchiveBytes, opts.log) : undefined;
  if (cached) return cached;
  const fetched = await fetchSource(source.value, opts.fetchObject, limits.maxArchiveBytes, opts.archiveDir);
  if (!fetched.ok) return fetched;
  const got = sha256Hex(fetched.value);
  if (got !== hex) return fail(`digest mismatch: wants sha256:${hex}, got sha256:${got}`);
  opts.log?.info(`archive ${ref}: fetched ${fetched.value.length} bytes, sha256:${hex}`);
  await writeCache(ref, opts.cacheDir, path, fetched.value, opts.log);
  return fetched;
}

/** The cached bytes when they hash to the digest; undefined when they must be fetched. */
async function readCached(ref: string, path: string, hex: string, maxBytes: number, log: Logger | undefined): Promise<Parsed<Uint8Array> | undefined> {
  let bytes: Uint8Array;
  try {
    bytes = await readFileWithin(path, maxBytes);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT')
      log?.warn(`archive ${ref}: cache ${path} unreadable, fetching again: ${errorText(err, { cause: true })}`);
    return undefined;
  }
  // Same bytes as any fetch by this digest would give, so the limit refuses them here just the same.
  if (bytes.length > maxBytes) return fail(`larger than the archive limit of ${maxBytes} bytes`);
  const got = sha256Hex(bytes);
  if (got === hex) {
    log?.debug(`archive ${ref}: from cache ${path}`);
    return { ok: true, value: bytes };
  }
  log?.warn(`archive ${ref}: cache ${path} holds sha256:${got}, not sha256:${hex}; deleting it and fetching again`);
  await rm(path, { force: true }).catch((err: unknown) => log?.warn(`archive ${ref}: cannot delete ${path}: ${errorText(err, { cause: true })}`));
  return undefined;
}

/** How many bytes of archives may wait to be cached before a load waits for its own write. */
export const MAX_PENDING_CACHE_BYTES = 32 * 1024 * 1024;

// Cache files are written one at a time, behind the fills: on the 2-core bench machine, creating
// 1,000 files four at a time (the thread pool's way) cost about 1 s of CPU and 0.7 s of a cold
// start, one at a time off the path nothing (bench/latency.ts, MESH_BENCH_CLIENT A/B runs).
let cacheWrites: Promise<void> = Promise.resolve();
let pendingCacheBytes = 0;

/** Resolves once every cache write asked for so far is done (tests look at the cache after it). */
export function cacheWritesSettled(): Promise<void> {
  return cacheWrites;
}

/**
 * Keeps the bytes under their digest, after the writes asked before; resolves at once unless too
 * many bytes already wait. A failure is only said: the archive is still used.
 */
function writeCache(ref: string, dir: string, path: string, bytes: Uint8Array, log: Logger | undefined): Promise<void> {
  pendingCacheBytes += bytes.length;
  const written = cacheWrites.then(() => writeCacheNow(ref, dir, path, bytes, log)).finally(() => (pendingCacheBytes -= bytes.length));
  cacheWrites = written;
  return pendingCacheBytes > MAX_PENDING_CACHE_BYTES ? written : Promise.resolve();
}

async function writeCacheNow(ref: string, dir: string, path: string, bytes: Uint8Array, log: Logger | undefined): Promise<void> {
  const temp = join(dir, `.${randomBytes(6).toString('hex')}.${process.pid}.tmp`);
  try {
    await writeNewFile(dir, temp, bytes);
    await rename(temp, path);
    (await listing(dir)).add(basename(path));
  } catch (err) {
    // Whatever failed (a rename into a dir removed meanwhile), the dir is made again next time.
    madeDirs.delete(dir);
    log?.warn(`archive ${ref}: not cached at ${path}: ${errorText(err, { cause: true })}`);
    await rm(temp, { force: true }).catch(() => undefined);
  }
}

/** Writes a new file in `dir`, making `dir` again when it was removed since it was made. */
async function writeNewFile(dir: string, file: string, bytes: Uint8Array): Promise<void> {
  await ensureDir(dir);
  // No fsync: a file torn by a crash no longer hashes to its name and is fetched again.
  try {
    await writeFile(file, bytes, { flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    madeDirs.delete(dir);
    await ensureDir(dir);
    await writeFile(file, bytes, { flag: 'wx' });
  }
}

// The cache dir is made once per process, not once per archive written; a failure is tried again.
const madeDirs = new Map<string, Promise<unknown>>();
function ensureDir(dir: string): Promise<unknown> {
  let made = madeDirs.get(dir);
  if (!made) {
    made = mkdir(dir, { recursive: true });
    madeDirs.set(dir, made);
    made.catch(() => madeDirs.delete(dir));
  }
  return made;
}

// What the cache dir held when the process first looked, and what it wrote since: a cold start with
// a thousand archives does not try a thousand opens that fail. A name not listed is fetched; a
// listed one is read and checked as always (it may have gone or changed since).
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

async function mayBeCached(dir: string, name: string): Promise<boolean> {
  return (await listing(dir)).has(name);
}

function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}
