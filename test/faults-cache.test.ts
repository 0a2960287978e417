// Faults of the archive cache (DESIGN §7 point 1; its pack, src/client/archive/pack.ts) under a real
// client and nats-server: a record corrupted or cut short, the pack removed, the whole cache dir
// removed, and a full cache disk. Each time the archive is fetched again, never used unverified, and
// the cache ends holding the right bytes.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, truncateSync } from 'node:fs';
import { join } from 'node:path';
import { cacheWritesSettled } from '../src/client/archive/load.ts';
import { ensureBuilt } from './helpers/bundle.ts';
import { archiveDigest, packTemplates, writeComposition, type Published } from './helpers/archive.ts';
import { withMesh, type Mesh, type ModuleSpec } from './helpers/mesh.ts';
import { waitFor } from './helpers/wait.ts';
import { tempDir } from './helpers/temp.ts';
import { packedBytes, packFile, packRecords, rewriteRecord } from './helpers/pack.ts';
import { PACK_NAME } from '../src/client/archive/pack.ts';

test.before(() => ensureBuilt('client'));

const MODULE = 'web';
const GOOD = 'good port=${port:http}\n';
const FILLED = 'good port=8080\n';
/** What a cache holding the wrong bytes would fill: a valid archive, another template. */
const EVIL = 'EVIL port=${port:http}\n';

function spec(build: string, template: string): ModuleSpec {
  return {
    build,
    templates: { 'web.conf': template },
    provisioning: { files: [{ path: '${dir:config}/web.conf', template: 'web.conf', change: 'restart' }] },
  };
}

/** The bytes the cache's pack holds last for a published archive (undefined: none). */
function cached(m: Mesh, published: Published): Buffer | undefined {
  return packedBytes(m.cacheDir, published.composition.archive.digest);
}

function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** The client log lines saying the archive was fetched (not read from the cache). */
function fetches(m: Mesh, published: Published): string[] {
  return m.log.lines.filter((l) => l.includes(`archive ${published.composition.archive.ref}: fetched`));
}

function applied(m: Mesh, build: string) {
  return m.waitReport('n1', MODULE, (r) => r.state === 'applied' && r.build === build);
}

/** Build 1 of the module applied by an in-process client, and cached. */
async function appliedAndCached(m: Mesh): Promise<Published> {
  const v1 = await m.publish(MODULE, spec('1', GOOD));
  await m.assign('n1', MODULE);
  await m.startClient();
  await applied(m, '1');
  await cacheWritesSettled();
  assert.equal(cached(m, v1), Buffer.from(v1.tar), 'build 1 cached as fetched');
  assert.is(fetches(m, v1).length, 1);
  return v1;
}

/**
 * Moves the module to build 2 and back to build 1, with `damage` done to the cache in between: the
 * client dropped build 1's templates when no plan named them, so it loads them again through the cache.
 */
async function awayAndBack(m: Mesh, v1: Published, damage: () => void): Promise<void> {
  await m.publish(MODULE, spec('2', 'two port=${port:http}\n'));
  await applied(m, '2');
  assert.is(m.moduleFile(MODULE), 'two port=8080\n');
  await cacheWritesSettled();
  damage();
  await writeComposition(m.kv.modules, v1.composition);
  await applied(m, '1');
  await cacheWritesSettled();
}

/** Build 1 was fetched again and filled from the fetched bytes, and the cache holds them again. */
function fetchedAgainAndRecached(m: Mesh, v1: Published): void {
  assert.is(m.moduleFile(MODULE), FILLED);
  assert.is(fetches(m, v1).length, 2, 'fetched again');
  assert.equal(cached(m, v1), Buffer.from(v1.tar), 'the cache holds the right bytes again');
  assert.not.ok(
    m.log.lines.some((l) => / not cached at /.test(l)),
    'every cache write succeeded',
  );
}

test('a cache record with bytes flipped into another valid template is refused, fetched again and appended', () =>
  withMesh(async (m) => {
    const v1 = await appliedAndCached(m);
    let flipped = '';
    await awayAndBack(m, v1, () => {
      // A tar's header checksum does not cover the body: these bytes still unpack, to another template.
      const bytes = Buffer.from(cached(m, v1)!);
      const at = bytes.indexOf('good port=');
      assert.ok(at > 0);
      bytes.write('EVIL', at);
      flipped = sha256(bytes);
      rewriteRecord(m.cacheDir, v1.composition.archive.digest, bytes);
    });
    fetchedAgainAndRecached(m, v1);
    assert.ok(
      m.log.lines.some((l) => new RegExp(`holds sha256:${flipped} at byte \\d+, not ${v1.composition.archive.digest}; dropping it`).test(l)),
      'the mismatch is said',
    );
  }));

test('a cache file holding another valid archive is refused after a client restart, and the right one fetched', () =>
  withMesh(async (m) => {
    const v1 = await appliedAndCached(m);
    await m.stopClient();
    const evil = await packTemplates({ 'web.conf': EVIL });
    rewriteRecord(m.cacheDir, v1.composition.archive.digest, evil);
    rmSync(join(m.root, 'etc', MODULE, 'web.conf'));
    await m.startClient();
    await waitFor('the module filled again', () => m.moduleFile(MODULE));
    await m.idle();
    await cacheWritesSettled();
    fetchedAgainAndRecached(m, v1);
    assert.ok(
      m.log.lines.some((l) => new RegExp(`holds ${archiveDigest(evil)} at byte \\d+, not ${v1.composition.archive.digest}`).test(l)),
      'the mismatch is said',
    );
  }));

test('the client process restarted over a cache file holding another valid archive fetches the right one', () =>
  withMesh(async (m) => {
    const v1 = await m.publish(MODULE, spec('1', GOOD));
    await m.assign('n1', MODULE);
    const first = m.startClientProcess();
    await applied(m, '1');
    await waitFor('build 1 cached', () => cached(m, v1)?.equals(v1.tar));
    first.child.kill('SIGTERM');
    await first.exited;
    const evil = await packTemplates({ 'web.conf': EVIL });
    rewriteRecord(m.cacheDir, v1.composition.archive.digest, evil);
    rmSync(join(m.root, 'etc', MODULE, 'web.conf'));
    const second = m.startClientProcess();
    await second.waitForLog(new RegExp(`holds ${archiveDigest(evil)} at byte \\d+, not ${v1.composition.archive.digest}; dropping it and fetching again`));
    await second.waitForLog(/fetched \d+ bytes/);
    await waitFor('the module filled again', () => m.moduleFile(MODULE));
    assert.is(m.moduleFile(MODULE), FILLED);
    await waitFor('build 1 cached again', () => cached(m, v1)?.equals(v1.tar));
  }));

test('a cache record cut short (the pack truncated inside it) is refused, fetched again and appended', () =>
  withMesh(async (m) => {
    const v1 = await appliedAndCached(m);
    await awayAndBack(m, v1, () => {
      const record = packRecords(m.cacheDir).find((r) => `sha256:${r.hex}` === v1.composition.archive.digest)!;
      truncateSync(packFile(m.cacheDir), record.offset + 700);
    });
    fetchedAgainAndRecached(m, v1);
    assert.ok(
      m.log.lines.some((l) => l.includes(`cache ${packFile(m.cacheDir)} holds sha256:`)),
      'the mismatch is said',
    );
  }));

test('a removed pack is fetched again and made anew', () =>
  withMesh(async (m) => {
    const v1 = await appliedAndCached(m);
    await awayAndBack(m, v1, () => rmSync(packFile(m.cacheDir)));
    fetchedAgainAndRecached(m, v1);
  }));

test('a removed cache dir is made again by the first write after it', () =>
  withMesh(async (m) => {
    const v1 = await appliedAndCached(m);
    await awayAndBack(m, v1, () => rmSync(m.cacheDir, { recursive: true }));
    fetchedAgainAndRecached(m, v1);
    assert.equal(readdirSync(m.cacheDir), [PACK_NAME]);
  }));

const mounted = new Set<string>();
// A suite that dies mid-test (an unhandled rejection) still leaves no tmpfs mounted.
process.once('exit', () => {
  for (const dir of mounted) {
    try {
      execFileSync('umount', ['-l', dir], { stdio: 'ignore' });
    } catch {
      // Already unmounted.
    }
  }
});

/** Mounts a tmpfs of `size` on `dir`; the reason when this machine does not let it. */
function mountTmpfs(dir: string, size: string): string | undefined {
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { stdio: 'pipe' });
    mounted.add(dir);
    return undefined;
  } catch (err) {
    return ((err as { stderr?: Buffer }).stderr?.toString() || (err as Error).message).trim();
  }
}

function unmount(dir: string): void {
  execFileSync('umount', [dir]);
  mounted.delete(dir);
}

/** Why a tmpfs cannot be mounted here (not root, say), or undefined when it can: tried on a scratch directory before the tests are declared. */
function tmpfsRefused(): string | undefined {
  const dir = tempDir('mesh-tmpfs-probe-');
  try {
    const refused = mountTmpfs(dir, '64k');
    if (refused === undefined) unmount(dir);
    return refused;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const refusedTmpfs = tmpfsRefused();
if (refusedTmpfs !== undefined) console.log(`# skipped: the full cache disk needs a tmpfs: mount -t tmpfs failed (${refusedTmpfs}); run as root to test it`);
const onTmpfs = refusedTmpfs === undefined ? test : test.skip;

onTmpfs('a full cache disk: the module applied from the verified bytes, ENOSPC said, nothing half-written, cached once space returns', () =>
  withMesh(async (m) => {
    mkdirSync(m.cacheDir, { recursive: true });
    const refused = mountTmpfs(m.cacheDir, '64k');
    assert.is(refused, undefined, 'a tmpfs mounted on the scratch directory mounts on the cache too');
    try {
      // 128 KiB of text: past the 64 KiB the cache disk holds.
      const body = randomBytes(64 * 1024).toString('hex');
      const v1 = await m.publish(MODULE, spec('1', `${body} port=\${port:http}\n`));
      assert.ok(v1.tar.length > 64 * 1024);
      await m.assign('n1', MODULE);
      await m.startClient();
      await applied(m, '1');
      assert.is(m.moduleFile(MODULE), `${body} port=8080\n`);
      await cacheWritesSettled();
      const warned = m.log.lines.filter((l) => l.includes(` warning archive ${v1.composition.archive.ref}: not cached at ${packFile(m.cacheDir)}: ENOSPC`));
      assert.is(warned.length, 1, `ENOSPC said with the cache path; log: ${m.log.lines.join(' | ')}`);
      assert.equal(readdirSync(m.cacheDir), [], 'no partial or temp file left');

      execFileSync('mount', ['-o', 'remount,size=1m', m.cacheDir]);
      await m.stopClient();
      await m.startClient();
      await waitFor('build 1 fetched again after the restart', () => fetches(m, v1).length === 2);
      await m.idle();
      await cacheWritesSettled();
      // Beside the archive, the records of the keys the client wrote (src/client/report/written.ts) and of its plans (src/client/plans/record.ts), whole.
      const expected = [PACK_NAME, 'plans', 'written'].sort();
      await waitFor(
        'the records saved beside the archive',
        () => existsSync(join(m.cacheDir, 'written', 'n1.json')) && existsSync(join(m.cacheDir, 'plans', 'n1.json')),
      );
      assert.equal(readdirSync(join(m.cacheDir, 'plans')), ['n1.json'], 'no temp file left of a save refused while the disk was full');
      assert.equal(readdirSync(m.cacheDir).sort(), expected);
      assert.is(JSON.parse(readFileSync(join(m.cacheDir, 'written', 'n1.json'), 'utf8')).node, 'n1');
      assert.is('sha256:' + sha256(cached(m, v1)!), v1.composition.archive.digest, 'cached once space returned');
      assert.is((await m.report('n1', MODULE))?.state, 'applied');
    } finally {
      await m.stopClient();
      unmount(m.cacheDir);
    }
  }),
);

test.run();
