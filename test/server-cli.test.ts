// The seat bundle (DESIGN §1, §10) copied alone into an empty dir: serving under node and deno, flags, query, logs.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import { ASSIGNMENTS, MODULES, NEEDS, PLANS, REGISTRY_BUCKET } from '../src/shared/contract/buckets.ts';
import { INBOX_PREFIXES } from '../src/shared/bus/inbox.ts';
import { needKey } from '../src/shared/contract/keys.ts';
import {
  cleanupBundles,
  copyBundleAlone,
  ensureBuilt,
  hasNodeModulesAbove,
  ROOT,
  runBundle,
  startBundle,
  type Running,
  type Runtime,
} from './helpers/bundle.ts';
import { freePort, startNats, type NatsServer } from './helpers/nats.ts';
import { assignment, composition } from './helpers/seat.ts';
import { waitFor } from './helpers/wait.ts';
import { scrape } from './helpers/scrape.ts';
import { ensureKv } from '../src/shared/bus/bus.ts';

const VERSION = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version as string;
const READY = /seat ready/;

let dir: string;
const servers: NatsServer[] = [];
const connections: NatsConnection[] = [];
const seats: Running[] = [];

async function bus(): Promise<{ server: NatsServer; nc: NatsConnection; kvm: Kvm }> {
  const server = await startNats();
  servers.push(server);
  const nc = await connect({ servers: server.url });
  connections.push(nc);
  return { server, nc, kvm: new Kvm(jetstream(nc)) };
}

function seat(runtime: Runtime, args: string[], env: Record<string, string> = {}): Running {
  const running = startBundle(runtime, dir, 'server', args, env);
  seats.push(running);
  return running;
}

/** Opens a bucket once the seat has created it, or null while it is missing. */
async function opened(kvm: Kvm, bucket: string): Promise<KV | null> {
  try {
    const kv = await kvm.open(bucket);
    await kv.status();
    return kv;
  } catch {
    return null;
  }
}

async function valueOf(kv: KV, key: string): Promise<Record<string, unknown> | null> {
  const entry = await kv.get(key);
  return entry && entry.operation === 'PUT' ? (entry.json() as Record<string, unknown>) : null;
}

const server = (args: string[], env: Record<string, string> = {}, ms?: number) => runBundle('node', dir, 'server', args, env, ms);
const linesOf = (text: string) => text.split('\n').filter((l) => l !== '');

test.before(() => {
  ensureBuilt('server');
  dir = copyBundleAlone('server');
});

test.after(async () => {
  for (const s of seats) s.kill();
  for (const nc of connections) await nc.close().catch(() => {});
  for (const s of servers) await s.cleanup();
  cleanupBundles();
});

/** Where the consumers of `stream` deliver, as the server lists them. */
async function deliverSubjects(nc: NatsConnection, stream: string): Promise<string[]> {
  const subjects: string[] = [];
  for await (const c of (await jetstreamManager(nc)).consumers.list(stream)) subjects.push(c.config.deliver_subject ?? '(pull)');
  return subjects;
}

/** Starts the bundle, then creates its input buckets (waited for, DESIGN §3), writes one assignment, and reads the plan. */
async function composesAPlan(runtime: Runtime): Promise<void> {
  assert.not.ok(hasNodeModulesAbove(dir), `${dir} has a node_modules above it`);
  const { server: nats, nc, kvm } = await bus();
  // prom-client bundled in: the figures are served under this runtime too.
  const metricsPort = await freePort();
  const running = seat(runtime, ['--nats', nats.url, '--metrics', `127.0.0.1:${metricsPort}`]);
  try {
    await running.waitForLog(READY, 15_000);
    const modules = await ensureKv(nc, MODULES, 1);
    const assignments = await ensureKv(nc, ASSIGNMENTS, 1);
    await modules.put('web', JSON.stringify(composition('web', '7')));
    await assignments.put('n1.web', JSON.stringify(assignment('n1', 'web', '/srv/web/etc')));

    const plans = await waitFor('the plans bucket', () => opened(kvm, PLANS));
    const plan = await waitFor('the plan n1.web', () => valueOf(plans, 'n1.web'));
    assert.is(plan['build'], '7');
    assert.equal(
      (plan['files'] as { path: string }[]).map((f) => f.path),
      ['/srv/web/etc/web.conf'],
    );
    assert.equal(plan['secrets'], [{ name: 'api-key', vault: 'module/web/api-key' }]);
    // The seat's watch delivers to its own inbox (DESIGN §11: its user subscribes only `_INBOX_seat.>`).
    const delivers = await deliverSubjects(nc, `KV_${ASSIGNMENTS}`);
    assert.ok(delivers.length > 0 && delivers.every((s) => s.startsWith(`${INBOX_PREFIXES.seat}.`)), delivers.join(', '));

    const figures = await waitFor('the plan write counted', async () =>
      ((f) => (f.get('provisioner_plan_writes_total{op="put",result="ok"}') === 1 ? f : undefined))(await scrape(metricsPort)),
    );
    assert.ok((figures.get('provisioner_process_resident_memory_bytes') ?? 0) > 0, "the process's own figures");

    const asked = Date.now();
    running.child.kill('SIGTERM');
    const timer = setTimeout(() => running.kill(), 10_000);
    const { code, signal } = await running.exited;
    clearTimeout(timer);
    assert.is(signal, null, `killed by ${signal}; stderr:\n${running.stderr()}`);
    assert.is(code, 0, running.stderr());
    assert.ok(Date.now() - asked < 10_000);
    assert.is(
      await scrape(metricsPort).then(
        () => 'answered',
        () => 'refused',
      ),
      'refused',
      'the listener closed with the seat',
    );
  } finally {
    running.kill();
  }
}

test('the seat bundle copied alone into an empty directory composes a plan under node and exits 0 on SIGTERM', async () => {
  await composesAPlan('node');
});

test('the seat bundle copied alone into an empty directory composes a plan under deno and exits 0 on SIGTERM', async () => {
  await composesAPlan('deno');
});

test("a seat user that may subscribe only _INBOX_seat.>, the verb, the rollout requests, the alive messages and the node accounts' events serves, composes and answers a query", async () => {
  const nats = await startNats(`authorization { users = [
    { user: seat, password: seat, permissions: { subscribe: ["${INBOX_PREFIXES.seat}.>", "mesh-provisioner.provisioning", "mesh-provisioner.rollout", "prov.alive.*", "$SYS.ACCOUNT.provisioner.*.CONNECT", "$SYS.ACCOUNT.provisioner.*.DISCONNECT"] } },
    { user: test, password: test }
  ] }`);
  servers.push(nats);
  const nc = await connect({ servers: nats.url, user: 'test', pass: 'test' });
  connections.push(nc);
  const kvm = new Kvm(jetstream(nc));
  const login = ['--nats', nats.url, '--user', 'seat', '--password', 'seat'];
  const running = seat('node', login);
  await running.waitForLog(READY, 15_000);
  const assignments = await ensureKv(nc, ASSIGNMENTS, 1);
  await (await ensureKv(nc, MODULES, 1)).put('web', JSON.stringify(composition('web', '7')));
  await assignments.put('n1.web', JSON.stringify(assignment('n1', 'web')));
  const plans = await waitFor('the plans bucket', () => opened(kvm, PLANS));
  assert.is((await waitFor('the plan n1.web', () => valueOf(plans, 'n1.web')))['build'], '7');
  const run = await server(['query', 'registry', ...login]);
  assert.is(run.code, 0, run.stderr + run.stdout);
  assert.match(run.stdout, /mesh-config_resolved/);
  assert.not.match(running.stderr(), /Permissions Violation/i);
});

test('a command given every server of a cluster reaches a live one whichever comes first: one down is no failure; all down names them all', async () => {
  const { server: live } = await bus();
  const dead = `nats://127.0.0.1:${await freePort()}`;
  for (const urls of [`${dead},${live.url}`, `${live.url},${dead}`]) {
    for (let i = 0; i < 3; i++) {
      const run = await server(['config', 'get', 'n1', 'web', 'k', '--nats', urls]);
      // The key is missing (exit 1, said as such): the bus was reached.
      assert.match(run.stderr, /holds no value/, `${urls}: ${run.stderr}`);
      assert.not.match(run.stderr, /cannot reach the bus/, `${urls}: ${run.stderr}`);
    }
  }
  const none = await server(['config', 'get', 'n1', 'web', 'k', '--nats', `${dead},${dead.replace(/\d+$/, String(await freePort()))}`]);
  assert.is(none.code, 1, none.stderr);
  assert.match(none.stderr, /cannot reach the bus at nats:\/\/127\.0\.0\.1:\d+,nats:\/\/127\.0\.0\.1:\d+/);
});

test('--help exits 0 and prints usage naming --nats, --creds, --archives, --replicas and query', async () => {
  const run = await server(['--help']);
  assert.is(run.code, 0, run.stderr);
  assert.match(run.stdout, /usage:/);
  for (const word of ['--nats', '--creds', '--archives', '--replicas', 'query']) assert.ok(run.stdout.includes(word), `--help does not name ${word}`);
  assert.is(run.stderr, '');
});

test('rollout --help prints the rollout command alone: its three forms and its flags, not the seat’s whole help', async () => {
  const run = await server(['rollout', '--help']);
  assert.is(run.code, 0, run.stderr);
  for (const form of ['rollout [MODULE] [--json]', 'rollout resume MODULE', 'rollout abort MODULE', '--json', '--nats'])
    assert.ok(run.stdout.includes(form), `no ${form}`);
  assert.not.match(run.stdout, /--replicas|status flags|query flags/);
});

test('status, query, why, trace, init, publish and bus-config --help each print the command alone: its usage, its flags and, when it reaches the bus, the connection flags', async () => {
  const own: Record<string, string[]> = {
    status: ['status [<node> [<module>]]', '--limit', '--json', '--nkey'],
    query: ['query <registry|needs|applied|collect|health|alive|drift>', '--node', '--collection', '--nkey'],
    why: ['why NODE MODULE [PATH]', '--json', '--nkey'],
    trace: ['trace KEY-PATTERN', '--limit', '--json', '--nkey'],
    init: ['init [--replicas N]', '--nodes', '--provider', '--nkey'],
    publish: ['publish DIR|ARCHIVE', '--composition', '--dry-run', '--nkey'],
    'bus-config': ['bus-config --node NAME', '--credentials', '--leaf-listen', '--out'],
  };
  for (const [command, words] of Object.entries(own)) {
    const run = await server([command, '--help']);
    assert.is(run.code, 0, run.stderr);
    assert.ok(run.stdout.startsWith(`usage: node server.js ${command}`), `${command}: ${run.stdout.slice(0, 200)}`);
    for (const word of words) assert.ok(run.stdout.includes(word), `${command} --help does not name ${word}`);
    // Not the seat's whole help: none of the other commands' sections.
    assert.not.match(run.stdout, /the seat: keeps the registry|rollout flags|assign flags/, command);
  }
  assert.not.match((await server(['bus-config', '--help'])).stdout, /--nkey/, 'bus-config reaches no bus');
});

test('--version exits 0 printing mesh-provisioner and the package version', async () => {
  const run = await server(['--version']);
  assert.is(run.code, 0, run.stderr);
  assert.is(run.stdout, `mesh-provisioner ${VERSION}\n`);
});

test('an unknown flag exits 2 with exactly one stderr line naming it', async () => {
  const run = await server(['--bogus']);
  assert.is(run.code, 2);
  assert.is(linesOf(run.stderr).length, 1, run.stderr);
  assert.match(run.stderr, /--bogus/);
  assert.is(run.stdout, '');
});

test('--replicas 0 exits 2 with one stderr line naming --replicas', async () => {
  const run = await server(['--replicas', '0']);
  assert.is(run.code, 2);
  assert.is(linesOf(run.stderr).length, 1, run.stderr);
  assert.match(run.stderr, /--replicas/);
});

test('--nats without a value exits 2 with one stderr line naming --nats', async () => {
  const run = await server(['--nats']);
  assert.is(run.code, 2);
  assert.is(linesOf(run.stderr).length, 1, run.stderr);
  assert.match(run.stderr, /--nats/);
});

test('MESH_NATS_URL from the environment is used when --nats is absent', async () => {
  const { server: nats, kvm } = await bus();
  const running = seat('node', [], { MESH_NATS_URL: nats.url });
  try {
    assert.match(await running.waitForLog(/connecting to/), nats.url);
    const registry = await waitFor('the registry bucket', () => opened(kvm, REGISTRY_BUCKET));
    const config = await waitFor('the registry entry config', () => valueOf(registry, 'config'));
    assert.is(config['bucket'], 'mesh-config_resolved');
  } finally {
    running.kill();
  }
});

// One seat, under node, answers every query test.
let queried: Promise<{ url: string; kvm: Kvm; nc: NatsConnection }> | undefined;
function querySeat(): Promise<{ url: string; kvm: Kvm; nc: NatsConnection }> {
  queried ??= (async () => {
    const { server: nats, kvm, nc } = await bus();
    await seat('node', ['--nats', nats.url]).waitForLog(READY, 15_000);
    return { url: nats.url, kvm, nc };
  })();
  return queried;
}

test('query registry against a running seat prints a table with the config row and its bucket, and exits 0', async () => {
  const { url } = await querySeat();
  const run = await server(['query', 'registry', '--nats', url]);
  assert.is(run.code, 0, run.stderr + run.stdout);
  const rows = linesOf(run.stdout).map((l) => l.split(/\s+/));
  assert.equal(rows[0]?.slice(0, 2), ['KIND', 'OWNER']);
  const config = rows.find((r) => r[0] === 'config');
  assert.ok(config, run.stdout);
  assert.ok(config.includes('mesh-config_resolved'), run.stdout);
});

test('query needs --json prints one JSON object whose entries hold what the needs bucket holds', async () => {
  const { url, kvm } = await querySeat();
  const needs = await kvm.open(NEEDS);
  const key = needKey('n1', 'web', 'config', 'db.host');
  await needs.put(key, JSON.stringify({ node: 'n1', module: 'web', kind: 'config', name: 'db.host', files: ['/etc/web/web.conf'], met: false }));
  const run = await server(['query', 'needs', '--json', '--nats', url]);
  assert.is(run.code, 0, run.stderr + run.stdout);
  const reply = JSON.parse(run.stdout) as { what: string; entries: { key: string; value: { name: string } }[] };
  assert.is(reply.what, 'needs');
  assert.equal(
    reply.entries.map((e) => [e.key, e.value.name]),
    [[key, 'db.host']],
  );
});

test('query health lists an assignment whose module has no composition as held, as JSON and as a table', async () => {
  const { url, nc } = await querySeat();
  const assignments = await ensureKv(nc, ASSIGNMENTS, 1);
  await ensureKv(nc, MODULES, 1);
  await assignments.put('n1.ghost', JSON.stringify(assignment('n1', 'ghost')));
  const reply = await waitFor(
    'n1.ghost in query health',
    async () => {
      const run = await server(['query', 'health', '--json', '--nats', url]);
      assert.is(run.code, 0, run.stderr + run.stdout);
      const parsed = JSON.parse(run.stdout) as { what: string; entries: { key: string; value: Record<string, unknown> }[]; outOfShape: unknown[] };
      return parsed.entries.length > 0 ? parsed : undefined;
    },
    15_000,
  );
  assert.is(reply.what, 'health');
  assert.equal(
    reply.entries.map((e) => [e.key, e.value['state'], e.value['reason']]),
    [['n1.ghost', 'held', 'composition missing']],
  );
  const table = await server(['query', 'health', '--nats', url]);
  const rows = linesOf(table.stdout).map((l) => l.split(/\s+/));
  assert.equal(rows[0], ['NODE', 'MODULE', 'STATE', 'BUILD', 'SINCE', 'PASSES', 'REASON']);
  assert.equal([rows[1]?.[0], rows[1]?.[1], rows[1]?.[2]], ['n1', 'ghost', 'held']);
});

test('query bogus exits 2 with one stderr line naming it', async () => {
  const run = await server(['query', 'bogus']);
  assert.is(run.code, 2);
  assert.is(linesOf(run.stderr).length, 1, run.stderr);
  assert.match(run.stderr, /bogus/);
});

test('query against an address where nothing listens exits non-zero within 5 s with one stderr line', async () => {
  const run = await server(['query', 'registry', '--nats', 'nats://127.0.0.1:1'], {}, 10_000);
  assert.is(run.signal, null, `still running after 10 s; stderr:\n${run.stderr}`);
  assert.ok(run.code !== 0 && run.code !== null, `exit ${run.code}`);
  assert.ok(run.ms < 5000, `took ${run.ms} ms`);
  assert.is(linesOf(run.stderr).length, 1, run.stderr);
});

test('under systemd (JOURNAL_STREAM set) every log line starts with an sd-daemon priority prefix', async () => {
  const { server: nats } = await bus();
  const running = seat('node', ['--nats', nats.url], { JOURNAL_STREAM: '1' });
  try {
    await running.waitForLog(READY, 15_000);
    running.child.kill('SIGTERM');
    assert.is((await running.exited).code, 0, running.stderr());
    const lines = linesOf(running.stderr());
    assert.ok(lines.length >= 3, running.stderr());
    for (const line of lines) assert.match(line, /^<[3-7]>\S/, `no priority prefix: ${line}`);
    assert.ok(lines.includes('<6>seat ready'), running.stderr());
  } finally {
    running.kill();
  }
});

test('outside systemd log lines carry a time and a level instead of a priority prefix', async () => {
  const { url } = await querySeat();
  const running = seats.find((s) => s.stderr().includes(url))!;
  const lines = linesOf(running.stderr());
  assert.ok(lines.length >= 2, running.stderr());
  for (const line of lines) assert.match(line, /^\d{4}-\d\d-\d\dT\S+Z (error|warning|notice|info|debug) /, line);
});

test('a reader that stops reading (`| head -1`) ends the command with its own code and no stack, not an unhandled EPIPE', async () => {
  const dir = copyBundleAlone('server');
  const nodes = Array.from({ length: 50 }, (_, i) => ['--node', `n${i}`]).flat();
  const child = spawn(process.execPath, [join(dir, 'server.js'), 'bus-config', ...nodes, '--credentials', join(dir, 'credentials')], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  // As `head -1` does: the first chunk read, then the pipe closed.
  child.stdout.once('data', () => child.stdout.destroy());
  const code = await new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
  assert.is(code, 0, stderr);
  assert.not.match(stderr, /EPIPE|Node\.js v|    at /);
});

test.run();
