// One worker process of bench/fleet.ts: runs a share of the fleet, either as real node clients (the
// client's own startNodeClient, each node on its own connection, inbox prefix and fill socket, with
// a confirming engine stub behind every socket) or as plain watchers (the floor, bench/fleet-floor.ts:
// the same node's plans and values watched with nats.js's own KV watch on their own connection, a
// changed plan's archive fetched, nothing filled). What each engine or watcher sees goes
// to the parent in batches, stamped with the wall clock both processes share.
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { Server } from 'node:net';
import type { NatsConnection } from '@nats-io/transport-node';
import { connectBus } from '../src/shared/bus/bus.ts';
import { INBOX_PREFIXES } from '../src/shared/bus/inbox.ts';
import { createLogger } from '../src/shared/cli/log.ts';
import type { Watch } from '../src/shared/bus/watch/types.ts';
import { createEngineClient, type EngineClient } from '../src/client/handoff/fill-socket.ts';
import { startNodeClient, type NodeClient } from '../src/client/node.ts';
import { startAlive, type AliveTick } from '../src/client/alive/alive.ts';
import { EngineWatch } from '../src/client/alive/engine-state.ts';
import { DEFAULT_ALIVE_SECONDS } from '../src/shared/contract/alive.ts';
import { fakeEngine } from './lib.ts';
import { startFloorWatcher, type FloorBuckets } from './fleet-floor.ts';
import { USERS } from '../src/server/commands/bus-config/users.ts';
import { seedFile } from '../src/server/commands/bus-config/credentials.ts';

/** What the parent asks of a worker. */
export type WorkerCommand =
  | {
      type: 'clients';
      url: string;
      nodes: string[];
      dir: string;
      /** Clients started at once (0: all, the herd). */
      atOnce: number;
      /** On a bus `bus-config` generated: the seeds' directory, each client logging in as its own node. */
      credentials?: string;
    }
  | {
      type: 'floor';
      url: string;
      nodes: string[];
      /** The buckets watched, and the build whose archive each watcher fetches. */
      buckets: FloorBuckets;
      /** Watchers started at once, as the clients are. */
      atOnce: number;
    }
  | { type: 'loop-delay' }
  | { type: 'stop' };

/** One thing seen: a node, a module (or a floor key), a short text that says which version, and when (wall-clock ms). */
export type Seen = [node: string, what: string, text: string, at: number];

/** What a worker tells the parent. */
export type WorkerEvent =
  | { type: 'seen'; seen: Seen[] }
  | { type: 'started'; count: number }
  | { type: 'loop-delay'; p99: number; max: number }
  | { type: 'stopped' }
  | { type: 'error'; text: string };

/** Wall-clock milliseconds with sub-millisecond resolution, comparable across the bench's processes. */
export const wallNow = (): number => performance.timeOrigin + performance.now();

const send = (e: WorkerEvent) => process.send!(e);
let batch: Seen[] = [];
let flushing: NodeJS.Timeout | undefined;

/** Queues one sighting; the batch goes every 20 ms, so thousands of fills cost the parent a few messages. */
function seen(s: Seen): void {
  batch.push(s);
  flushing ??= setTimeout(() => {
    flushing = undefined;
    const out = batch;
    batch = [];
    send({ type: 'seen', seen: out });
  }, 20);
}

// Many clients share this process's event loop where each node has its own: how late it ran says how much of a
// figure is the bench's own crowding (a watch's heartbeat read late looks missed).
const loop = monitorEventLoopDelay({ resolution: 10 });
loop.enable();

// MESH_BENCH_WORKER_LOG=info|debug says more of what the clients do (warn by default: a fleet's lines are many).
const least = (['debug', 'info', 'notice'] as const).find((l) => l === process.env['MESH_BENCH_WORKER_LOG']) ?? 'warn';
const logOf = (who: string) => createLogger({ prefix: false, least, write: (line) => process.stderr.write(`fleet worker ${process.pid} ${who}: ${line}\n`) });
const log = logOf('');
const connections: NatsConnection[] = [];
const clients: NodeClient[] = [];
const alives: AliveTick[] = [];
const engines: EngineClient[] = [];
const stubs: Server[] = [];
const watches: Watch[] = [];

/**
 * Connects as `node`; given several URLs (a cluster, comma-separated), each node to one of them by
 * its number; given `credentials`, with the node's own nkey seed there.
 */
const connectAs = (url: string, node: string, role: string, credentials?: string) => {
  const urls = url.split(',');
  const server = urls[Number(node.replace(/\D/g, '')) % urls.length]!;
  const nkey = credentials ? { nkey: seedFile(credentials, USERS.client(node)) } : {};
  return connectBus({ servers: [server], name: `${role} ${node}`, inboxPrefix: INBOX_PREFIXES.node(node), ...nkey }).then((nc) => (connections.push(nc), nc));
};

/** Starts a node's engine stub and its client; every fill the stub confirms is reported with its files' text. */
async function startNode(url: string, node: string, dir: string, credentials: string | undefined): Promise<void> {
  const socket = join(dir, `${node}.sock`);
  stubs.push(
    await fakeEngine(socket, (req) => {
      const text = req.files.map((f) => (typeof f.content === 'string' ? f.content : '')).join('');
      seen([node, req.module, text, wallNow()]);
    }),
  );
  const nodeLog = logOf(node);
  nodeLog.debug('connecting');
  const nc = await connectAs(url, node, 'node-provisioner', credentials);
  nodeLog.debug('connected');
  const engine = createEngineClient({ socketPath: socket, log: nodeLog });
  engines.push(engine);
  const engineWatch = new EngineWatch(engine, Date.now);
  const client = await startNodeClient({
    nc,
    node,
    engine,
    log: nodeLog,
    inboxPrefix: INBOX_PREFIXES.node(node),
    cacheDir: join(dir, `cache-${node}`),
    settleMs: 0,
  });
  clients.push(client);
  // As client.ts does once a client is ready: its alive message every 30 s (DESIGN §14), a node's share of the idle bus.
  alives.push(
    startAlive({
      nc,
      node,
      version: 'bench',
      everyMs: DEFAULT_ALIVE_SECONDS * 1000,
      engine: engineWatch,
      modules: () => client.modules().length,
      log: nodeLog,
    }),
  );
}

/**
 * A plain watcher of a node's plans and values (the floor, bench/fleet-floor.ts), on its own
 * connection. One that never comes up is said (`floor-failed`) and counted missing, not the run's end.
 */
async function startWatcher(url: string, node: string, buckets: FloorBuckets): Promise<void> {
  try {
    await startFloorWatcher(await connectAs(url, node, 'floor'), node, buckets, { seen, watches });
  } catch (err) {
    seen([node, 'floor-failed', String((err as Error).message ?? err), wallNow()]);
  }
}

/** Runs `fn` on every item, at most `limit` at once; resolves with how many ran. */
async function atMost<T>(limit: number, items: T[], fn: (item: T) => Promise<void>): Promise<number> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) await fn(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return items.length;
}

async function stop(): Promise<void> {
  for (const a of alives) a.stop();
  for (const w of watches) w.stop();
  await Promise.all(clients.map((c) => c.stop().catch(() => {})));
  for (const e of engines) e.close();
  for (const s of stubs) s.close();
  await Promise.all(connections.map((nc) => nc.close().catch(() => {})));
  send({ type: 'stopped' });
  setTimeout(() => process.exit(0), 50);
}

process.on('message', (cmd: WorkerCommand) => {
  const started =
    cmd.type === 'clients'
      ? atMost(cmd.atOnce || cmd.nodes.length, cmd.nodes, (n) => startNode(cmd.url, n, cmd.dir, cmd.credentials))
      : cmd.type === 'floor'
        ? atMost(cmd.atOnce || cmd.nodes.length, cmd.nodes, (n) => startWatcher(cmd.url, n, cmd.buckets))
        : undefined;
  if (cmd.type === 'loop-delay') return send({ type: 'loop-delay', p99: loop.percentile(99) / 1e6, max: loop.max / 1e6 });
  if (!started) return void stop();
  started.then(
    (count) => send({ type: 'started', count }),
    (err: unknown) => send({ type: 'error', text: String((err as Error).stack ?? err) }),
  );
});
