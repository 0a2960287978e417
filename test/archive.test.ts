// Module archives (DESIGN §4 refs, §7.1): fetched by ref, checked against the digest, cached by
// digest, and unpacked with hostile or oversized entries refused.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createHash, randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import { packTar, type TarEntry, type TarHeader } from 'modern-tar';
import { jetstream } from '@nats-io/jetstream';
import { Objm } from '@nats-io/obj';
import { connect } from '@nats-io/transport-node';
import type { Parsed } from '../src/shared/base/result.ts';
import { memoryLogger } from '../src/shared/cli/log.ts';
import {
  cacheWritesSettled,
  DEFAULT_ARCHIVE_LIMITS,
  keepArchives,
  loadArchive,
  natsObjectFetcher,
  type ArchiveLimits,
  type ObjectFetcher,
} from '../src/client/archive/load.ts';
import { fetchHttps } from '../src/client/archive/fetch.ts';
import { startNats } from './helpers/nats.ts';
import { packedBytes, packFile, packRecords, rewriteRecord } from './helpers/pack.ts';
import { COMPACT_MIN_DEAD_BYTES, PACK_COMPACTING_NAME, PACK_NAME } from '../src/client/archive/pack.ts';
import { IDLE_CLOSE_MS } from '../src/client/archive/pack-reader.ts';
import { tempDir as newTempDir } from './helpers/temp.ts';
import { waitFor } from './helpers/wait.ts';

const utf8 = new TextEncoder();
const REF = 'obj://archives/a.tar';
const temps: string[] = [];

function tempDir(): string {
  const dir = newTempDir('mesh-archive-');
  temps.push(dir);
  return dir;
}

function digestOf(bytes: Uint8Array): string {
  return 'sha256:' + createHash('sha256').update(bytes).digest('hex');
}

function file(name: string, content: string | Uint8Array): TarEntry {
  const body = typeof content === 'string' ? utf8.encode(content) : content;
  return { header: { name, size: body.length, type: 'file' }, body };
}

function special(name: string, type: NonNullable<TarHeader['type']>, linkname?: string): TarEntry {
  return { header: { name, size: 0, type, ...(linkname ? { linkname } : {}) } };
}

/** A fetcher serving `objects` by `<bucket>/<name>` and recording each call. */
function memoryFetcher(objects: Record<string, Uint8Array>) {
  const calls: { key: string; maxBytes: number | undefined }[] = [];
  const fetch: ObjectFetcher = async (bucket, name, maxBytes) => {
    calls.push({ key: `${bucket}/${name}`, maxBytes });
    return objects[`${bucket}/${name}`] ?? null;
  };
  return { fetch, calls };
}

/** Fails the test; typed `never` so it ends a branch. */
function fails(message: string): never {
  assert.unreachable(message);
  throw new Error(message);
}

const neverFetch: ObjectFetcher = async () => fails('fetched');

/** Loads `bytes` as obj://archives/a.tar, with its own digest, into a fresh cache. */
function loadBytes(bytes: Uint8Array, limits?: ArchiveLimits) {
  const { fetch } = memoryFetcher({ 'archives/a.tar': bytes });
  return loadArchive(REF, digestOf(bytes), { cacheDir: tempDir(), fetchObject: fetch, ...(limits ? { limits } : {}) });
}

function textFiles(result: Parsed<Map<string, Uint8Array>>): Record<string, string> {
  if (!result.ok) fails(result.reason);
  return Object.fromEntries([...result.value].map(([name, bytes]) => [name, Buffer.from(bytes).toString('utf8')]));
}

function reasonOf(result: Parsed<unknown>): string {
  if (result.ok) fails('loaded, but should have been refused');
  return result.reason;
}

function limitsWith(change: Partial<ArchiveLimits>): ArchiveLimits {
  return { ...DEFAULT_ARCHIVE_LIMITS, ...change };
}

const WEB_ENTRIES = [
  special('./', 'directory'),
  special('./conf/', 'directory'),
  file('./conf/web.conf', 'port=${port:http}\n'),
  file('web.zsh', 'alias w=web\n'),
  file('empty', ''),
];
const WEB_FILES = { 'conf/web.conf': 'port=${port:http}\n', 'web.zsh': 'alias w=web\n', empty: '' };

test.after(() => {
  for (const dir of temps) rmSync(dir, { recursive: true, force: true });
});

test('a plain tar loads as its regular files by normalised name, directories skipped', async () => {
  assert.equal(textFiles(await loadBytes(await packTar(WEB_ENTRIES))), WEB_FILES);
});

test('a gzip-compressed tar is recognised by its bytes, whatever its name, and loads the same files', async () => {
  const gz = gzipSync(await packTar(WEB_ENTRIES));
  assert.equal(textFiles(await loadBytes(gz)), WEB_FILES);
});

test('a file:/// ref is read under --archive-dir; a missing file fails naming the ref', async () => {
  const archiveDir = tempDir();
  const path = join(archiveDir, 'web 1.tar.gz');
  const gz = gzipSync(await packTar(WEB_ENTRIES));
  writeFileSync(path, gz);
  const ref = pathToFileURL(path).href;
  const loaded = await loadArchive(ref, digestOf(gz), { cacheDir: tempDir(), fetchObject: neverFetch, archiveDir });
  assert.equal(textFiles(loaded), WEB_FILES);
  const missing = reasonOf(await loadArchive(ref + '.gone', digestOf(gz), { cacheDir: tempDir(), fetchObject: neverFetch, archiveDir }));
  assert.ok(missing.startsWith(`archive ${ref}.gone: cannot read: ENOENT`), missing);
});

test('a file:/// ref is refused without --archive-dir, outside it, through a link out of it, and when not a regular file; no digest of it is said', async () => {
  const archiveDir = tempDir();
  const outside = join(tempDir(), 'secret.txt');
  writeFileSync(outside, 'a file of the node');
  symlinkSync(outside, join(archiveDir, 'link.tar'));
  const fifo = join(archiveDir, 'pipe.tar');
  execFileSync('mkfifo', [fifo]);
  const digest = digestOf(utf8.encode('x'));
  const load = (path: string, dir?: string) =>
    loadArchive(pathToFileURL(path).href, digest, { cacheDir: tempDir(), fetchObject: neverFetch, ...(dir ? { archiveDir: dir } : {}) });
  const started = Date.now();
  const reasons = [
    reasonOf(await load(outside)),
    reasonOf(await load(outside, archiveDir)),
    reasonOf(await load(join(archiveDir, 'link.tar'), archiveDir)),
    reasonOf(await load(fifo, archiveDir)),
    reasonOf(await load(archiveDir + '/', archiveDir)),
  ];
  assert.ok(Date.now() - started < 5000, 'a FIFO is never waited on');
  assert.match(reasons[0]!, /file:\/\/ refs are refused: this client has no --archive-dir/);
  assert.match(reasons[1]!, /is not under the archive directory/);
  assert.match(reasons[2]!, /is not under the archive directory/);
  assert.match(reasons[3]!, /pipe\.tar is a FIFO, not a regular file/);
  const outsideDigest = createHash('sha256').update('a file of the node').digest('hex');
  for (const reason of reasons) assert.not.ok(reason.includes(outsideDigest), reason);
});

test('an obj:// archive comes from the NATS object store, then from the cache once the server is stopped', async () => {
  const server = await startNats();
  const nc = await connect({ servers: server.url, maxReconnectAttempts: 0 });
  try {
    const content = randomBytes(300_000); // incompressible: several object-store chunks
    const gz = gzipSync(await packTar([file('web.conf', content)]));
    const store = await new Objm(jetstream(nc)).create('mesh-catalog_archives');
    await store.putBlob({ name: 'web-1.tar.gz' }, gz);
    const fetcher = natsObjectFetcher(nc);
    let fetches = 0;
    const counting: ObjectFetcher = (bucket, name, maxBytes) => ((fetches += 1), fetcher(bucket, name, maxBytes));
    const cacheDir = join(tempDir(), 'not', 'yet', 'there');
    const ref = 'obj://mesh-catalog_archives/web-1.tar.gz';

    const first = await loadArchive(ref, digestOf(gz), { cacheDir, fetchObject: counting });
    if (!first.ok) fails(first.reason);
    assert.equal(Buffer.compare(Buffer.from(first.value.get('web.conf')!), content), 0);
    await cacheWritesSettled();
    assert.equal(readdirSync(cacheDir), [PACK_NAME], 'one pack, nothing else');
    assert.equal(Buffer.compare(packedBytes(cacheDir, digestOf(gz))!, gz), 0);

    await server.stop();
    const second = await loadArchive(ref, digestOf(gz), { cacheDir, fetchObject: counting });
    if (!second.ok) fails(second.reason);
    assert.equal(Buffer.compare(Buffer.from(second.value.get('web.conf')!), content), 0);
    assert.is(fetches, 1);
  } finally {
    await nc.close();
    await server.cleanup();
  }
});

test('the NATS fetcher answers null for a missing object or bucket and stops reading past the limit', async () => {
  const server = await startNats();
  const nc = await connect({ servers: server.url });
  try {
    const big = randomBytes(600_000);
    const store = await new Objm(jetstream(nc)).create('mesh-catalog_archives');
    await store.putBlob({ name: 'big' }, big);
    const fetcher = natsObjectFetcher(nc);
    assert.is(await fetcher('mesh-catalog_archives', 'absent'), null);
    assert.is(await fetcher('no-such-bucket', 'big'), null);
    const partial = await fetcher('mesh-catalog_archives', 'big', 1000);
    assert.ok(partial !== null && partial.length > 1000 && partial.length < big.length, `read ${partial?.length} bytes`);
    const reason = reasonOf(await loadArchive('obj://mesh-catalog_archives/absent', digestOf(big), { cacheDir: tempDir(), fetchObject: fetcher }));
    assert.is(reason, 'archive obj://mesh-catalog_archives/absent: no object "absent" in bucket mesh-catalog_archives');
  } finally {
    await nc.close();
    await server.cleanup();
  }
});

test('a cached archive is used without fetching, and the cache holds exactly the fetched bytes', async () => {
  const gz = gzipSync(await packTar(WEB_ENTRIES));
  const { fetch, calls } = memoryFetcher({ 'archives/a.tar': gz });
  const cacheDir = tempDir();
  for (let i = 0; i < 3; i++) {
    assert.equal(textFiles(await loadArchive(REF, digestOf(gz), { cacheDir, fetchObject: fetch })), WEB_FILES);
    await cacheWritesSettled();
  }
  assert.is(calls.length, 1);
  assert.equal(
    packRecords(cacheDir).map((r) => [r.hex, Buffer.compare(r.bytes, gz)]),
    [[digestOf(gz).slice(7), 0]],
    'one record, the fetched bytes',
  );
});

test('fetched bytes that do not hash to the digest are refused and nothing is cached', async () => {
  const tar = await packTar(WEB_ENTRIES);
  const wanted = digestOf(utf8.encode('another build'));
  const { fetch } = memoryFetcher({ 'archives/a.tar': tar });
  const cacheDir = tempDir();
  const reason = reasonOf(await loadArchive(REF, wanted, { cacheDir, fetchObject: fetch }));
  assert.is(reason, `archive ${REF}: digest mismatch: wants ${wanted}, got ${digestOf(tar)}`);
  assert.equal(readdirSync(cacheDir), []);
});

test('a corrupted cache record is detected, said, dropped and fetched again', async () => {
  const gz = gzipSync(await packTar(WEB_ENTRIES));
  const { fetch, calls } = memoryFetcher({ 'archives/a.tar': gz });
  const cacheDir = tempDir();
  assert.ok((await loadArchive(REF, digestOf(gz), { cacheDir, fetchObject: fetch })).ok);
  await cacheWritesSettled();
  rewriteRecord(cacheDir, digestOf(gz), utf8.encode('bit rot'));
  const log = memoryLogger();
  assert.equal(textFiles(await loadArchive(REF, digestOf(gz), { cacheDir, fetchObject: fetch, log })), WEB_FILES);
  await cacheWritesSettled();
  assert.is(calls.length, 2);
  assert.equal(Buffer.compare(packedBytes(cacheDir, digestOf(gz))!, gz), 0, 'the fetched bytes appended');
  assert.ok(
    log.lines.some((line) => line.includes(' warning ') && line.includes(packFile(cacheDir)) && line.includes('fetching again')),
    log.lines.join('\n'),
  );
  // A start after it (a new process: a new pack index) reads the record appended last, and fetches nothing.
  assert.equal(textFiles(await loadArchive(REF, digestOf(gz), { cacheDir, fetchObject: fetch })), WEB_FILES);
  assert.is(calls.length, 2);
});

test('a pack with a torn record and bytes that are no record: the records after them are read, the torn one fetched again', async () => {
  const entries = [WEB_ENTRIES, [file('db.conf', 'db')], [file('mq.conf', 'mq')]];
  const archives = await Promise.all(entries.map(async (e) => gzipSync(await packTar(e))));
  const byName = Object.fromEntries(archives.map((gz, i) => [`archives/${i}.tar`, gz]));
  const { fetch, calls } = memoryFetcher(byName);
  const cacheDir = tempDir();
  for (let i = 0; i < 3; i++) assert.ok((await loadArchive(`obj://archives/${i}.tar`, digestOf(archives[i]!), { cacheDir, fetchObject: fetch })).ok);
  await cacheWritesSettled();
  // The first record's body cut short (its header still says the whole length), then garbage, then the other two whole.
  const [first, ...rest] = packRecords(cacheDir);
  const header = (r: { hex: string; bytes: Uint8Array }) => Buffer.from(`MESHARCHIVE sha256-${r.hex} ${r.bytes.length}\n`, 'latin1');
  const torn = (garbage: string) =>
    Buffer.concat([header(first!), first!.bytes.subarray(0, 10), Buffer.from(garbage), ...rest.flatMap((r) => [header(r), r.bytes, Buffer.of(0x0a)])]);
  // The torn record's length ends somewhere in the records after it; where it would end on one's
  // newline right before the next one's header (a record as good as any), a byte more of garbage moves it.
  const claimedEnd = header(first!).length + first!.bytes.length;
  const aligned = (b: Buffer) => b[claimedEnd] === 0x0a && b.subarray(claimedEnd + 1, claimedEnd + 13).toString('latin1') === 'MESHARCHIVE ';
  let garbage = 'garbage MESHARCHIVE sha256-zz\n';
  if (aligned(torn(garbage))) garbage += '-';
  writeFileSync(packFile(cacheDir), torn(garbage));
  const fresh = join(tempDir(), 'copy');
  mkdirSync(fresh);
  copyFileSync(packFile(cacheDir), packFile(fresh));
  for (let i = 0; i < 3; i++) assert.ok((await loadArchive(`obj://archives/${i}.tar`, digestOf(archives[i]!), { cacheDir: fresh, fetchObject: fetch })).ok);
  assert.equal(
    calls.slice(3).map((c) => c.key),
    ['archives/0.tar'],
    'only the torn one fetched again',
  );
});

test('an archive a client before the pack cached as sha256-<hex> is read without a fetch, moved into the pack, and its file removed; a file with other bytes is removed and fetched', async () => {
  const gz = gzipSync(await packTar(WEB_ENTRIES));
  const other = gzipSync(await packTar([file('db.conf', 'db')]));
  const { fetch, calls } = memoryFetcher({ 'archives/a.tar': gz, 'archives/b.tar': other });
  const cacheDir = tempDir();
  writeFileSync(join(cacheDir, `sha256-${digestOf(gz).slice(7)}`), gz);
  writeFileSync(join(cacheDir, `sha256-${digestOf(other).slice(7)}`), 'bit rot');
  const log = memoryLogger();
  assert.equal(textFiles(await loadArchive(REF, digestOf(gz), { cacheDir, fetchObject: fetch, log })), WEB_FILES);
  assert.ok((await loadArchive('obj://archives/b.tar', digestOf(other), { cacheDir, fetchObject: fetch, log })).ok);
  await cacheWritesSettled();
  assert.equal(
    calls.map((c) => c.key),
    ['archives/b.tar'],
    'the good file read, the bad one fetched',
  );
  assert.equal(readdirSync(cacheDir), [PACK_NAME], 'both files gone');
  assert.equal(
    packRecords(cacheDir).map((r) => r.hex),
    [digestOf(gz).slice(7), digestOf(other).slice(7)],
  );
  assert.ok(
    log.lines.some((l) => l.includes(' warning ') && l.includes(`sha256-${digestOf(other).slice(7)} holds sha256:`)),
    log.lines.join('\n'),
  );
});

test('a cache dir removed after a write is made again by the next write, which caches the archive', async () => {
  const gz = gzipSync(await packTar(WEB_ENTRIES));
  const { fetch, calls } = memoryFetcher({ 'archives/a.tar': gz });
  const cacheDir = join(tempDir(), 'cache');
  assert.ok((await loadArchive(REF, digestOf(gz), { cacheDir, fetchObject: fetch })).ok);
  await cacheWritesSettled();
  rmSync(cacheDir, { recursive: true });
  const log = memoryLogger();
  assert.equal(textFiles(await loadArchive(REF, digestOf(gz), { cacheDir, fetchObject: fetch, log })), WEB_FILES);
  await cacheWritesSettled();
  assert.is(calls.length, 2);
  assert.equal(Buffer.compare(packedBytes(cacheDir, digestOf(gz))!, gz), 0);
  assert.not.ok(
    log.lines.some((line) => line.includes(' warning ')),
    log.lines.join('\n'),
  );
});

/** A pack record of `bytes` under `hex`, as the pack writes one. */
function record(hex: string, bytes: Uint8Array): Buffer {
  return Buffer.concat([Buffer.from(`MESHARCHIVE sha256-${hex} ${bytes.length}\n`, 'latin1'), bytes, Buffer.of(0x0a)]);
}

/** `count` small archives, their fetcher, and a fresh cache dir whose pack holds a record of `deadBytes` no plan names, then theirs. */
async function packWithDead(count: number, deadBytes: number) {
  const archives = await Promise.all(Array.from({ length: count }, async (_, i) => gzipSync(await packTar([file(`f${i}.conf`, `file ${i}\n`)]))));
  const { fetch, calls } = memoryFetcher(Object.fromEntries(archives.map((gz, i) => [`archives/${i}.tar`, gz])));
  const cacheDir = tempDir();
  const dead = randomBytes(deadBytes);
  writeFileSync(packFile(cacheDir), Buffer.concat([record(digestOf(dead).slice(7), dead), ...archives.map((gz) => record(digestOf(gz).slice(7), gz))]));
  const load = (i: number) => loadArchive(`obj://archives/${i}.tar`, digestOf(archives[i]!), { cacheDir, fetchObject: fetch });
  return { archives, calls, cacheDir, load, digests: archives.map((gz) => digestOf(gz)) };
}

test('a pack whose archives no plan names take more than the rest and at least COMPACT_MIN_DEAD_BYTES is written anew with the rest only, read without a fetch', async () => {
  const { archives, calls, cacheDir, load, digests } = await packWithDead(3, COMPACT_MIN_DEAD_BYTES + 1);
  const before = readFileSync(packFile(cacheDir)).length;
  const log = memoryLogger();
  await keepArchives(cacheDir, digests.slice(0, 2), log);
  assert.equal(
    packRecords(cacheDir).map((r) => r.hex),
    digests.slice(0, 2).map((d) => d.slice(7)),
    'the two named kept, in order; the third and the dead one gone',
  );
  const after = readFileSync(packFile(cacheDir)).length;
  assert.ok(
    log.lines.some((l) => l.includes(`compacted to the 2 archive(s) in use, ${before - after} bytes freed`)),
    log.lines.join('\n'),
  );
  assert.equal(readdirSync(cacheDir), [PACK_NAME], 'nothing left beside it');
  for (const i of [0, 1]) assert.equal(Buffer.compare(packedBytes(cacheDir, digests[i]!)!, archives[i]!), 0);
  for (const i of [0, 1]) assert.ok((await load(i)).ok);
  assert.equal(calls, [], 'the kept ones read from the new pack');
  assert.ok((await load(2)).ok);
  await cacheWritesSettled();
  assert.equal(
    calls.map((c) => c.key),
    ['archives/2.tar'],
    'the dropped one fetched when used again, and appended',
  );
  assert.equal(packRecords(cacheDir).length, 3);
});

test('a pack is left as it is while what no plan names is under COMPACT_MIN_DEAD_BYTES, or no more than what is named', async () => {
  const small = await packWithDead(2, 1024);
  const bytes = readFileSync(packFile(small.cacheDir));
  await keepArchives(small.cacheDir, small.digests.slice(0, 1), memoryLogger());
  assert.equal(Buffer.compare(readFileSync(packFile(small.cacheDir)), bytes), 0, 'a small dead part stays');
  // The dead record past the bound, but the named ones larger still.
  const big = gzipSync(randomBytes(COMPACT_MIN_DEAD_BYTES + 4096));
  const dead = randomBytes(COMPACT_MIN_DEAD_BYTES + 1);
  const cacheDir = tempDir();
  const whole = Buffer.concat([record(digestOf(dead).slice(7), dead), record(digestOf(big).slice(7), big)]);
  writeFileSync(packFile(cacheDir), whole);
  await keepArchives(cacheDir, [digestOf(big)], memoryLogger());
  assert.equal(Buffer.compare(readFileSync(packFile(cacheDir)), whole), 0, 'dead bytes no more than the live stay');
});

test('reads asked while a pack is compacted each get their own bytes, none fetched; a compaction cut short by a crash leaves a file the next look removes', async () => {
  const { calls, cacheDir, load, digests } = await packWithDead(20, COMPACT_MIN_DEAD_BYTES + 1);
  const loads = [...Array(20).keys()].map((i) => load(i));
  const compacted = keepArchives(cacheDir, digests, memoryLogger());
  const more = [...Array(20).keys()].map((i) => load(i));
  for (const result of await Promise.all([...loads, ...more])) assert.ok(result.ok, result.ok ? '' : result.reason);
  await compacted;
  assert.equal(calls, []);
  assert.is(packRecords(cacheDir).length, 20);
  assert.ok(readFileSync(packFile(cacheDir)).length < COMPACT_MIN_DEAD_BYTES, 'compacted');

  const crashed = tempDir();
  copyFileSync(packFile(cacheDir), packFile(crashed));
  writeFileSync(join(crashed, PACK_COMPACTING_NAME), 'half a pack');
  const { fetch } = memoryFetcher({});
  assert.ok((await loadArchive('obj://archives/0.tar', digests[0]!, { cacheDir: crashed, fetchObject: fetch })).ok);
  assert.equal(readdirSync(crashed), [PACK_NAME]);
});

/** How many of this process's open files are `path`. */
function openCount(path: string): number {
  return readdirSync('/proc/self/fd').filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`) === path;
    } catch {
      return false;
    }
  }).length;
}

test('reads of the pack that come together share one handle, closed once none came for IDLE_CLOSE_MS', async () => {
  const { calls, cacheDir, load } = await packWithDead(20, 16);
  const results = await Promise.all([...Array(20).keys()].map((i) => load(i)));
  for (const r of results) assert.ok(r.ok, r.ok ? '' : r.reason);
  assert.equal(calls, [], 'every archive read from the pack');
  const readAt = Date.now();
  assert.is(openCount(packFile(cacheDir)), 1, 'one handle for the twenty reads, kept for the next');
  await waitFor('the idle handle closed', () => openCount(packFile(cacheDir)) === 0);
  assert.ok(Date.now() - readAt >= IDLE_CLOSE_MS - 50, `closed ${Date.now() - readAt} ms after the reads, not kept for the next`);
  assert.ok((await load(0)).ok, 'and opened again by the next read');
  assert.is(openCount(packFile(cacheDir)), 1);
});

test('a compaction that cannot write its new pack leaves the old one whole and is one warning, however often asked', async () => {
  const { calls, cacheDir, load, digests } = await packWithDead(2, COMPACT_MIN_DEAD_BYTES + 1);
  const bytes = readFileSync(packFile(cacheDir));
  mkdirSync(join(cacheDir, PACK_COMPACTING_NAME));
  const log = memoryLogger();
  for (let i = 0; i < 3; i++) await keepArchives(cacheDir, digests, log);
  assert.equal(Buffer.compare(readFileSync(packFile(cacheDir)), bytes), 0, 'the pack as it was');
  const warnings = log.lines.filter((l) => l.includes(' warning '));
  assert.is(warnings.length, 1, log.lines.join('\n'));
  assert.match(warnings[0]!, /archives\.pack: not compacted: .*archives\.pack\.compacting/);
  for (const i of [0, 1]) assert.ok((await load(i)).ok);
  assert.equal(calls, [], 'read from the pack still');
  rmSync(join(cacheDir, PACK_COMPACTING_NAME), { recursive: true });
  await keepArchives(cacheDir, digests, log);
  assert.equal(readdirSync(cacheDir), [PACK_NAME]);
  assert.is(packRecords(cacheDir).length, 2);
  assert.ok(log.lines.some((l) => l.includes('compacted to the 2 archive(s) in use')));
});

test('a pack the client cannot open (a directory in its place) is one warning for all its archives, each still loaded; once it works, trouble is warned again', async () => {
  const archives = await Promise.all([0, 1, 2].map(async (i) => gzipSync(await packTar([file(`f${i}.conf`, `file ${i}\n`)]))));
  const { fetch } = memoryFetcher(Object.fromEntries(archives.map((gz, i) => [`archives/${i}.tar`, gz])));
  const cacheDir = tempDir();
  mkdirSync(packFile(cacheDir));
  const log = memoryLogger();
  const load = (i: number) => loadArchive(`obj://archives/${i}.tar`, digestOf(archives[i]!), { cacheDir, fetchObject: fetch, log });
  for (const i of [0, 1, 2]) assert.ok((await load(i)).ok);
  await cacheWritesSettled();
  const warnings = () => log.lines.filter((l) => l.includes(' warning '));
  assert.is(warnings().length, 1, log.lines.join('\n'));
  assert.match(warnings()[0]!, /archives\.pack is a directory, not a regular file.*said at debug from now on/);
  assert.ok(log.lines.filter((l) => l.includes(' debug ') && l.includes('archives.pack')).length >= 5, log.lines.join('\n'));
  // The operator mends it: the next archive is cached, and the index read again (not the failed read kept).
  rmSync(packFile(cacheDir), { recursive: true });
  assert.ok((await load(0)).ok);
  await cacheWritesSettled();
  assert.equal(Buffer.compare(packedBytes(cacheDir, digestOf(archives[0]!))!, archives[0]!), 0);
  rmSync(packFile(cacheDir));
  mkdirSync(packFile(cacheDir));
  assert.ok((await load(1)).ok);
  await cacheWritesSettled();
  assert.is(warnings().length, 2, 'warned again: it had worked in between');
});

test('an entry with a ".." segment or an absolute name refuses the whole archive, naming the entry', async () => {
  const cases: [TarEntry, string][] = [
    [file('../x', 'evil'), 'entry "../x": ".." segment refused'],
    [file('conf/../../x', 'evil'), 'entry "conf/../../x": ".." segment refused'],
    [file('conf/..', 'evil'), 'entry "conf/..": ".." segment refused'],
    [special('../up/', 'directory'), 'entry "../up/": ".." segment refused'],
    [file('/etc/passwd', 'evil'), 'entry "/etc/passwd": absolute name refused'],
    // Long names travel in a pax record or the ustar prefix field: checked once joined.
    [file(`../${'p'.repeat(300)}`, 'evil'), `entry "../${'p'.repeat(300)}": ".." segment refused`],
    [file(`../${'u'.repeat(120)}/x`, 'evil'), `entry "../${'u'.repeat(120)}/x": ".." segment refused`],
  ];
  for (const [entry, why] of cases) {
    const reason = reasonOf(await loadBytes(await packTar([file('ok.conf', 'fine'), entry])));
    assert.is(reason, `archive ${REF}: ${why}`);
  }
});

test('links, devices and fifos refuse the whole archive, naming the entry and its type', async () => {
  const cases: [TarEntry, string][] = [
    [special('conf/l', 'symlink', '/etc/shadow'), 'entry "conf/l": symlink refused'],
    [special('h', 'link', 'ok.conf'), 'entry "h": hard link refused'],
    [special('tty', 'character-device'), 'entry "tty": character device refused'],
    [special('sda', 'block-device'), 'entry "sda": block device refused'],
    [special('pipe', 'fifo'), 'entry "pipe": fifo refused'],
  ];
  for (const [entry, why] of cases) {
    const reason = reasonOf(await loadBytes(await packTar([file('ok.conf', 'fine'), entry])));
    assert.is(reason, `archive ${REF}: ${why}`);
  }
});

test('a file entry with an empty name refuses the archive', async () => {
  for (const name of ['', '.', './/.']) {
    const reason = reasonOf(await loadBytes(await packTar([file(name, 'x')])));
    assert.is(reason, `archive ${REF}: entry ${JSON.stringify(name)}: empty name refused`);
  }
});

test('an entry past maxEntryBytes refuses the archive with the limit in the reason; one at the limit loads', async () => {
  const limits = limitsWith({ maxEntryBytes: 100 });
  const over = reasonOf(await loadBytes(await packTar([file('big', 'x'.repeat(101))]), limits));
  assert.is(over, `archive ${REF}: entry "big": 101 bytes, past the entry limit of 100 bytes`);
  assert.equal(textFiles(await loadBytes(await packTar([file('big', 'x'.repeat(100))]), limits)), { big: 'x'.repeat(100) });
});

test('an archive fetched past maxArchiveBytes is refused with the limit in the reason', async () => {
  const tar = await packTar([file('a', 'x'.repeat(3000))]);
  const { fetch, calls } = memoryFetcher({ 'archives/a.tar': tar });
  const limits = limitsWith({ maxArchiveBytes: 2048 });
  const reason = reasonOf(await loadArchive(REF, digestOf(tar), { cacheDir: tempDir(), fetchObject: fetch, limits }));
  assert.is(reason, `archive ${REF}: larger than the archive limit of 2048 bytes`);
  assert.is(calls[0]?.maxBytes, 2048, 'the fetcher is told the limit');
});

test('files unpacking past maxArchiveBytes in total refuse a small compressed archive', async () => {
  const gz = gzipSync(await packTar([file('a', 'a'.repeat(600)), file('b', 'b'.repeat(600)), file('c', 'c'.repeat(600))]));
  assert.ok(gz.length < 1500, `the compressed archive is within the limit (${gz.length} bytes)`);
  const reason = reasonOf(await loadBytes(gz, { maxArchiveBytes: 1500, maxEntryBytes: 1000, maxEntries: 10 }));
  assert.is(reason, `archive ${REF}: entry "c": unpacked total reaches 1800 bytes, past the archive limit of 1500 bytes`);
});

test('more than maxEntries entries refuse the archive with the limit; exactly maxEntries load', async () => {
  const limits = limitsWith({ maxEntries: 3 });
  const three = [special('d/', 'directory'), file('d/a', 'a'), file('d/b', 'b')];
  assert.equal(textFiles(await loadBytes(await packTar(three), limits)), { 'd/a': 'a', 'd/b': 'b' });
  const reason = reasonOf(await loadBytes(await packTar([...three, file('d/c', 'c')]), limits));
  assert.is(reason, `archive ${REF}: entry "d/c": more than 3 entries, past the entry count limit`);
});

test('a gzip bomb is refused while decompressing, before its tar is read', async () => {
  const limits = { maxArchiveBytes: 64 * 1024, maxEntryBytes: 16 * 1024 * 1024, maxEntries: 10 };
  const bomb = gzipSync(await packTar([file('zeros', new Uint8Array(8 * 1024 * 1024))]));
  assert.ok(bomb.length < limits.maxArchiveBytes, `the bomb itself is small (${bomb.length} bytes)`);
  const reason = reasonOf(await loadBytes(bomb, limits));
  assert.ok(reason.startsWith(`archive ${REF}: gzip decompresses past `), reason);
});

test('bytes that are not a tar, a truncated tar and broken gzip are refused, not thrown', async () => {
  const tar = await packTar(WEB_ENTRIES);
  const cases: [Uint8Array, string][] = [
    [utf8.encode('hello world, this is not a tar\n'.repeat(40)), 'not a valid tar'],
    [tar.subarray(0, 1700), 'not a valid tar'],
    [new Uint8Array(0), 'not a valid tar'],
    [Uint8Array.from([0x1f, 0x8b, 8, 0, 1, 2, 3, 4, 5, 6]), 'not a valid gzip'],
  ];
  for (const [bytes, why] of cases) {
    const reason = reasonOf(await loadBytes(bytes));
    assert.ok(reason.startsWith(`archive ${REF}: ${why}: `), reason);
  }
});

test('a malformed digest, an unsupported scheme or a malformed ref fails with a reason and fetches nothing', async () => {
  const digest = digestOf(utf8.encode('x'));
  const cases: [string, string, string][] = [
    [REF, 'md5:d41d8cd98f00b204e9800998ecf8427e', 'digest "md5:d41d8cd98f00b204e9800998ecf8427e" is not sha256:<64 hex>'],
    [REF, 'sha256:abc', 'digest "sha256:abc" is not sha256:<64 hex>'],
    ['http://example.com/a.tar', digest, 'unsupported ref scheme: wants obj://, file:/// or https://'],
    ['obj://only-a-bucket', digest, 'an obj ref is obj://<bucket>/<name>'],
    ['obj://bad.bucket/a', digest, 'an obj ref is obj://<bucket>/<name>'],
    ['file://host/etc/a.tar', digest, 'a file ref is file:///absolute/path'],
    ['file:a.tar', digest, 'a file ref is file:///absolute/path'],
  ];
  for (const [ref, dig, why] of cases) {
    const reason = reasonOf(await loadArchive(ref, dig, { cacheDir: tempDir(), fetchObject: neverFetch }));
    assert.ok(reason.startsWith(`archive ${ref}: ${why}`), reason);
  }
});

test('an object fetcher that throws fails the module with its message', async () => {
  const throwing: ObjectFetcher = async () => {
    throw new Error('connection closed');
  };
  const reason = reasonOf(await loadArchive(REF, digestOf(utf8.encode('x')), { cacheDir: tempDir(), fetchObject: throwing }));
  assert.is(reason, `archive ${REF}: object store fetch failed: connection closed`);
});

test('an unreachable https ref fails with a reason instead of throwing', async () => {
  const ref = 'https://127.0.0.1:1/web.tar.gz';
  const reason = reasonOf(await loadArchive(ref, digestOf(utf8.encode('x')), { cacheDir: tempDir(), fetchObject: neverFetch }));
  assert.ok(reason.startsWith(`archive ${ref}: fetch failed`), reason);
});

/** A local http server: `/ok` answers `body`, `/endless` never ends, `/huge` declares a big length, `/stall` stalls. */
async function httpServer(body: Uint8Array) {
  let endlessClosed!: () => void;
  const closed = new Promise<void>((resolve) => (endlessClosed = resolve));
  const routes: Record<string, (req: IncomingMessage, res: ServerResponse) => void> = {
    '/ok': (_req, res) => res.end(body),
    '/endless': (_req, res) => {
      res.writeHead(200);
      const chunk = Buffer.alloc(16 * 1024, 1);
      const pump = () => {
        while (!res.destroyed && res.write(chunk));
        if (!res.destroyed) res.once('drain', pump);
      };
      res.once('close', endlessClosed);
      pump();
    },
    '/huge': (_req, res) => {
      res.writeHead(200, { 'content-length': String(10 * 1024 * 1024) });
      res.write('x');
    },
    '/stall': (_req, res) => {
      res.writeHead(200);
      res.write('x');
    },
  };
  const server = createServer((req, res) => (routes[req.url ?? ''] ?? ((_q, r) => r.writeHead(404).end()))(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  const close = () => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return { base, endlessClosed: closed, close };
}

test('the https fetch returns a body, says an HTTP error, and refuses a declared length past the limit', async () => {
  const body = randomBytes(5000);
  const http = await httpServer(body);
  try {
    const ok = await fetchHttps(`${http.base}/ok`, 65_536, 5000);
    assert.ok(ok.ok && Buffer.compare(Buffer.from(ok.value), body) === 0);
    assert.equal(await fetchHttps(`${http.base}/nothing`, 65_536, 5000), { ok: false, reason: 'HTTP 404 Not Found' });
    assert.equal(await fetchHttps(`${http.base}/huge`, 65_536, 5000), {
      ok: false,
      reason: 'declares 10485760 bytes, past the archive limit of 65536 bytes',
    });
  } finally {
    await http.close();
  }
});

test('the https fetch stops reading an endless body past the limit, and gives up at its timeout', async () => {
  const http = await httpServer(new Uint8Array(0));
  try {
    const endless = await fetchHttps(`${http.base}/endless`, 65_536, 5000);
    assert.equal(endless, { ok: false, reason: 'larger than the archive limit of 65536 bytes' });
    await Promise.race([http.endlessClosed, new Promise((_, reject) => setTimeout(() => reject(new Error('still reading')), 2000))]);
    const started = Date.now();
    assert.equal(await fetchHttps(`${http.base}/stall`, 65_536, 200), { ok: false, reason: 'no complete answer within 200 ms' });
    assert.ok(Date.now() - started < 2000);
  } finally {
    await http.close();
  }
});

test.run();
