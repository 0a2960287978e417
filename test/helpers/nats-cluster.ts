// Starts a real nats-server cluster with JetStream on 127.0.0.1: each server its own client, cluster
// and monitoring port, store dir and server_name, routed to every other; and says which server leads
// a stream or holds a named connection.
import { rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { startNats, type NatsServer } from './nats.ts';
import type { Spawn } from './spawn.ts';
import { waitFor } from './wait.ts';
import { tempDir } from './temp.ts';

/** How long a cluster may take until JetStream answers (a meta leader elected). */
export const CLUSTER_READY_MS = 30_000;

/** One server of a cluster. */
export type ClusterServer = NatsServer & {
  /** Its `server_name`, as a stream's `cluster.leader` names it. */
  name: string;
  /** `http://127.0.0.1:<port>`, its monitoring endpoint. */
  monitor: string;
  /** Kills it with SIGKILL (no shutdown, no leadership handed over) and waits until it is gone. */
  kill(): Promise<void>;
  /** Whether it runs now. */
  running(): boolean;
};

/** A running cluster. */
export type NatsCluster = {
  servers: ClusterServer[];
  /** Every server's client URL, in order. */
  urls: string[];
  /** The server called `name`. */
  named(name: string): ClusterServer;
  /** Stops every server and removes the cluster's dir. */
  cleanup(): Promise<void>;
};

/** How startNatsCluster runs. */
export type NatsClusterOptions = {
  /** How many servers (default 3). */
  size?: number;
  /** The cluster's name (default `mesh`). */
  name?: string;
  /** Starts each process (default: quietly). */
  spawn?: Spawn;
  /**
   * Writes a server's configuration instead of clusterServerConfig (a generated bus's, say): `dir`
   * is where its file goes, `routes` the other servers' cluster ports.
   */
  config?: (where: { listen: string; storeDir: string }, server: { name: string; http: number; cluster: number; dir: string; routes: number[] }) => string;
};

/** The configuration file of one server of the cluster. */
export function clusterServerConfig(
  where: { listen: string; storeDir: string },
  server: { name: string; http: number; cluster: number },
  cluster: string,
  routes: number[],
): string {
  return [
    `server_name: "${server.name}"`,
    `listen: "${where.listen}"`,
    `http: "127.0.0.1:${server.http}"`,
    'max_payload: 1048576',
    `jetstream { store_dir: "${where.storeDir}" }`,
    `cluster {`,
    `  name: "${cluster}"`,
    `  listen: "127.0.0.1:${server.cluster}"`,
    `  routes: [${routes.map((p) => `"nats-route://127.0.0.1:${p}"`).join(', ')}]`,
    `}`,
    '',
  ].join('\n');
}

/**
 * A `config` for startNatsCluster that runs each server on the bus `bus-config` generates, as an
 * operator's is (deploy/README.md): its name, monitoring port and routes around an `include` of what
 * `busConfig` (`server.js bus-config` with these arguments) writes for it, every server's from the
 * seeds in `credentials`, which busConfig makes on its first run.
 */
export function generatedServerConfig(
  busConfig: (args: string[]) => void,
  nodes: readonly string[],
  credentials: string,
): NonNullable<NatsClusterOptions['config']> {
  return (where, s) => {
    const out = join(s.dir, 'mesh.conf');
    busConfig([...nodes.flatMap((n) => ['--node', n]), '--credentials', credentials, '--listen', where.listen, '--store-dir', where.storeDir, '--out', out]);
    const routes = s.routes.map((p) => `"nats-route://127.0.0.1:${p}"`).join(', ');
    return [
      `server_name: "${s.name}"`,
      `http: "127.0.0.1:${s.http}"`,
      `cluster { name: "mesh", listen: "127.0.0.1:${s.cluster}", routes: [${routes}] }`,
      'include "mesh.conf"',
      '',
    ].join('\n');
  };
}

/** How many times a cluster is planned again when a port it picked was taken before its server listened. */
const PORT_TRIES = 3;

/**
 * The ports a cluster's servers listen on are picked below the kernel's ephemeral range (32768 up on
 * Linux): a port found free there was taken before its server listened by another program's
 * outgoing connection, or, once its server was killed, before it restarted, and the cluster never
 * formed again. Ports this process picked are never picked twice.
 */
const CLUSTER_PORTS = { from: 20_000, to: 32_000 };
const picked = new Set<number>();

/** A port of CLUSTER_PORTS free on 127.0.0.1 now, and not picked before by this process. */
async function clusterPort(): Promise<number> {
  for (;;) {
    const port = CLUSTER_PORTS.from + Math.floor(Math.random() * (CLUSTER_PORTS.to - CLUSTER_PORTS.from));
    if (picked.has(port)) continue;
    picked.add(port);
    const free = await new Promise<boolean>((resolve) => {
      const srv = createServer();
      srv.once('error', () => resolve(false));
      srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
    });
    if (free) return port;
  }
}

/**
 * Starts the cluster and resolves once every server answers and JetStream has a meta leader. A port
 * found free and taken before its server listened on it (another test's cluster starting, or an
 * outgoing connection's ephemeral port) makes it start again on fresh ports.
 */
export async function startNatsCluster(opts: NatsClusterOptions = {}): Promise<NatsCluster> {
  for (let tries = 1; ; tries++) {
    try {
      return await startNatsClusterOnce(opts);
    } catch (err) {
      if (tries >= PORT_TRIES || !/address already in use/.test(String((err as Error).message))) throw err;
    }
  }
}

async function startNatsClusterOnce(opts: NatsClusterOptions): Promise<NatsCluster> {
  const size = opts.size ?? 3;
  const clusterName = opts.name ?? 'mesh';
  const dir = tempDir('mesh-cluster-');
  const plan = await Promise.all(
    Array.from({ length: size }, async (_, i) => ({ name: `s${i + 1}`, client: await clusterPort(), http: await clusterPort(), cluster: await clusterPort() })),
  );
  const routes = plan.map((p) => p.cluster);
  const servers: ClusterServer[] = [];
  try {
    // Started together: a server's JetStream waits for its routes, and each one's start waits only for its client port.
    const started = await Promise.allSettled(
      plan.map((p) =>
        startNats('', {
          dir: join(dir, p.name),
          port: p.client,
          ...(opts.spawn ? { spawn: opts.spawn } : {}),
          whole: (where) => {
            const others = routes.filter((r) => r !== p.cluster);
            return opts.config ? opts.config(where, { ...p, dir: join(dir, p.name), routes: others }) : clusterServerConfig(where, p, clusterName, others);
          },
        }),
      ),
    );
    started.forEach((s, i) => s.status === 'fulfilled' && servers.push(clusterServer(s.value, plan[i]!.name, plan[i]!.http)));
    const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed) throw failed.reason;
    await waitFor('the cluster’s JetStream meta leader', () => metaLeaderKnown(servers), CLUSTER_READY_MS);
  } catch (err) {
    await Promise.all(servers.map((s) => s.stop()));
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return {
    servers,
    urls: servers.map((s) => s.url),
    named(name) {
      const s = servers.find((x) => x.name === name);
      if (!s) throw new Error(`no server called ${name} in the cluster (${servers.map((x) => x.name).join(', ')})`);
      return s;
    },
    async cleanup() {
      await Promise.all(servers.map((s) => s.stop()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function clusterServer(s: NatsServer, name: string, http: number): ClusterServer {
  return {
    ...s,
    name,
    monitor: `http://127.0.0.1:${http}`,
    running: () => s.pid() !== undefined,
    async kill() {
      const pid = s.pid();
      if (pid !== undefined) process.kill(pid, 'SIGKILL');
      // stop() finds it dead and only waits for its exit.
      await s.stop();
    },
  };
}

/** Reads a monitoring endpoint of a server as JSON, or undefined when it does not answer. */
export async function monitorJson<T>(server: ClusterServer, path: string): Promise<T | undefined> {
  try {
    const res = await fetch(`${server.monitor}${path}`, { signal: AbortSignal.timeout(2000) });
    return res.ok ? ((await res.json()) as T) : undefined;
  } catch {
    return undefined;
  }
}

/** Whether every running server sees the same meta leader and the whole cluster in it. */
async function metaLeaderKnown(servers: ClusterServer[]): Promise<boolean> {
  const running = servers.filter((s) => s.running());
  const seen = await Promise.all(running.map((s) => monitorJson<{ meta_cluster?: { leader?: string } }>(s, '/jsz')));
  const leaders = new Set(seen.map((j) => j?.meta_cluster?.leader));
  return leaders.size === 1 && !leaders.has(undefined) && !leaders.has('');
}

/** Waits until every running server sees one meta leader (after a restart, say). */
export async function waitForMetaLeader(servers: ClusterServer[], ms = CLUSTER_READY_MS): Promise<void> {
  await waitFor('one JetStream meta leader seen by every running server', () => metaLeaderKnown(servers), ms);
}

/** The server_name of the server leading `stream` now, as the stream's info says. */
export async function streamLeader(nc: NatsConnection, stream: string): Promise<string> {
  const info = await (await jetstreamManager(nc)).streams.info(stream);
  const leader = info.cluster?.leader;
  if (!leader) throw new Error(`stream ${stream} has no leader now`);
  return leader;
}

/** Waits until `stream` has a leader and every replica is current (none offline or lagging). */
export async function waitForStreamReplicas(nc: NatsConnection, stream: string, replicas: number, ms = CLUSTER_READY_MS): Promise<void> {
  const jsm = await jetstreamManager(nc);
  await waitFor(
    `stream ${stream}: a leader and ${replicas - 1} current replicas`,
    async () => {
      try {
        const c = (await jsm.streams.info(stream)).cluster;
        const current = (c?.replicas ?? []).filter((r) => r.current && !r.offline);
        return Boolean(c?.leader) && current.length === replicas - 1;
      } catch {
        return false;
      }
    },
    ms,
  );
}

/** The server_name of the server holding a client connection called `connection`, or undefined. */
export async function serverOfConnection(servers: ClusterServer[], connection: string): Promise<string | undefined> {
  type Connz = { server_id?: string; connections?: { name?: string }[] };
  for (const s of servers.filter((x) => x.running())) {
    const connz = await monitorJson<Connz>(s, `/connz?limit=1024`);
    if (connz?.connections?.some((c) => c.name === connection)) return s.name;
  }
  return undefined;
}
