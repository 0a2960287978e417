// How bench/soak.ts times each value: the module files on disk (inotify), the bus floor (a plain KV
// watcher) and, opt-in, a proxy on the engine socket splitting the time between client and engine.
import { readFileSync, watch, type FSWatcher } from 'node:fs';
import { connect, createServer, type Server } from 'node:net';
import { join } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import { watchKv } from '../src/shared/bus/watch/watch.ts';
import { CONFIG } from '../src/shared/contract/buckets.ts';
import { now } from './lib.ts';
import { INITIAL_SEQ, type SoakModule } from './soak-lib.ts';

/** The put times of values not yet seen on disk, by module key (`<module>.<key>`). */
export class PendingPuts {
  private readonly byKey = new Map<string, { seq: number; at: number }[]>();

  /** Notes that `seq` was put under `key` at `at`. */
  put(key: string, seq: number, at: number): void {
    const list = this.byKey.get(key) ?? [];
    list.push({ seq, at });
    this.byKey.set(key, list);
  }

  /** The put time of `seq` when it was still pending; drops it and every older value of `key` (never to be written). */
  arrived(key: string, seq: number): number | undefined {
    const list = this.byKey.get(key);
    if (!list) return undefined;
    const at = list.find((p) => p.seq === seq)?.at;
    const rest = list.filter((p) => p.seq > seq);
    if (rest.length === 0) this.byKey.delete(key);
    else this.byKey.set(key, rest);
    return at;
  }
}

/** One value seen on disk: when (ms since `origin`) and how long after its put. */
export type Arrival = { at: number; lagMs: number };

/** A watch of every module's file: each new value seen, timed from its put. */
export type DiskWatch = {
  arrivals: Arrival[];
  /** Values seen on disk for the first time (written by the engine). */
  seen(): number;
  /** `now()` when a file last changed. */
  lastChange(): number;
  close(): void;
};

const LINE = /^(k\d) = v(\d+)$/gm;

/** Watches each module's dir (inotify) and reads its file on every change; times are `now() - origin`. */
export function watchFiles(modules: readonly SoakModule[], pending: PendingPuts, origin: number): DiskWatch {
  const arrivals: Arrival[] = [];
  const seenSeq = new Map<string, number>();
  let seen = 0,
    lastChange = now();
  const read = (m: SoakModule) => {
    let text: string;
    try {
      text = readFileSync(join(m.dir, m.file), 'utf8');
    } catch {
      return;
    }
    const t = now();
    for (const [, k, s] of text.matchAll(LINE)) {
      const key = `${m.name}.${k}`,
        seq = Number(s);
      if (seq <= (seenSeq.get(key) ?? INITIAL_SEQ)) continue;
      seenSeq.set(key, seq);
      seen++;
      lastChange = t;
      const putAt = pending.arrived(key, seq);
      if (putAt !== undefined) arrivals.push({ at: t - origin, lagMs: t - putAt });
    }
  };
  const watchers: FSWatcher[] = modules.map((m) => watch(m.dir, (_event, name) => (name === m.file ? read(m) : undefined)));
  return { arrivals, seen: () => seen, lastChange: () => lastChange, close: () => watchers.forEach((w) => w.close()) };
}

/** The bus floor: every put's value as a plain KV watcher sees it, timed from its put. */
export type FloorWatch = {
  arrivals: Arrival[];
  /** Notes that `seq` was put at `at`. */
  put(seq: number, at: number): void;
  stop(): void;
};

/** Watches the node's config keys on `nc` (its own connection, as bench/latency.ts measures the floor). */
export async function watchFloor(nc: NatsConnection, node: string, origin: number): Promise<FloorWatch> {
  const arrivals: Arrival[] = [];
  const putAt = new Map<number, number>();
  const watch = await watchKv(nc, CONFIG, `${node}.>`, (e) => {
    const t = now();
    const seq = e.value ? Number(/^v(\d+)$/.exec(new TextDecoder().decode(e.value))?.[1]) : NaN;
    const at = putAt.get(seq);
    if (at === undefined) return;
    putAt.delete(seq);
    arrivals.push({ at: t - origin, lagMs: t - at });
  });
  await watch.caughtUp;
  return { arrivals, put: (seq, at) => putAt.set(seq, at), stop: () => watch.stop() };
}

/** Where the time of each value went, split at the engine socket. */
export type SplitTimes = {
  /** Put → the client's request holding the value reaches the socket (bus, client, fill). */
  toRequest: Arrival[];
  /** Request → the engine's reply (the engine's write, fsync and journal, and its queue). */
  toReply: Arrival[];
  server: Server;
};

/** The lines of a byte stream, each handed over with the time it was read. */
function onLines(stream: NodeJS.ReadableStream, each: (line: string, t: number) => void): void {
  let buf = '';
  stream.on('data', (d: Buffer) => {
    const t = now();
    buf += d.toString('utf8');
    for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
      each(buf.slice(0, nl), t);
      buf = buf.slice(nl + 1);
    }
  });
}

/**
 * A timing proxy on `listen` in front of the engine's socket `engine` (opt-in: one more hop, in this
 * process): times put → request by the value's sequence number, and request → reply by request id.
 */
export function splitProxy(listen: string, engine: string, putAt: (seq: number) => number | undefined, origin: number): Promise<SplitTimes> {
  const times: Omit<SplitTimes, 'server'> = { toRequest: [], toReply: [] };
  const server = createServer((client) => {
    const upstream = connect(engine);
    const sentAt = new Map<number, number>();
    client.pipe(upstream);
    upstream.pipe(client);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    onLines(client, (line, t) => {
      const req = JSON.parse(line) as { id: number; files?: { content: unknown }[] };
      sentAt.set(req.id, t);
      for (const f of req.files ?? []) {
        for (const [, , seq] of JSON.stringify(f.content).matchAll(LINE_IN_JSON)) {
          const at = putAt(Number(seq));
          if (at !== undefined) times.toRequest.push({ at: t - origin, lagMs: t - at });
        }
      }
    });
    onLines(upstream, (line, t) => {
      const id = (JSON.parse(line) as { id: number }).id;
      const at = sentAt.get(id);
      sentAt.delete(id);
      if (at !== undefined) times.toReply.push({ at: t - origin, lagMs: t - at });
    });
  });
  return new Promise((resolve) => server.listen(listen, () => resolve({ ...times, server })));
}

const LINE_IN_JSON = /(k\d) = v(\d+)\\n/g;
