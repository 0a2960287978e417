// A fleet through a server's loss (issue 22): N real node clients (bench/fleet-worker.ts) on a
// cluster of three nats-servers, R3 buckets made by `init --replicas 3 --nodes N`, the seat bundle.
// Once every module is applied, a server is killed (SIGKILL) and at once one config value is put
// per node: how long until every engine has it, whether the watches' re-makes stay bounded (the
// consumers a node holds before, 30 s after, and the most any stream then holds against its
// max_consumers), and the watches said made again. docs/scale.md keeps the figures.
//
//   npm run bench -- fleet-failover [--nodes 100] [--phase-s 60] [--isolated]
//
// --isolated runs it on the bus `bus-config` generates, as an operator's is: each server's
// configuration includes the generated one, `init` runs with the admin seed, the seat with its own,
// and every client logs in as its node (which may not delete a consumer it replaces: the server
// does, after its inactivity threshold, so the consumers counted are those a fleet really holds).
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { AckPolicy, jetstreamManager } from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import { connectBus } from '../src/shared/bus/bus.ts';
import { USERS } from '../src/server/commands/bus-config/users.ts';
import { seedFile } from '../src/server/commands/bus-config/credentials.ts';
import { CONFIG } from '../src/shared/contract/buckets.ts';
import { maxConsumersFor } from '../src/shared/contract/bucket-spec.ts';
import { generatedServerConfig, startNatsCluster, waitForMetaLeader } from '../test/helpers/nats-cluster.ts';
import { bytes, loadFleet, MODULES_N, nodeName, putAll } from './fleet-load.ts';
import { startPool } from './fleet-pool.ts';
import { spreadOf } from './fleet-rows.ts';
import { wallNow } from './fleet-worker.ts';
import { numberArg, ROOT } from './lib.ts';
import { startSeatProcess } from './seat-lib.ts';
import { tempDir } from '../test/helpers/temp.ts';

const N = numberArg('nodes', 100);
const PHASE_MS = numberArg('phase-s', 60) * 1000;
const ISOLATED = process.argv.includes('--isolated');

/** Runs dist/server.js with `args`; throws with what it said unless it exits 0. */
function server(args: string[]): SpawnSyncReturns<string> {
  const run = spawnSync(process.execPath, [join(ROOT, 'dist/server.js'), ...args], { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`server.js ${args[0]}: ${run.stderr}`);
  return run;
}

/**
 * The cluster of three; with --isolated, each server on what `bus-config` generates for it
 * (deploy/README.md), every server's from the same seeds.
 */
async function startFleetCluster(nodes: string[], dir: string): Promise<{ cluster: Awaited<ReturnType<typeof startNatsCluster>>; credentials?: string }> {
  if (!ISOLATED) return { cluster: await startNatsCluster() };
  const credentials = join(dir, 'credentials');
  const cluster = await startNatsCluster({ config: generatedServerConfig((args) => void server(['bus-config', ...args]), nodes, credentials) });
  return { cluster, credentials };
}

/** Consumers on each stream, counted through the JetStream API (the whole cluster's). */
async function consumersOfCluster(jsm: Awaited<ReturnType<typeof jetstreamManager>>): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for await (const s of jsm.streams.list()) out.set(s.config.name, s.state.consumer_count);
  return out;
}

const perNode = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0) / N;

async function main(): Promise<void> {
  const dir = tempDir('mesh-fleet-failover-');
  const nodes = Array.from({ length: N }, (_, i) => nodeName(i));
  const { cluster, credentials } = await startFleetCluster(nodes, dir);
  const urls = cluster.urls.join(',');
  const as = (user: string) => (credentials ? ['--nkey', seedFile(credentials, user)] : []);
  server(['init', '--nodes', String(N), '--replicas', '3', '--nats', urls, ...as(USERS.admin)]);
  const seat = startSeatProcess(urls, [], undefined, as(USERS.seat));
  // The bench writes the inputs and reads the streams as the admin login would.
  const nc = await connectBus({ servers: cluster.urls, name: 'bench-failover', ...(credentials ? { nkey: seedFile(credentials, USERS.admin) } : {}) });
  const jsm = await jetstreamManager(nc, { timeout: 30_000 });
  const pool = await startPool(Math.ceil(N / 100));
  try {
    await loadFleet(nc, nodes);
    const cold = Array.from({ length: MODULES_N }, (_, j) => pool.firstOf(nodes, (what) => what === `m${j}`, PHASE_MS));
    const t0 = wallNow();
    // Each client to one of the three servers (the worker spreads them), as a fleet's would be.
    await Promise.race([
      pool.start(nodes, (share) => ({ type: 'clients', url: urls, nodes: share, dir, atOnce: 0, ...(credentials ? { credentials } : {}) })),
      Promise.all(cold),
    ]);
    const coldMs = Math.max(...(await Promise.all(cold)).map((c) => spreadOf(c, t0, N).max));
    await new Promise((r) => setTimeout(r, 3000));
    const before = await consumersOfCluster(jsm);
    const victim = cluster.servers[1]!;
    const burst = pool.firstOf(nodes, (what, text) => what === 'm1' && text.includes('value after'), PHASE_MS);
    const killedAt = wallNow();
    await victim.kill();
    // When the bus makes consumers again (a new meta leader, a live peer chosen): asked as the faults-cluster test asks.
    const makes = (async () => {
      const quick = await jetstreamManager(nc, { timeout: 1000, checkAPI: false });
      for (;;) {
        const made = await quick.consumers.add(`KV_${CONFIG}`, { ack_policy: AckPolicy.None, inactive_threshold: nanos(5000) }).then(
          () => true,
          () => false,
        );
        if (made) return wallNow();
      }
    })();
    // Put again, whole, until every put is acked: a stream whose leader was killed takes none until it has another.
    for (;;) {
      const acked = await putAll(
        nc,
        CONFIG,
        nodes.map((n) => [`${n}.m1.a`, bytes('after')] as [string, Uint8Array]),
      ).then(
        () => true,
        () => false,
      );
      if (acked) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    const writtenAt = wallNow();
    const failedOver = Math.max(writtenAt, await makes);
    const spread = spreadOf(await burst, killedAt, N);
    await new Promise((r) => setTimeout(r, 30_000));
    const after = await consumersOfCluster(jsm);
    const bound = maxConsumersFor(N);
    const fullest = Math.max(...after.values());
    console.log(
      `fleet through a server's loss: ${N} clients on 3 servers${ISOLATED ? ' of the generated bus, each on its own nkey' : ''} (all started at once: every module applied in ${(coldMs / 1000).toFixed(1)} s), ${new Date().toISOString().slice(0, 10)}`,
    );
    console.log(
      `  a server SIGKILLed, one config put per node at once: every put acked ${((writtenAt - killedAt) / 1000).toFixed(1)} s after the kill, a consumer made again after ${((failedOver - killedAt) / 1000).toFixed(1)} s (the bus failed over)`,
    );
    console.log(
      `  every engine had its value: p50 ${(spread.p50 / 1000).toFixed(2)} s · p99 ${(spread.p99 / 1000).toFixed(2)} s · max ${(spread.max / 1000).toFixed(2)} s after the kill (the last ${((spread.max - (failedOver - killedAt)) / 1000).toFixed(2)} s after the bus failed over); ${spread.missing} nodes never within ${PHASE_MS / 1000} s`,
    );
    console.log(
      `  consumers a node: ${perNode(before).toFixed(1)} before, ${perNode(after).toFixed(1)} 30 s after; the fullest stream ${fullest} of its max_consumers ${bound}`,
    );
    await victim.restart();
    await waitForMetaLeader(cluster.servers);
  } finally {
    await pool.stop();
    await seat.stop();
    await nc.close();
    await cluster.cleanup();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
