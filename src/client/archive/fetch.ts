// Fetching an archive's bytes by its ref (DESIGN §4): obj://, file:/// and https://, each stopped
// once it passes the archive limit.
import { realpath } from 'node:fs/promises';
import { isAbsolute, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Objm, type ObjectStore } from '@nats-io/obj';
import type { NatsConnection } from '@nats-io/transport-node';
import { refuseBadBucket } from '../../shared/bus/bucket-bind.ts';
import { objBucket } from '../../shared/contract/bucket-spec.ts';
import { fail, type Parsed } from '../../shared/base/result.ts';
import { directObjectReader } from './direct.ts';
import { collectWithin, NotARegularFile, readFileWithin } from '../../module/read-file.ts';
import { errorText, isTimeout } from '../../shared/base/errors.ts';
import { isStreamNotFound } from '../../shared/bus/jetstream-errors.ts';

/**
 * Fetches bytes of an obj:// reference: (bucket, name) → bytes or null when absent.
 * A fetcher may stop reading once it holds more than `maxBytes`; bytes longer than `maxBytes` are refused.
 */
export type ObjectFetcher = (bucket: string, name: string, maxBytes?: number) => Promise<Uint8Array | null>;

/** How long an https fetch may take, body included. */
export const HTTPS_TIMEOUT_MS = 30_000;

/** Where an archive's bytes are, as its ref says. */
export type Source = { scheme: 'obj'; bucket: string; name: string } | { scheme: 'file'; path: string } | { scheme: 'https'; url: string };

const OBJ_REF = /^obj:\/\/([-\w]+)\/(.+)$/s;

/** Reads a ref: `obj://<bucket>/<name>`, `file:///abs/path` or `https://…`. */
export function parseRef(ref: string): Parsed<Source> {
  if (ref.startsWith('obj://')) {
    const match = OBJ_REF.exec(ref);
    if (!match) return fail(`an obj ref is obj://<bucket>/<name>, the bucket of letters, digits, - and _`);
    return { ok: true, value: { scheme: 'obj', bucket: match[1]!, name: match[2]! } };
  }
  if (ref.startsWith('file:')) return parseFileRef(ref);
  if (ref.startsWith('https://')) {
    if (!URL.canParse(ref)) return fail('not a valid https URL');
    return { ok: true, value: { scheme: 'https', url: new URL(ref).href } };
  }
  return fail('unsupported ref scheme: wants obj://, file:/// or https://');
}

function parseFileRef(ref: string): Parsed<Source> {
  const usage = 'a file ref is file:///absolute/path';
  // Without the `//` the URL parser would still make `file:x.tar` into `/x.tar`.
  if (!ref.startsWith('file://')) return fail(usage);
  try {
    return { ok: true, value: { scheme: 'file', path: fileURLToPath(ref) } };
  } catch (err) {
    return fail(`${usage}: ${errorText(err, { cause: true })}`);
  }
}

/**
 * Fetches the bytes of a source, refusing more than `maxBytes`. A `file://` source is read only
 * under `archiveDir` (DESIGN §11): without one every `file://` ref is refused.
 */
export async function fetchSource(source: Source, fetchObject: ObjectFetcher, maxBytes: number, archiveDir?: string): Promise<Parsed<Uint8Array>> {
  switch (source.scheme) {
    case 'obj':
      return fetchFromObjectStore(source.bucket, source.name, fetchObject, maxBytes);
    case 'file':
      return readUnderArchiveDir(source.path, archiveDir, maxBytes);
    case 'https':
      return fetchHttps(source.url, maxBytes, HTTPS_TIMEOUT_MS);
  }
}

async function fetchFromObjectStore(bucket: string, name: string, fetchObject: ObjectFetcher, maxBytes: number): Promise<Parsed<Uint8Array>> {
  try {
    const bytes = await fetchObject(bucket, name, maxBytes);
    if (bytes === null) return fail(`no object ${JSON.stringify(name)} in bucket ${bucket}`);
    return withinLimit(bytes, maxBytes);
  } catch (err) {
    return fail(`object store fetch failed: ${errorText(err, { cause: true })}`);
  }
}

/** Fetches a URL (any scheme fetch takes: tests use http) within a size limit and a timeout. */
export async function fetchHttps(url: string, maxBytes: number, timeoutMs: number): Promise<Parsed<Uint8Array>> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    if (!response.ok) {
      await response.body?.cancel();
      return fail(`HTTP ${response.status} ${response.statusText}`.trim());
    }
    const declared = response.headers.get('content-length');
    if (declared !== null && Number(declared) > maxBytes) {
      await response.body?.cancel();
      return fail(`declares ${declared} bytes, past the archive limit of ${maxBytes} bytes`);
    }
    if (!response.body) return { ok: true, value: new Uint8Array(0) };
    return withinLimit(await collectWithin(response.body, maxBytes), maxBytes);
  } catch (err) {
    if (isTimeout(err)) return fail(`no complete answer within ${timeoutMs} ms`);
    return fail(`fetch failed: ${errorText(err, { cause: true })}`);
  }
}

async function readUnderArchiveDir(path: string, archiveDir: string | undefined, maxBytes: number): Promise<Parsed<Uint8Array>> {
  if (archiveDir === undefined) return fail('file:// refs are refused: this client has no --archive-dir');
  try {
    const dir = await realpath(archiveDir);
    // Links are resolved before the check: a link under the directory that leads out is out.
    const real = await realpath(resolve(path));
    const rel = relative(dir, real);
    if (rel === '' || rel.startsWith('..') || isAbsolute(rel)) return fail(`${path} is not under the archive directory ${archiveDir}`);
    return withinLimit(await readFileWithin(real, maxBytes), maxBytes);
  } catch (err) {
    if (err instanceof NotARegularFile) return fail(`${path} is ${err.kind}, not a regular file`);
    return fail(`cannot read: ${errorText(err, { cause: true })}`);
  }
}

/** Makes an ObjectFetcher on the NATS object store of a connection. */
export function natsObjectFetcher(nc: NatsConnection): ObjectFetcher {
  const objm = new Objm(nc);
  const stores = new Map<string, Promise<ObjectStore>>();
  // Opened unchecked: a node's client may read a bucket without the right to ask for its stream info.
  const open = (bucket: string) => {
    let store = stores.get(bucket);
    if (!store) {
      store = objm.open(bucket, false);
      stores.set(bucket, store);
      store.catch(() => stores.delete(bucket));
    }
    return store;
  };
  const direct = directObjectReader(nc);
  // DESIGN §3: a store holding more than its own subject is never read; checked once a process.
  const checked = new Map<string, Promise<unknown>>();
  const check = (bucket: string) => {
    let done = checked.get(bucket);
    if (!done) {
      done = refuseBadBucket(nc, objBucket(bucket));
      checked.set(bucket, done);
      done.catch(() => checked.delete(bucket));
    }
    return done;
  };
  return async (bucket, name, maxBytes = Number.POSITIVE_INFINITY) => {
    await check(bucket);
    const read = await direct(bucket, name, maxBytes);
    if (read !== undefined) return read;
    let result;
    try {
      result = await (await open(bucket)).get(name);
    } catch (err) {
      if (isStreamNotFound(err)) return null;
      throw err;
    }
    if (result === null) return null;
    // Settled whatever happens, so a failed read leaves no unhandled rejection behind.
    const failure = result.error.catch((err: unknown) => err);
    const bytes = await collectWithin(result.data, maxBytes);
    if (bytes.length > maxBytes) return bytes;
    const error = await failure;
    if (error) throw error;
    return bytes;
  };
}

function withinLimit(bytes: Uint8Array, maxBytes: number): Parsed<Uint8Array> {
  if (bytes.length > maxBytes) return fail(`larger than the archive limit of ${maxBytes} bytes`);
  return { ok: true, value: bytes };
}
