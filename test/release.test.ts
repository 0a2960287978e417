// `npm run release` (scripts/release.mjs): the tarball holds everything a node needs and nothing of
// this machine (no seed, no local path), and unpacked alone — no node_modules anywhere above it —
// its bundles answer and run a seat, an engine and a client against a real nats-server, on every
// runtime: node, node without module-type detection (as Node 20.0–20.18 run a .js) and deno.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { unpackTar } from 'modern-tar';
import { nkeys } from '@nats-io/transport-node';
import { cleanEnv, cleanupBundles, hasNodeModulesAbove, ROOT, runBundle, RUNTIMES, runtimeCommand, startBundle, type Running } from './helpers/bundle.ts';
import { startNats } from './helpers/nats.ts';
import { tempDir as newTempDir } from './helpers/temp.ts';

const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const TOP = `mesh-provisioner-${VERSION}`;
/** Every file a node needs, inside TOP/. */
const EXPECTED = [
  'README.md',
  'client.js',
  'engine.js',
  'postgres-provider.js',
  'provider.mjs',
  'sdk.mjs',
  'server.js',
  'vault.js',
  'deploy/README.md',
  'deploy/nats.conf.example',
  'deploy/systemd/client.env.example',
  'deploy/systemd/mesh-engine.service',
  'deploy/systemd/mesh-provisioner-client.service',
  'deploy/systemd/mesh-provisioner.service',
  'deploy/systemd/mesh-provisioner.sysusers',
  'deploy/systemd/mesh-vault.service',
  'deploy/systemd/server.env.example',
  'deploy/systemd/vault.env.example',
  'docs/decisions.md',
  'docs/design.md',
  'docs/isolation.md',
  'docs/rollout.md',
  'docs/scale.md',
  'docs/reliability.md',
  'examples/postgres-provider/README.md',
  'examples/web/composition.json',
  'examples/web/config.json',
  'examples/web/templates/web.conf',
  'examples/web/templates/web.env',
  'examples/app/composition.json',
  'examples/app/templates/db.env',
  'examples/postgres-provider/module/composition.json',
  'examples/postgres-provider/module/templates/consumers.json',
];
/** An nkey seed of any kind: `S`, a type letter, base32 (public keys start U, A, N, O…; `CONSUMER` is not one). */
const SEED = /\bS[UANOCPX][A-Z2-7]{50,}/;

const dirs: string[] = [];
let files = new Map<string, Buffer>();
let unpacked = '';

function tempDir(prefix: string): string {
  const dir = newTempDir(prefix);
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
  for (const bundle of ['server.js', 'client.js', 'engine.js', 'sdk.mjs', 'provider.mjs', 'postgres-provider.js']) {
    assert.ok(files.get(`${TOP}/${bundle}`)!.equals(readFileSync(join(ROOT, 'dist', bundle))), `${bundle} is not the build`);
  }
});

test('every file the shipped READMEs and docs link to is in the tarball', () => {
  const missing: string[] = [];
  for (const [path, bytes] of files) {
    if (!path.endsWith('.md')) continue;
    const dir = path.slice(0, path.lastIndexOf('/'));
    // Links outside code: a regular expression in backticks may look like one.
    const prose = bytes
      .toString('utf8')
      .replace(/```[\s\S]*?```/g, '')
      .replace(/`[^`\n]*`/g, '');
    for (const m of prose.matchAll(/\[[^\]\n]*\]\(([^)#\s]+)(#[^)]*)?\)/g)) {
      const target = m[1]!;
      if (/^[a-z]+:/.test(target)) continue;
      const resolved = join(dir, target).replace(/\/$/, '');
      if (!files.has(resolved) && ![...files.keys()].some((f) => f.startsWith(`${resolved}/`))) missing.push(`${path} → ${target}`);
    }
  }
  assert.equal(missing, []);
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

test('the example bus configuration is one nats-server accepts, for n1 and n2, by public keys', () => {
  const conf = files.get(`${TOP}/deploy/nats.conf.example`)!.toString('utf8');
  for (const user of ['provisioner', 'provisioner.n1', 'provisioner.n2', 'runner.n1', 'runner.n2'])
    assert.match(conf, new RegExp(`# ${user.replace('.', '\\.')}[:\\n]`), user);
  assert.ok((conf.match(/nkey: "U[A-Z2-7]{55}"/g) ?? []).length >= 5, conf);
  const checked = spawnSync('nats-server', ['-t', '-c', join(unpacked, 'deploy', 'nats.conf.example')], { encoding: 'utf8' });
  assert.is(checked.status, 0, checked.stderr);
});

test('unpacked alone, client.js --version, server.js --help and postgres-provider.js --help answer', async () => {
  assert.not.ok(hasNodeModulesAbove(unpacked), unpacked);
  const version = await runBundle('node', unpacked, 'client', ['--version']);
  assert.is(version.code, 0, version.stderr);
  assert.is(version.stdout, `node-provisioner ${VERSION}\n`);
  const help = await runBundle('node', unpacked, 'server', ['--help']);
  assert.is(help.code, 0, help.stderr);
  assert.match(help.stdout, /bus-config/);
  assert.match(help.stdout, /MESH_NATS_URL/);
  const provider = await runBundle('node', unpacked, 'postgres-provider', ['--help']);
  assert.is(provider.code, 0, provider.stderr);
  assert.match(provider.stdout, /--consumers FILE .*\[env MESH_CONSUMERS_FILE\]/);
  assert.match(provider.stdout, /--nkey FILE .*\[env MESH_NATS_NKEY\]/);
});

/** The programs of the tarball: every `.js` at its top (the SDK, which a module imports, is `sdk.mjs`). */
function programsOf(): string[] {
  return [...files.keys()].filter((f) => /^[^/]+\/[^/]+\.js$/.test(f)).map((f) => f.slice(TOP.length + 1, -'.js'.length));
}

test('unpacked alone, every program answers --help under node, under node without module-type detection and under deno', async () => {
  assert.ok(programsOf().length >= 3, programsOf().join(' '));
  for (const program of programsOf()) {
    for (const runtime of RUNTIMES) {
      const help = await runBundle(runtime, unpacked, program, ['--help'], {}, 30_000);
      assert.is(help.code, 0, `${program}.js under ${runtime}: ${help.stderr}`);
      assert.match(help.stdout, /--nats|--socket/, `${program}.js under ${runtime}`);
    }
  }
});

test('a module imports the unpacked sdk.mjs and provider.mjs by name under node, under node without module-type detection and under deno', () => {
  const module = tempDir('mesh-release-module-');
  // A module's own file, beside no package.json: it names the SDK and the provider helper by their paths in the install.
  writeFileSync(
    join(module, 'main.mjs'),
    `import { ask, watch, asker, close } from ${JSON.stringify(join(unpacked, 'sdk.mjs'))};\n` +
      `import { runProvider, Refused } from ${JSON.stringify(join(unpacked, 'provider.mjs'))};\n` +
      'console.log([ask, watch, asker, close, runProvider, Refused].map((f) => typeof f).join(" "));\n',
  );
  for (const runtime of RUNTIMES) {
    const [cmd, pre] = runtimeCommand(runtime);
    const ran = spawnSync(cmd, [...pre, 'main.mjs'], { cwd: module, env: cleanEnv(), encoding: 'utf8', timeout: 30_000 });
    assert.is(ran.status, 0, `${runtime}: ${ran.stderr}`);
    assert.is(ran.stdout, 'function function function function function function\n', runtime);
  }
});

test('unpacked alone, the seat, the engine and a client run a node against a real nats-server and stop on SIGTERM, as Node 20.0 runs them', async () => {
  const nats = await startNats();
  const work = tempDir('mesh-release-node-');
  mkdirSync(join(work, 'root'));
  const running: Running[] = [];
  // Node 20.0–20.18 never detect a module's type: a .js beside no package.json is CommonJS to them.
  const runtime = 'node-no-detect';
  try {
    const seat = startBundle(runtime, unpacked, 'server', ['--nats', nats.url]);
    running.push(seat);
    await seat.waitForLog(/seat ready/, 20_000);
    const engine = startBundle(runtime, unpacked, 'engine', ['--socket', join(work, 'fill.sock'), '--root', join(work, 'root')]);
    running.push(engine);
    await engine.waitForLog(/engine listening on/);
    const client = startBundle(runtime, unpacked, 'client', [
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
