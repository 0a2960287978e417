// Issue 31 item 6: a watch made just after a stream's leader was killed waited for ever for its first
// consumer. nats-server 2.9's meta leader places a new consumer on a random peer of its stream and
// counts a killed server online long after (still 35 s), so about one create in three lands on the
// dead server and is never answered; asked again under the same name it goes to the same placement.
// The reproduction, round after round on three-server clusters of the bus `bus-config` generates: the
// leader of mesh-config_resolved (R3, from `init --replicas 3`) is killed with SIGKILL, a new value is
// put until acked, and 2 s after the kill, on new connections to the live servers, two watches log in
// as the node, a node's direct get reads the key, and `server.js config get` (the bundle, the admin's
// seed) reads the module whole. Each is ready within the bus's failover + 2 s, and so is a watch that
// ran before the kill (a client's); the acked value is what a direct get reads once the put is acked.
// Then the server is restarted, caught up, and the next round begins. The rounds run on CLUSTERS
// clusters side by side: a round waits mostly for nats-server's elections (4–9 s), not for CPU, so
// more clusters of fewer rounds each take less time for the same 21 rounds — up to a point, where
// the clusters' own work delays the reads the test times.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { Kvm } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { connectBus } from '../src/shared/bus/bus.ts';
import { CONFIG } from '../src/shared/contract/buckets.ts';
import { INBOX_PREFIXES } from '../src/server/commands/bus-config/config.ts';
import { USERS } from '../src/server/commands/bus-config/users.ts';
import { seedFile } from '../src/server/commands/bus-config/credentials.ts';
import { watchKv } from '../src/shared/bus/watch/watch.ts';
import type { Watch } from '../src/shared/bus/watch/types.ts';
import { busConfigOut } from './helpers/bus-config-run.ts';
import { cleanupBundles, copyBundleAlone, ensureBuilt, runBundle } from './helpers/bundle.ts';
import { consumerUntilMade, FAILOVER_MS, putUntilAcked } from './helpers/failover.ts';
import { waitFor } from './helpers/wait.ts';
import { generatedServerConfig, startNatsCluster, streamLeader, waitForMetaLeader, waitForStreamReplicas, type NatsCluster } from './helpers/nats-cluster.ts';
import { tempDir } from './helpers/temp.ts';

/** The issue's goal: every read and watch ready within the bus's failover and this. */
const GOAL_MS = 2000;
/**
 * The rounds, 21 in all, dealt to the clusters side by side, each running its share in a row. Five
 * clusters (48 s on a quiet machine; three took 65–70 s): seven took 36 s but missed the goal by 44
 * ms once at load 6.7 from work beside the run. The worst time past the failover is noisy — 0.64
 * and 1.35 s on three clusters, 1.55 s on five, 1.27 and 1.40 s on seven — against the goal's 2 s.
 */
const ROUNDS = 21;
const CLUSTERS = 5;
/** When after the kill the fresh reads and watches start, as in the reproduction. */
const FRESH_AFTER_MS = 2000;
const NODE = 'n1';
const KEY = `${NODE}.web.v`;
const STREAM = `KV_${CONFIG}`;

/** One cluster of the generated bus, with the admin's connection and a node's watch that runs throughout. */
type Bus = {
  cluster: NatsCluster;
  credentials: string;
  admin: NatsConnection;
  node: NatsConnection;
  running: Watch;
  /** The values the running watch saw, with when. */
  seen: Map<string, number>;
  /** What the running watch said: its log lines, with when. */
  said: { at: number; line: string }[];
};

const dirs: string[] = [];
const buses: Bus[] = [];
let serverDir = '';

/** A cluster of the generated bus (its servers only: startBus makes the rest). */
async function startCluster(): Promise<Pick<Bus, 'cluster' | 'credentials'>> {
  const dir = tempDir('mesh-watch-failover-');
  dirs.push(dir);
  const credentials = join(dir, 'credentials');
  const cluster = await startNatsCluster({ config: generatedServerConfig((args) => void busConfigOut(args), [NODE], credentials) });
  return { cluster, credentials };
}

/** `init --replicas 3` on the cluster, the admin's connection, a value, and a node's watch running since. */
async function startBus({ cluster, credentials }: Pick<Bus, 'cluster' | 'credentials'>): Promise<Bus> {
  const bus = { cluster, credentials } as Bus;
  buses.push(bus);
  const urls = cluster.urls.join(',');
  const init = await runBundle(
    'node',
    serverDir,
    'server',
    ['init', '--replicas', '3', '--nodes', '1', '--nats', urls, '--nkey', seedFile(credentials, USERS.admin)],
    {},
    60_000,
  );
  assert.is(init.code, 0, init.stderr);
  bus.admin = await connectBus({ servers: cluster.urls, name: 'admin', nkey: seedFile(credentials, USERS.admin), inboxPrefix: INBOX_PREFIXES.admin });
  await waitForStreamReplicas(bus.admin, STREAM, 3);
  await putUntilAcked(bus.admin, CONFIG, KEY, new TextEncoder().encode('v0'));
  bus.node = await nodeConnection(bus, cluster.urls, 'running');
  bus.seen = new Map();
  bus.said = [];
  const say = (level: string) => (line: string) => void bus.said.push({ at: Date.now(), line: `${level} ${line}` });
  const log = { warn: say('warn'), notice: say('notice'), debug: say('debug') };
  bus.running = await watchKv(bus.node, CONFIG, `${NODE}.>`, (e) => e.value && bus.seen.set(new TextDecoder().decode(e.value), Date.now()), log);
  await bus.running.caughtUp;
  return bus;
}

/** A connection logged in as the node, as its client's is. */
function nodeConnection(bus: Pick<Bus, 'credentials'>, servers: string[], name: string): Promise<NatsConnection> {
  return connectBus({ servers, name, nkey: seedFile(bus.credentials, USERS.client(NODE)), inboxPrefix: INBOX_PREFIXES.node(NODE) });
}

/** What one fresh read or watch did: when it was ready (ms since the epoch), and what it read. */
type Fresh = { what: string; readyAt: number; value?: string; said?: string };

/** A watch of the node's keys on a new connection to `url`: ready once caught up (begun, every stored value delivered). */
async function freshWatch(bus: Bus, url: string, what: string, closers: (() => unknown)[]): Promise<Fresh> {
  const nc = await nodeConnection(bus, [url], what);
  closers.push(() => nc.close());
  let value: string | undefined;
  const watch = await watchKv(nc, CONFIG, `${NODE}.>`, (e) => void (e.key === KEY && e.value && (value = new TextDecoder().decode(e.value))));
  closers.push(() => watch.stop());
  await watch.caughtUp;
  return { what, readyAt: Date.now(), value };
}

/** A node's direct get of the key on a new connection to `url`. */
async function freshGet(bus: Bus, url: string, what: string, closers: (() => unknown)[]): Promise<Fresh> {
  const nc = await nodeConnection(bus, [url], what);
  closers.push(() => nc.close());
  const entry = await (await new Kvm(nc).open(CONFIG, { allow_direct: true })).get(KEY);
  return { what, readyAt: Date.now(), value: entry ? entry.string() : undefined };
}

/** `server.js config get n1 web` given only `url`: the command's whole-module read. */
async function freshCommand(bus: Bus, url: string, what: string): Promise<Fresh> {
  const run = await runBundle(
    'node',
    serverDir,
    'server',
    ['config', 'get', NODE, 'web', '--nats', url, '--nkey', seedFile(bus.credentials, USERS.admin)],
    {},
    30_000,
  );
  if (run.code !== 0) throw new Error(`${what} exited ${run.code} after ${run.ms} ms: ${run.stderr}`);
  return { what, readyAt: Date.now(), value: /^v=(.*)$/m.exec(run.stdout)?.[1], said: run.stderr.trim() };
}

const GIVEN_UP = /^debug .*: a create of its consumer went unanswered for (\d+) ms; making its consumer under a new name$/;

/**
 * What a watch said since `killedAt`, a line each, in ms from the kill, give-ups in a row told in one
 * line (a failure's message is cut short by CI's log: twenty give-ups must not hide the line after them).
 */
function brief(said: { at: number; line: string }[], killedAt: number): string {
  const out: string[] = [];
  for (let i = 0; i < said.length;) {
    const run: { at: number; ms: number }[] = [];
    for (let m; i < said.length && (m = GIVEN_UP.exec(said[i]!.line)); i++) run.push({ at: said[i]!.at - killedAt, ms: Number(m[1]) });
    if (run.length > 0) {
      const waits = run.map((r) => r.ms);
      out.push(`+${run[0]!.at}…+${run.at(-1)!.at} ms: ${run.length} creates given up, each unanswered for ${Math.min(...waits)}–${Math.max(...waits)} ms`);
      continue;
    }
    out.push(`+${said[i]!.at - killedAt} ms: ${said[i]!.line}`);
    i++;
  }
  return out.join('\n');
}

/** Figures of one round, in ms from the kill. */
type Round = { victim: string; writesMs: number; consumersMs: number; fresh: { what: string; ms: number }[]; runningMs: number };

/** One round on `bus`: kill the stream's leader, read and watch afresh, check each against the failover, restart. */
async function round(bus: Bus, n: number): Promise<Round> {
  const { cluster, admin } = bus;
  await waitForMetaLeader(cluster.servers);
  await waitForStreamReplicas(admin, STREAM, 3);
  const victim = cluster.named(await streamLeader(admin, STREAM));
  const live = cluster.servers.filter((s) => s !== victim).map((s) => s.url);
  const value = `v${n}`;
  const closers: (() => unknown)[] = [];
  const saidAtKill = bus.said.length;
  await victim.kill();
  const killedAt = Date.now();
  try {
    const writes = putUntilAcked(admin, CONFIG, KEY, new TextEncoder().encode(value));
    const consumers = consumerUntilMade(admin, STREAM);
    await new Promise((r) => setTimeout(r, FRESH_AFTER_MS - (Date.now() - killedAt)));
    // Each is raced with the deadline: what is not ready by then is named, and left to the closers below.
    const fresh = [
      freshWatch(bus, live[0]!, `a watch on ${victim.name}'s peer 1`, closers),
      freshWatch(bus, live[1]!, `a watch on ${victim.name}'s peer 2`, closers),
      freshGet(bus, live[0]!, 'a direct get', closers),
      freshCommand(bus, live[1]!, '`config get`'),
    ];
    const ready: Fresh[] = [];
    const failed: string[] = [];
    for (const f of fresh)
      f.then(
        (r) => ready.push(r),
        (err: Error) => failed.push(err.message),
      );
    const failedOver = Math.max(await writes, await consumers);
    const deadline = failedOver + GOAL_MS;
    await waitFor('every fresh read and watch', () => ready.length + failed.length === fresh.length || Date.now() > deadline, FAILOVER_MS);
    const ms = (at: number) => at - killedAt;
    const why = `round ${n}, ${victim.name} killed: writes taken after ${ms(await writes)} ms, a consumer made after ${ms(await consumers)} ms`;
    if (failed.length > 0 || ready.length < fresh.length || ready.some((f) => f.readyAt > deadline)) {
      // Late: how late, for the message (what is not ready 30 s on is said not ready).
      await waitFor('the late ones', () => ready.length + failed.length === fresh.length, 30_000).catch(() => {});
      const said = ready.map((f) => `${f.what} after ${ms(f.readyAt)} ms${f.said ? ` (it said: ${f.said})` : ''}`);
      assert.unreachable(
        `${why}; not every fresh read and watch ready by ${ms(deadline)} ms: ${[...said, ...failed].join(', ')} (${fresh.length - ready.length - failed.length} more never)`,
      );
    }
    // The acked value is stored: a direct get after the ack reads it (an acked write is never lost).
    const after = await freshGet(bus, live[0]!, 'a direct get after the ack', closers);
    assert.is(after.value, value, `${why}; a direct get after the ack`);
    // A client's watch, made before the kill, sees the value within the goal too.
    const seenAt = await waitFor(`the running watch seeing ${value}`, () => bus.seen.get(value), Math.max(0, deadline - Date.now()) + 50).catch(
      () => undefined,
    );
    assert.ok(
      seenAt !== undefined && seenAt <= deadline,
      `${why}; the running watch saw ${value} ${seenAt ? `after ${ms(seenAt)} ms` : 'never'}; it said since the kill:\n${brief(bus.said.slice(saidAtKill), killedAt)}`,
    );
    return {
      victim: victim.name,
      writesMs: ms(await writes),
      consumersMs: ms(await consumers),
      fresh: ready.map((f) => ({ what: f.what, ms: ms(f.readyAt) })),
      runningMs: ms(seenAt!),
    };
  } finally {
    for (const close of closers.reverse())
      await Promise.resolve()
        .then(close)
        .catch(() => {});
    await victim.restart();
  }
}

test.before(async () => {
  ensureBuilt('server');
  serverDir = copyBundleAlone('server');
});

test.after(async () => {
  for (const bus of buses) {
    bus.running?.stop();
    await bus.node?.close().catch(() => {});
    await bus.admin?.close().catch(() => {});
    await bus.cluster.cleanup();
  }
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  cleanupBundles();
});

test(`${ROUNDS} times a stream's leader killed: every watch and read made 2 s later, and a running watch, ready within the bus's failover + ${GOAL_MS / 1000} s`, async () => {
  const started = Date.now();
  // The clusters one after the other, before any round: clusters planned together could pick the same
  // free port, and a killed server's port, free, could be taken by a cluster starting.
  const setups: Promise<Bus>[] = [];
  for (let c = 0; c < CLUSTERS; c++) {
    const setup = startBus(await startCluster());
    setup.catch(() => {}); // thrown by Promise.all below, once every cluster is started
    setups.push(setup);
  }
  const ready = await Promise.all(setups);
  const all = await Promise.all(
    ready.map(async (bus, c) => {
      const rounds: Round[] = [];
      for (let i = 0; c + i * CLUSTERS < ROUNDS; i++) rounds.push(await round(bus, c * 100 + i + 1));
      return rounds;
    }),
  );
  const rounds = all.flat();
  const slack = rounds.flatMap((r) => [...r.fresh.map((f) => f.ms), r.runningMs].map((ms) => ms - Math.max(r.writesMs, r.consumersMs)));
  console.log(
    `# ${rounds.length} rounds on ${CLUSTERS} clusters in ${((Date.now() - started) / 1000).toFixed(1)} s: the bus failed over ` +
      `${(Math.min(...rounds.map((r) => Math.max(r.writesMs, r.consumersMs))) / 1000).toFixed(1)}–${(Math.max(...rounds.map((r) => Math.max(r.writesMs, r.consumersMs))) / 1000).toFixed(1)} s after the kill; ` +
      `the last fresh read or watch, or the running watch, ${(Math.max(...slack) / 1000).toFixed(2)} s after it at worst (goal ${GOAL_MS / 1000} s)`,
  );
});

test.run();
