// Faults on a three-server cluster (DESIGN §10 `--replicas`, issue 13): the seat with --replicas 3, the
// client and the reference engine as their bundles, every bucket kept on all three servers. Each test
// kills one server with SIGKILL — the leader of a bucket, or the server the client is connected to —
// and proves that a config change reaches the engine within 2 s (plus a margin) of the bus failing
// over (taking writes and making consumers again), that the seat still composes, and that no report
// or need is lost. Each case prints its figures (docs/reliability.md keeps two runs').
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { connectBus } from '../src/shared/bus/bus.ts';
import { jsonBytes } from '../src/shared/base/bytes.ts';
import { APPLIED, ASSIGNMENTS, CONFIG, DEFAULT_ARCHIVES, MODULES, PLANS, SEAT_BUCKETS } from '../src/shared/contract/buckets.ts';
import { contentDigest } from '../src/shared/contract/fill-protocol.ts';
import { needKey, nodeModuleKey } from '../src/shared/contract/keys.ts';
import type { Report } from '../src/shared/contract/report.ts';
import { publishModule } from './helpers/archive.ts';
import { consumerUntilMade, FAILOVER_MS, putUntilAcked } from './helpers/failover.ts';
import { cleanupBundles, ensureBuilt, type Running } from './helpers/bundle.ts';
import { createInputBuckets, startSeatProcess, waitForSeat, type InputBuckets, type RunningSeat, type SeatBuckets } from './helpers/mesh-bus.ts';
import { createMeshNode, placementUnder, type MeshNode } from './helpers/mesh-node.ts';
import {
  serverOfConnection,
  startNatsCluster,
  streamLeader,
  waitForMetaLeader,
  waitForStreamReplicas,
  type ClusterServer,
  type NatsCluster,
} from './helpers/nats-cluster.ts';
import { waitFor } from './helpers/wait.ts';
import { tempDir } from './helpers/temp.ts';

/**
 * The goal of issue 13: a change reaches the engine within the bus's own failover and this. The
 * failover is when the bus both takes a write and makes a consumer again: a watch whose consumer went
 * with the killed server can be made again no sooner, however soon writes are taken.
 */
const GOAL_MS = 2000;
/**
 * The margin on top of GOAL_MS. Between the ack and the file: the client's watch delivers (a few ms
 * when its consumer lives), the fill, the socket, the engine's write and fsync, and this suite's
 * 20 ms polling — on a 2-core machine where three nats-servers catch up a restarted peer and other
 * suites run at the same time; a process stalled for a second here is not rare.
 */
const MARGIN_MS = 1000;
/** Every stream the mesh keeps. */
const STREAMS = [CONFIG, ASSIGNMENTS, MODULES, ...SEAT_BUCKETS].map((b) => `KV_${b}`);
const NODE = 'n1';
const MODULE = 'web';
const CLIENT_CONNECTION = `node-provisioner ${NODE}`;

type Running3 = {
  cluster: NatsCluster;
  nc: NatsConnection;
  dir: string;
  seat: RunningSeat;
  kv: InputBuckets & SeatBuckets;
  node: MeshNode;
  client: Running;
};

let m: Running3 | undefined;
/** Why the mesh did not start: uvu swallows a before hook's throw, so each test says it instead. */
let startError: unknown;
/** What was started, undone newest first. */
const undo: (() => unknown)[] = [];
let value = 0;

function mesh(): Running3 {
  if (!m) throw new Error(`the cluster mesh did not start: ${(startError as Error | undefined)?.stack ?? startError}`);
  return m;
}

async function startClusterMesh(): Promise<Running3> {
  ensureBuilt('client');
  ensureBuilt('server');
  ensureBuilt('engine');
  const cluster = await startNatsCluster();
  undo.push(() => cluster.cleanup());
  const dir = tempDir('mesh-faults-cluster-');
  undo.push(() => rmSync(dir, { recursive: true, force: true }));
  const nc = await connectBus({ servers: cluster.urls, name: 'test' });
  undo.push(() => nc.close());
  const seat = startSeatProcess(cluster.urls.join(','), { args: ['--replicas', '3', '--debug'] });
  undo.push(() => seat.stop());
  const inputs = await createInputBuckets(nc, 3);
  const seatKv = await waitForSeat(nc, seat, 30_000);
  const archiveDir = join(dir, 'archives');
  mkdirSync(archiveDir);
  const node = createMeshNode({ name: NODE, dir: join(dir, NODE), url: cluster.urls.join(','), archiveDir });
  undo.push(() => node.stop());
  node.startEngineProcess();
  const client = node.startClientProcess({ args: ['--settle', '0', '--debug'] });
  const kv = { ...inputs, ...seatKv };
  // A put right after the seat made the buckets can find a replica not yet current and go unanswered.
  await Promise.all([...STREAMS, `OBJ_${DEFAULT_ARCHIVES}`].map((s) => waitForStreamReplicas(nc, s, 3)));
  await publishModule(kv.modules, { store: kv.archives, bucket: DEFAULT_ARCHIVES }, MODULE, {
    templates: { 'web.conf': 'value ${config:v}\n' },
    provisioning: { files: [{ path: '${dir:config}/web.conf', template: 'web.conf', change: 'restart' }] },
  });
  await kv.config.put(`${NODE}.${MODULE}.v`, 'v0');
  await kv.assignments.put(nodeModuleKey(NODE, MODULE), JSON.stringify({ node: NODE, module: MODULE, placement: placementUnder(node.root, MODULE) }));
  const started = { cluster, nc, dir, seat, kv, node, client };
  await waitFor('the first fill', () => node.moduleFile(MODULE) === 'value v0\n', 30_000).catch((err) => explain(err, started));
  return started;
}

test.before(async () => {
  try {
    m = await startClusterMesh();
  } catch (err) {
    startError = err;
  }
});

test.after(async () => {
  for (const close of undo.splice(0).reverse())
    await Promise.resolve()
      .then(close)
      .catch(() => {});
  cleanupBundles();
});

test('every bucket of the mesh keeps three copies, one on each server', async () => {
  const jsm = await jetstreamManager(mesh().nc);
  for (const stream of STREAMS) {
    const info = await jsm.streams.info(stream);
    assert.is(info.config.num_replicas, 3, stream);
    assert.is(info.cluster?.replicas?.length, 2, stream);
  }
});

/** Rethrows `err` with the tail of what the client and the seat said. */
function explain(err: unknown, running: Pick<Running3, 'client' | 'seat'> | undefined = m): never {
  const client = running?.client.stderr().split('\n').slice(-60).join('\n') ?? '';
  const seat = running?.seat.said().split('\n').slice(-20).join('\n') ?? '';
  throw new Error(`${(err as Error).message}\n--- client said:\n${client}\n--- seat said:\n${seat}`);
}

/** The module's report as stored, or null. */
async function storedReport(): Promise<Report | null> {
  const e = await mesh().kv.applied.get(nodeModuleKey(NODE, MODULE));
  return e && e.operation === 'PUT' ? (e.json() as Report) : null;
}

/** Waits until every stream has a leader and all three copies current (after a restart, a peer catches up). */
async function clusterWhole(): Promise<void> {
  const { cluster, nc } = mesh();
  await waitForMetaLeader(cluster.servers);
  await Promise.all(STREAMS.map((s) => waitForStreamReplicas(nc, s, 3)));
}

/** What one case measured, in ms from the kill: writes taken again, consumers made again, the file at the engine. */
type Figures = { writesMs: number; consumersMs: number; engineMs: number };

/** When the bus had failed over: it took writes and made consumers again. */
const failedOver = (f: Figures) => Math.max(f.writesMs, f.consumersMs);

const seconds = (ms: number) => (ms / 1000).toFixed(1);

/**
 * Kills the server `pick` names, then at once: puts a new config value until the bus acks it, asks
 * for a consumer until one is made (together, the failover), waits for the engine's file to hold the
 * value, assigns a module to a new node and waits for its plan, and waits for the report `applied`
 * with the file's digest and the need met. Restarts the server after, whatever happened.
 */
async function killAndFollow(what: string, pick: () => Promise<string>): Promise<Figures> {
  const { cluster, nc, kv, node } = mesh();
  await clusterWhole();
  const victim: ClusterServer = cluster.named(await pick());
  const v = `v${++value}`;
  const expected = `value ${v}\n`;
  try {
    const clientSaid = mesh().client.stderr().length;
    const seatSaid = mesh().seat.said().length;
    const killedAt = Date.now();
    if (process.env['MESH_TEST_VERBOSE']) console.log(`# kill ${victim.name} at ${new Date(killedAt).toISOString()}`);
    await victim.kill();
    // The controller assigns a module to a new node while the bus fails over: the seat must compose it.
    const other = `p${value}`;
    const assigned = putUntilAcked(
      nc,
      ASSIGNMENTS,
      nodeModuleKey(other, MODULE),
      jsonBytes({ node: other, module: MODULE, placement: placementUnder('/srv', MODULE) }),
    );
    assigned.catch(() => {}); // awaited below, once the change is at the engine
    const made = consumerUntilMade(nc, `KV_${CONFIG}`);
    made.catch(() => {}); // awaited below, once the write is in
    const atEngine = waitFor(`the engine's file holding ${v}`, () => node.moduleFile(MODULE) === expected, FAILOVER_MS).then(() => Date.now(), explain);
    atEngine.catch(() => {}); // awaited below, once the write is in
    const ackedAt = await putUntilAcked(nc, CONFIG, `${NODE}.${MODULE}.v`, new TextEncoder().encode(v));
    const figures: Figures = { writesMs: ackedAt - killedAt, consumersMs: (await made) - killedAt, engineMs: (await atEngine) - killedAt };
    if (process.env['MESH_TEST_VERBOSE'])
      console.log(`--- client since the kill:\n${mesh().client.stderr().slice(clientSaid)}\n--- seat since the kill:\n${mesh().seat.said().slice(seatSaid)}`);
    console.log(
      `# ${what} (${victim.name}) killed: the bus took writes after ${seconds(figures.writesMs)} s and made consumers after ${seconds(figures.consumersMs)} s; ` +
        `the change at the engine ${seconds(figures.engineMs - figures.writesMs)} s after the write was taken, ${seconds(figures.engineMs - failedOver(figures))} s after both`,
    );

    await assigned;
    await waitFor(
      `the plan of ${other}.${MODULE}`,
      async () => (await kv.plans.get(nodeModuleKey(other, MODULE)).catch(() => null))?.operation === 'PUT',
      FAILOVER_MS,
    ).catch(explain);

    // Nothing lost: the report ends applied with the last value's digest, and the need is there, met.
    const digest = contentDigest(expected);
    await waitFor(
      'the report applied with the last value’s digest',
      async () => {
        const r = await storedReport().catch(() => null);
        return r?.state === 'applied' && r.files.length === 1 && r.files[0]!.digest === digest;
      },
      FAILOVER_MS,
    ).catch(explain);
    const need = await kv.needs.get(needKey(NODE, MODULE, 'config', 'v'));
    assert.ok(need?.operation === 'PUT', 'the need of config v is there');
    assert.is((need!.json() as { met: boolean }).met, true);
    return figures;
  } finally {
    await victim.restart();
  }
}

function assertWithinGoal(f: Figures): void {
  const after = f.engineMs - failedOver(f);
  assert.ok(
    after <= GOAL_MS + MARGIN_MS,
    `the change reached the engine ${after} ms after the bus failed over (writes ${f.writesMs} ms, consumers ${f.consumersMs} ms after the kill; goal ${GOAL_MS} ms + ${MARGIN_MS} ms margin)`,
  );
}

test('losing the server leading mesh-config_resolved: the change reaches the engine within 2 s of the bus failing over, and nothing is lost', async () => {
  assertWithinGoal(await killAndFollow('the leader of KV_mesh-config_resolved', () => streamLeader(mesh().nc, `KV_${CONFIG}`)));
});

test('losing the server leading mesh-provisioner_plans: the seat composes a new assignment and the change still reaches the engine in time', async () => {
  assertWithinGoal(await killAndFollow('the leader of KV_mesh-provisioner_plans', () => streamLeader(mesh().nc, `KV_${PLANS}`)));
});

test('losing the server leading mesh-provisioner_applied: the report put that found no leader is written again, ending applied', async () => {
  assertWithinGoal(await killAndFollow('the leader of KV_mesh-provisioner_applied', () => streamLeader(mesh().nc, `KV_${APPLIED}`)));
});

test('losing the server the client is connected to: the client reconnects, re-makes its watches and takes the change in time', async () => {
  assertWithinGoal(
    await killAndFollow('the client’s server', async () => {
      const name = await serverOfConnection(mesh().cluster.servers, CLIENT_CONNECTION);
      if (!name) throw new Error(`no server lists the connection ${CLIENT_CONNECTION}`);
      return name;
    }),
  );
});

test.run();
