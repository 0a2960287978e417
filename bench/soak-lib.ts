// What bench/soak.ts needs beside bench/lib.ts: the modules it writes and their expected files, a paced
// writer with bounded in-flight puts, the bus's consumers and connections, and the statistics of a trend.
import { join } from 'node:path';
import type { KV } from '@nats-io/kv';
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { now, percentile } from './lib.ts';

/** A soak module: its config keys (1–3) and the one file the engine writes for it. */
export type SoakModule = {
  name: string;
  /** Its config keys, `k0`…`k2`. */
  keys: string[];
  /** The file's dir under the engine's root (the placement's `dir.config`). */
  dir: string;
  /** The file's name in `dir`. */
  file: string;
};

/** The value a key holds before the writer starts. */
export const INITIAL_SEQ = 0;

/** `n` modules whose files go under `<root>/etc/<module>/`; module `i` has `1 + i % 3` keys. */
export function soakModules(n: number, root: string): SoakModule[] {
  return Array.from({ length: n }, (_, i) => {
    const name = `m${String(i).padStart(5, '0')}`;
    return { name, keys: Array.from({ length: 1 + (i % 3) }, (_, k) => `k${k}`), dir: join(root, 'etc', name), file: `${name}.conf` };
  });
}

/** The value the writer puts for sequence number `seq`. */
export const valueOf = (seq: number): string => `v${seq}`;

/** The module's template: one `key = value` line per config key. */
export function soakTemplate(m: SoakModule): string {
  return `# ${m.name}\n` + m.keys.map((k) => `${k} = \${config:${k}}\n`).join('');
}

/** The file the template gives when key `k` holds `valueOf(seqOf(k))`. */
export function expectedText(m: SoakModule, seqOf: (key: string) => number): string {
  return `# ${m.name}\n` + m.keys.map((k) => `${k} = ${valueOf(seqOf(k))}\n`).join('');
}

/** A running writer's counts and what each key was last acked with. */
export type Writer = {
  /** Puts started. */
  issued(): number;
  /** Puts acked by the server. */
  acked(): number;
  /** Puts that failed (their value may or may not be stored). */
  failed(): number;
  /** The last acked sequence number by module key (`<module>.<key>`). */
  lastAcked: Map<string, number>;
  /** A failed put newer than the last acked one, by module key: the file may hold either. */
  uncertain: Map<string, number>;
  /** Resolves when stopped and every put in flight has answered. */
  done: Promise<void>;
  stop(): void;
};

/** How the writer runs. */
export type WriterOptions = {
  config: KV;
  node: string;
  /** The module keys (`<module>.<key>`) it cycles through, in this order (a module's keys change one after the other). */
  keys: string[];
  /** Puts per second. */
  rate: number;
  /** At most this many puts wait for their ack; never two for one key. */
  maxInFlight: number;
  /** Called as each put starts. */
  onPut(key: string, seq: number, at: number): void;
};

/** Starts a writer putting `valueOf(seq)` at `rate` per second, cycling over the keys. */
export function startWriter(opts: WriterOptions): Writer {
  let issued = 0,
    acked = 0,
    failed = 0,
    cursor = 0,
    stopped = false;
  const busy = new Set<string>();
  const lastAcked = new Map<string, number>();
  const uncertain = new Map<string, number>();
  const put = (key: string) => {
    const seq = ++issued;
    busy.add(key);
    opts.onPut(key, seq, now());
    opts.config
      .put(`${opts.node}.${key}`, valueOf(seq))
      .then(
        () => {
          acked++;
          if (seq > (lastAcked.get(key) ?? INITIAL_SEQ)) lastAcked.set(key, seq);
        },
        () => {
          failed++;
          uncertain.set(key, seq);
        },
      )
      .finally(() => busy.delete(key));
  };
  const nextFree = (): string | undefined => {
    for (let tries = 0; tries < opts.keys.length; tries++) {
      const key = opts.keys[cursor++ % opts.keys.length]!;
      if (!busy.has(key)) return key;
    }
    return undefined;
  };
  const done = (async () => {
    const started = now();
    while (!stopped) {
      const due = Math.floor(((now() - started) * opts.rate) / 1000);
      while (issued < due && busy.size < opts.maxInFlight) {
        const key = nextFree();
        if (!key) break;
        put(key);
      }
      await new Promise((r) => setTimeout(r, 2));
    }
    while (busy.size > 0) await new Promise((r) => setTimeout(r, 5));
  })();
  return { issued: () => issued, acked: () => acked, failed: () => failed, lastAcked, uncertain, done, stop: () => (stopped = true) };
}

/** The windows `[from, to)` of `windowMs` covering `0…end`; a last piece shorter than half a window joins the one before. */
export function windowsOf(end: number, windowMs: number): [number, number][] {
  const n = Math.max(1, Math.round(end / windowMs));
  return Array.from({ length: n }, (_, i) => [i * windowMs, i === n - 1 ? end + 1 : (i + 1) * windowMs]);
}

/** The least-squares slope of `v` over `t` (ms), per hour; NaN with fewer than two points. */
export function slopePerHour(points: readonly { t: number; v: number }[]): number {
  const n = points.length;
  if (n < 2) return NaN;
  const mt = points.reduce((a, p) => a + p.t, 0) / n;
  const mv = points.reduce((a, p) => a + p.v, 0) / n;
  const cov = points.reduce((a, p) => a + (p.t - mt) * (p.v - mv), 0);
  const vart = points.reduce((a, p) => a + (p.t - mt) ** 2, 0);
  return (cov / vart) * 3_600_000;
}

/** p50, p99 and max of some numbers (NaN when there are none). */
export function summary(xs: readonly number[]): { p50: number; p99: number; max: number; n: number } {
  if (xs.length === 0) return { p50: NaN, p99: NaN, max: NaN, n: 0 };
  const sorted = [...xs].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99), max: sorted.at(-1)!, n: sorted.length };
}

/** What the bus holds for the mesh: consumers on the KV_ streams, connections and subscriptions. */
export type BusCounts = {
  /** Consumers over every KV_ stream. */
  consumers: number;
  /** Of those, the push consumers nobody listens to any more (a stopped watch's, gone after their inactive threshold). */
  unbound: number;
  /** Consumers by KV_ stream (only those with any). */
  byStream: Record<string, number>;
  /** Each consumer as `<stream> <filter> → <deliver subject's inbox prefix> (created <time>[, unbound])`, by name. */
  described: Map<string, string>;
  connections: number;
  /** Subscriptions by connection name. */
  subsByConnection: Record<string, number>;
  subscriptions: number;
};

/** Counts the consumers through the JetStream API and the connections through nats-server's monitoring port. */
export async function busCounts(nc: NatsConnection, monitor: string): Promise<BusCounts> {
  const jsm = await jetstreamManager(nc);
  const byStream: Record<string, number> = {};
  const described = new Map<string, string>();
  let unbound = 0;
  for await (const si of jsm.streams.list()) {
    const stream = si.config.name;
    if (!stream.startsWith('KV_')) continue;
    for await (const ci of jsm.consumers.list(stream)) {
      byStream[stream] = (byStream[stream] ?? 0) + 1;
      const filter = ci.config.filter_subject ?? ci.config.filter_subjects?.join(',') ?? '>';
      const owner = ci.config.deliver_subject?.split('.')[0] ?? 'pull';
      if (ci.config.deliver_subject && !ci.push_bound) unbound++;
      described.set(
        ci.name,
        `${stream} ${filter} → ${owner} (created ${ci.created.slice(11, 19)}${ci.config.deliver_subject && !ci.push_bound ? ', unbound' : ''})`,
      );
    }
  }
  const connz = (await (await fetch(`${monitor}/connz`)).json()) as { num_connections: number; connections: { name?: string; subscriptions: number }[] };
  const subsByConnection = Object.fromEntries(connz.connections.map((c) => [c.name ?? '?', c.subscriptions]));
  return {
    consumers: described.size,
    unbound,
    byStream,
    described,
    connections: connz.num_connections,
    subsByConnection,
    subscriptions: Object.values(subsByConnection).reduce((x, y) => x + y, 0),
  };
}
