// What bench/fleet.ts reads of the bus and the processes beside it: one nats-server with its
// monitoring port, its buckets made by the seat's own `init --nodes N` (so every stream's
// max_consumers is the one a mesh of N nodes gets), the seat bundle, and the figures a fleet's
// operator asks for: messages, consumers, CPU and memory, sampled over a window.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { startNats, freePort, type NatsServer } from '../test/helpers/nats.ts';
import { cpuSeconds, ROOT, rssMiB } from './lib.ts';
import { startSeatProcess, type SeatProcess } from './seat-lib.ts';
import { ALIVE_ALL } from '../src/shared/contract/subjects.ts';

/** The bus of a fleet run: the server, its monitoring URL, the seat and a connection of the bench's own. */
export type FleetBus = { nats: NatsServer; monitor: string; seat: SeatProcess; nc: NatsConnection };

/** Starts nats-server (monitoring on), makes every bucket with `init --nodes <nodes>`, then the seat. */
export async function startFleetBus(nodes: number): Promise<FleetBus> {
  const http = await freePort();
  const nats = await startNats(`http: "127.0.0.1:${http}"\nmax_connections: 100000`);
  const init = spawnSync(process.execPath, [join(ROOT, 'dist/server.js'), 'init', '--nodes', String(nodes), '--nats', nats.url], { encoding: 'utf8' });
  if (init.status !== 0) throw new Error(`init --nodes ${nodes}: ${init.stderr}`);
  const seat = startSeatProcess(nats.url);
  const nc = await connect({ servers: nats.url, name: 'bench-fleet' });
  return { nats, monitor: `http://127.0.0.1:${http}`, seat, nc };
}

/** The counters of /varz a window is measured with. */
type Varz = { in_msgs: number; out_msgs: number; in_bytes: number; out_bytes: number; connections: number; mem: number };

/** /varz now. */
export async function varz(bus: FleetBus): Promise<Varz> {
  return (await fetch(`${bus.monitor}/varz`)).json() as Promise<Varz>;
}

/** What the bus carried for a change, per node: messages and bytes delivered, and taken in. */
export type Traffic = { outMsgs: number; outBytes: number; inMsgs: number; inBytes: number };

/** Counts what the bus carries from now until `done(nodes)`, which says it per node. */
export async function trafficFrom(bus: FleetBus): Promise<{ done(nodes: number): Promise<Traffic> }> {
  const v0 = await varz(bus);
  return {
    async done(nodes) {
      const v1 = await varz(bus);
      const per = (a: number, b: number) => (b - a) / nodes;
      return {
        outMsgs: per(v0.out_msgs, v1.out_msgs),
        outBytes: per(v0.out_bytes, v1.out_bytes),
        inMsgs: per(v0.in_msgs, v1.in_msgs),
        inBytes: per(v0.in_bytes, v1.in_bytes),
      };
    },
  };
}

/** JetStream API calls the server has answered so far, and how many of them with an error. */
export async function apiCalls(bus: FleetBus): Promise<{ total: number; errors: number }> {
  return ((await (await fetch(`${bus.monitor}/jsz`)).json()) as { api: { total: number; errors: number } }).api;
}

/**
 * Counts the JetStream API asks on the bus from now until `done(nodes)`, by kind (`CONSUMER.CREATE`,
 * `STREAM.INFO`, `DIRECT.GET`…), a node's share each: where a start's calls go when they grow.
 */
export function apiAsksFrom(bus: FleetBus): { done(nodes: number): Promise<Record<string, number>> } {
  const counts = new Map<string, number>();
  const sub = bus.nc.subscribe('$JS.API.>', {
    callback: (_err, msg) => {
      const t = msg.subject.split('.');
      const kind =
        t[3] === 'INFO' || t[3] === 'CREATE'
          ? t.slice(2, 5).join('.')
          : t[2] === 'DIRECT'
            ? t.slice(2, 5).join('.')
            : t[2] === 'INFO'
              ? t.slice(2, 4).join('.')
              : t.slice(2, t[3] === 'DURABLE' ? 5 : 4).join('.');
      counts.set(kind, (counts.get(kind) ?? 0) + 1);
    },
  });
  return {
    async done(nodes) {
      await bus.nc.flush();
      sub.unsubscribe();
      return Object.fromEntries([...counts].sort((a, b) => b[1] - a[1]).map(([k, v]) => [k, Number((v / nodes).toFixed(2))]));
    },
  };
}

/** How many consumers the server holds now, by stream (every account). */
export async function consumersByStream(bus: FleetBus): Promise<Record<string, number>> {
  type Jsz = { account_details?: { stream_detail?: { name: string; state: { consumer_count: number } }[] }[] };
  const jsz = (await (await fetch(`${bus.monitor}/jsz?accounts=true&streams=true`)).json()) as Jsz;
  const out: Record<string, number> = {};
  for (const a of jsz.account_details ?? []) for (const s of a.stream_detail ?? []) out[s.name] = (out[s.name] ?? 0) + s.state.consumer_count;
  return out;
}

/** What a process used over a window: CPU seconds, and its resident memory at the end and at the most. */
export type Usage = { cpuS: number; rssMiB: number; peakMiB: number };

/** Samples a process's RSS every 100 ms until `done`; its CPU is read at both ends. */
export function sampleUsage(pid: number): { done(): Usage } {
  const cpu0 = cpuSeconds(pid);
  let peak = rssMiB(pid);
  const timer = setInterval(() => (peak = Math.max(peak, rssMiB(pid))), 100);
  return {
    done() {
      clearInterval(timer);
      const rss = rssMiB(pid);
      return { cpuS: cpuSeconds(pid) - cpu0, rssMiB: rss, peakMiB: Math.max(peak, rss) };
    },
  };
}

/** The bus over a quiet window: messages and bytes a second, the server's CPU share and RSS, the seat's. */
export type Quiet = {
  /** Messages the server delivered a second (a heartbeat is made by the server: delivered, never taken in). */
  msgsPerS: number;
  /** Messages the server took in a second. */
  inMsgsPerS: number;
  /** Bytes the server delivered a second. */
  bytesPerS: number;
  consumers: number;
  byStream: Record<string, number>;
  connections: number;
  natsCpu: number;
  natsRssMiB: number;
  seat: Usage;
};

/** Measures `ms` of the bus as it stands: nothing is published by the bench meanwhile. */
export async function measureQuiet(bus: FleetBus, ms: number): Promise<Quiet> {
  const natsPid = bus.nats.pid()!;
  const seat = sampleUsage(bus.seat.child.pid!);
  const cpu0 = cpuSeconds(natsPid);
  const v0 = await varz(bus);
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, ms));
  const v1 = await varz(bus);
  const s = (performance.now() - t0) / 1000;
  const byStream = await consumersByStream(bus);
  return {
    msgsPerS: (v1.out_msgs - v0.out_msgs) / s,
    inMsgsPerS: (v1.in_msgs - v0.in_msgs) / s,
    bytesPerS: (v1.out_bytes - v0.out_bytes) / s,
    consumers: Object.values(byStream).reduce((a, b) => a + b, 0),
    byStream,
    connections: v1.connections,
    natsCpu: (cpuSeconds(natsPid) - cpu0) / s,
    natsRssMiB: rssMiB(natsPid),
    seat: seat.done(),
  };
}

/**
 * The seat hears every node's alive message (DESIGN §14). Until the seat's bundle subscribes to them,
 * the bench does in its place, so that the idle row counts each one delivered once, as a mesh does.
 */
export async function hearAlive(bus: FleetBus): Promise<'the seat' | 'the bench'> {
  type Connz = { connections: { name?: string; subscriptions_list?: string[] }[] };
  const connz = (await (await fetch(`${bus.monitor}/connz?subs=1&limit=100000`)).json()) as Connz;
  const heard = connz.connections.some(
    (c) => c.name !== 'bench-fleet' && (c.subscriptions_list ?? []).some((s) => s === ALIVE_ALL || s === 'prov.>' || s === '>'),
  );
  if (heard) return 'the seat';
  bus.nc.subscribe(ALIVE_ALL, { callback: () => {} });
  await bus.nc.flush();
  return 'the bench';
}

/** What an idle bus carries, by kind: subscribed to every subject of the (single) account for `ms`. */
export async function idleMessageKinds(bus: FleetBus, ms: number): Promise<Map<string, number>> {
  const kinds = new Map<string, number>();
  const sub = bus.nc.subscribe('>', {
    callback: (_err, m) => {
      const status = m.headers?.code ?? 0;
      const inbox = /^(_INBOX[^.]*)/.exec(m.subject)?.[1]?.replace(/^_INBOX_node_.*/, '_INBOX_node_*');
      const kind = inbox
        ? `${status === 100 ? (m.reply ? 'flow control' : 'idle heartbeat') : status ? `status ${status}` : 'message'} to ${inbox}`
        : m.subject.split('.').slice(0, 3).join('.');
      kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
    },
  });
  await new Promise((r) => setTimeout(r, ms));
  sub.unsubscribe();
  return new Map([...kinds].map(([k, n]) => [k, n / (ms / 1000)]));
}
