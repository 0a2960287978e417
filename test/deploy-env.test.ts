// The example env files of deploy/systemd as an operator installs them (issue 20 item 10): on one
// machine holding the one nats-server they run as they are — the seat, the reference engine, a
// client and the vault, each bundle alone with only the example's variables (the bus's port aside: the test's
// server has its own) — and a seat asked more copies than one server holds exits saying the
// variable or the flag that asked, at error, and what to set.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { cleanupBundles, copyBundleAlone, ensureBuilt, ROOT, runBundle, startBundle, type Running } from './helpers/bundle.ts';
import { startNats, type NatsServer } from './helpers/nats.ts';
import { tempDir } from './helpers/temp.ts';

const SYSTEMD_DIR = join(ROOT, 'deploy', 'systemd');
let nats: NatsServer;
const dirs: string[] = [];
const servers: NatsServer[] = [];

/** A server of its own, with no bucket yet: one the seat must create. */
async function emptyServer(): Promise<NatsServer> {
  const server = await startNats();
  servers.push(server);
  return server;
}

test.before(async () => {
  for (const bundle of ['server', 'client', 'engine', 'vault']) ensureBuilt(bundle);
  nats = await startNats();
});
test.after(async () => {
  cleanupBundles();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  await nats.cleanup();
  for (const server of servers.splice(0)) await server.cleanup();
});

/** The `VAR=value` lines of an example env file, as systemd's EnvironmentFile= reads them (comments skipped). */
function exampleEnv(name: string): Record<string, string> {
  const text = readFileSync(join(SYSTEMD_DIR, name), 'utf8');
  return Object.fromEntries([...text.matchAll(/^([A-Z_][A-Z0-9_]*)=(.*)$/gm)].map((m) => [m[1]!, m[2]!]));
}

/** The example's variables with the bus's local URL pointed at the test's server: the only change made. */
function onTestBus(env: Record<string, string>): Record<string, string> {
  assert.is(env['MESH_NATS_URL'], 'nats://127.0.0.1:4222', 'the example names the local nats-server');
  return { ...env, MESH_NATS_URL: nats.url };
}

test('each example env file runs as it is on one server: seat ready, then a client of node n1 ready beside the engine, then the vault ready', async () => {
  const work = tempDir('mesh-deploy-env-');
  dirs.push(work);
  mkdirSync(join(work, 'root'));
  const running: Running[] = [];
  try {
    const server = exampleEnv('server.env.example');
    assert.not.ok('MESH_REPLICAS' in server, 'MESH_REPLICAS is left at its default of 1: one server holds one copy');
    const seat = startBundle('node', copyBundleAlone('server'), 'server', [], onTestBus(server));
    running.push(seat);
    await seat.waitForLog(/seat ready/, 20_000);

    const client = exampleEnv('client.env.example');
    assert.is(client['MESH_NODE'], 'n1', "the node README's bus-config names first");
    // The socket and the cache are the engine's and systemd's paths on a real node; here a temp dir's.
    const socket = join(work, 'fill.sock');
    const engine = startBundle('node', copyBundleAlone('engine'), 'engine', ['--root', join(work, 'root')], { MESH_FILL_SOCKET: socket });
    running.push(engine);
    await engine.waitForLog(/engine listening on/);
    const provisioner = startBundle('node', copyBundleAlone('client'), 'client', [], {
      ...onTestBus(client),
      MESH_FILL_SOCKET: socket,
      MESH_CACHE_DIR: join(work, 'cache'),
    });
    running.push(provisioner);
    await provisioner.waitForLog(/node-provisioner \S+ for node n1, bus nats:\/\/127\.0\.0\.1:\d+/);
    await provisioner.waitForLog(/client ready/, 20_000);

    // The vault's store is the unit's (Environment=MESH_VAULT_STORE); here a temp dir's.
    const vault = startBundle('node', copyBundleAlone('vault'), 'vault', [], {
      ...onTestBus(exampleEnv('vault.env.example')),
      MESH_VAULT_STORE: join(work, 'vault'),
    });
    running.push(vault);
    await vault.waitForLog(/vault ready: serving mesh-vault\.credential\.<node> from /, 20_000);
    for (const r of running.reverse()) {
      r.child.kill('SIGTERM');
      assert.is((await r.exited).code, 0, r.stderr());
    }
  } finally {
    for (const r of running) r.kill();
  }
});

test('a seat asked 3 copies on one server exits 1 with an error naming MESH_REPLICAS and what to set; --replicas is named when given', async () => {
  const dir = copyBundleAlone('server');
  const nats = await emptyServer();
  const fromEnv = await runBundle('node', dir, 'server', [], { MESH_NATS_URL: nats.url, MESH_REPLICAS: '3' }, 20_000);
  assert.is(fromEnv.code, 1, fromEnv.stderr);
  const line = fromEnv.stderr.split('\n').find((l) => l.includes('copies'));
  assert.ok(line, fromEnv.stderr);
  assert.match(line!, / error MESH_REPLICAS asks 3 copies of each bucket, more than the bus's JetStream servers can hold/);
  assert.match(line!, /set MESH_REPLICAS=1 .*server\.env/);

  const fromFlag = await runBundle('node', dir, 'server', ['--replicas', '3'], { MESH_NATS_URL: nats.url, MESH_REPLICAS: '1' }, 20_000);
  assert.is(fromFlag.code, 1, fromFlag.stderr);
  assert.match(fromFlag.stderr, / error --replicas asks 3 copies .*set --replicas 1;/);

  const outOfRange = await runBundle('node', dir, 'server', [], { MESH_NATS_URL: nats.url, MESH_REPLICAS: '9' });
  assert.is(outOfRange.code, 2, outOfRange.stderr);
  assert.match(outOfRange.stderr, /MESH_REPLICAS must be 1 to 5, got 9/);
});

test('init asked 3 copies on one server says, after each bucket, the variable that asked and what to set', async () => {
  const { url } = await emptyServer();
  const run = await runBundle('node', copyBundleAlone('server'), 'server', ['init'], { MESH_NATS_URL: url, MESH_REPLICAS: '3' }, 20_000);
  assert.is(run.code, 1, run.stdout + run.stderr);
  assert.match(run.stdout, /^MESH_REPLICAS asks 3 copies of each bucket.*set MESH_REPLICAS=1/m);
});

test.run();
