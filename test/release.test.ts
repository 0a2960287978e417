// `npm run release` (scripts/release.mjs): the tarball holds everything a node needs and nothing of
// this machine (no seed, no local path), and unpacked alone — no node_modules anywhere above it —
// its bundles answer and run a seat, an engine and a client against a real nats-server.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { unpackTar } from 'modern-tar';
import { nkeys } from '@nats-io/transport-node';
import { cleanupBundles, hasNodeModulesAbove, ROOT, runBundle, startBundle, type Running } from './helpers/bundle.ts';
import { startNats } from './helpers/nats.ts';

const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const TOP = `mesh-provisioner-${VERSION}`;
/** Every file a node needs, inside TOP/. */
const EXPECTED = [
  'README.md',
  'client.js',
  'engine.js',
  'sdk.js',
  'server.js',
  'vault.js',
  'deploy/README.md',
  'deploy/nats.conf.example',
  'deploy/systemd/client.env.example',
  'deploy/systemd/mesh-engine.service',
  'deploy/systemd/mesh-provisioner-client.service',
  'deploy/systemd/mesh-provisioner.service',
  'deploy/systemd/mesh-provisioner.sysusers',
  'deploy/systemd/server.env.example',
];
/** An nkey seed of any kind: `S`, a type letter, base32 (public keys start U, A, N, O…; `CONSUMER` is not one). */
const SEED = /\bS[UANOCPX][A-Z2-7]{50,}/;

const dirs: string[] = [];
let files = new Map<string, Buffer>();
let unpacked = '';

function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}

/** The first path of this machine — the repository, the home dir — that `text` names as a whole path. */
function localPathIn(text: string): string | undefined {
  const escape = (p: string) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return [ROOT, homedir()].filter((p) => p !== '/').find((p) => new RegExp(`(^|[^\\w.~/-])${escape(p)}`).test(text));
}

test.before(async () => {
  const out = tempDir('mesh-release-out-');
  const made = spawnSync(process.execPath, [join(ROOT, 'scripts', 'release.mjs'), '--out', out], { cwd: ROOT, encoding: 'utf8' });
  assert.is(made.status, 0, made.stderr);
  const tarball = join(out, `${TOP}.tar.gz`);
  assert.ok(made.stdout.startsWith(tarball), made.stdout);
  const entries = await unpackTar(gunzipSync(readFileSync(tarball)));
  unpacked = tempDir('mesh-release-unpacked-');
  for (const entry of entries) {
    if (entry.header.type !== 'file') continue;
    const bytes = Buffer.from(entry.data ?? new Uint8Array());
    files.set(entry.header.name, bytes);
    mkdirSync(dirname(join(unpacked, entry.header.name)), { recursive: true });
    writeFileSync(join(unpacked, entry.header.name), bytes);
  }
  unpacked = join(unpacked, TOP);
});
test.after(() => {
  cleanupBundles();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  files = new Map();
});

test('the tarball holds the bundles, the units, the example env and bus files and the READMEs, under mesh-provisioner-<version>/', () => {
  assert.equal([...files.keys()].sort(), EXPECTED.map((f) => `${TOP}/${f}`).sort());
  for (const bundle of ['server', 'client', 'engine', 'sdk']) {
    assert.ok(files.get(`${TOP}/${bundle}.js`)!.equals(readFileSync(join(ROOT, 'dist', `${bundle}.js`))), `${bundle}.js is not the build`);
  }
});

test('no file of the tarball holds an nkey seed or a path of this machine', () => {
  for (const [name, bytes] of files) {
    const text = bytes.toString('latin1');
    assert.not.match(text, SEED, `${name} holds a seed`);
    assert.is(localPathIn(text), undefined, `${name} names a path of this machine`);
  }
});

test('the leak checks find a real seed and this machine’s paths, and pass CONSUMER and /tmp/root', () => {
  const seed = new TextDecoder().decode(nkeys.createUser().getSeed());
  assert.match(`nkey: "${seed}"`, SEED);
  assert.is(localPathIn(`node ${join(ROOT, 'dist', 'client.js')}`), ROOT);
  if (homedir() !== '/') assert.is(localPathIn(`cache ${join(homedir(), '.cache')}`), homedir());
  assert.not.match('$JS.API.CONSUMER.CREATE.KV_mesh-provisioner_plans', SEED);
  assert.is(localPathIn('--root /tmp/root --socket /run/nox-mesh-host/fill.sock'), undefined);
});

test('the example bus configuration is one nats-server accepts, for node-1 and node-2, by public keys', () => {
  const conf = files.get(`${TOP}/deploy/nats.conf.example`)!.toString('utf8');
  for (const user of ['provisioner', 'provisioner.node-1', 'provisioner.node-2', 'runner.node-1', 'runner.node-2'])
    assert.match(conf, new RegExp(`# ${user.replace('.', '\\.')}[:\\n]`), user);
  assert.ok((conf.match(/nkey: "U[A-Z2-7]{55}"/g) ?? []).length >= 5, conf);
  const checked = spawnSync('nats-server', ['-t', '-c', join(unpacked, 'deploy', 'nats.conf.example')], { encoding: 'utf8' });
  assert.is(checked.status, 0, checked.stderr);
});

test('unpacked alone, client.js --version and server.js --help answer', async () => {
  assert.not.ok(hasNodeModulesAbove(unpacked), unpacked);
  const version = await runBundle('node', unpacked, 'client', ['--version']);
  assert.is(version.code, 0, version.stderr);
  assert.is(version.stdout, `node-provisioner ${VERSION}\n`);
  const help = await runBundle('node', unpacked, 'server', ['--help']);
  assert.is(help.code, 0, help.stderr);
  assert.match(help.stdout, /bus-config/);
  assert.match(help.stdout, /MESH_NATS_URL/);
});

test('unpacked alone, the seat, the engine and a client run a node against a real nats-server and stop on SIGTERM', async () => {
  const nats = await startNats();
  const work = tempDir('mesh-release-node-');
  mkdirSync(join(work, 'root'));
  const running: Running[] = [];
  try {
    const seat = startBundle('node', unpacked, 'server', ['--nats', nats.url]);
    running.push(seat);
    await seat.waitForLog(/seat ready/, 20_000);
    const engine = startBundle('node', unpacked, 'engine', ['--socket', join(work, 'fill.sock'), '--root', join(work, 'root')]);
    running.push(engine);
    await engine.waitForLog(/engine listening on/);
    const client = startBundle('node', unpacked, 'client', [
      '--node',
      'node-1',
      '--nats',
      nats.url,
      '--socket',
      join(work, 'fill.sock'),
      '--cache',
      join(work, 'cache'),
    ]);
    running.push(client);
    // Its first line says where it goes; the next ones are what it found on the bus.
    await client.waitForLog(/node-provisioner \S+ for node node-1, bus nats:\/\/127\.0\.0\.1:\d+/);
    await client.waitForLog(/client ready/, 20_000);
    for (const r of running.reverse()) {
      r.child.kill('SIGTERM');
      assert.is((await r.exited).code, 0, r.stderr());
    }
  } finally {
    for (const r of running) r.kill();
    await nats.cleanup();
  }
});

test.run();
