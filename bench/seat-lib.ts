// What bench/seat-scale.ts needs beside bench/lib.ts: the seat bundle as a process of its own (its
// pid for VmHWM, its stderr kept for a failure, optionally under --cpu-prof), pipelined puts, and a
// watcher that counts and awaits the values written under each key.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Watch } from '../src/shared/bus/watch/types.ts';
import { watchKv } from '../src/shared/bus/watch/watch.ts';

const ROOT = new URL('../', import.meta.url).pathname;

/** The seat bundle running as a process. */
export type SeatProcess = {
  child: ChildProcess;
  /** The last 64 KiB of what it wrote to stderr. */
  stderr(): string;
  /** Resolves with the time (`clock`) it first writes a line matching `pattern` to stderr. */
  saying(pattern: RegExp, clock: () => number): Promise<number>;
  /** SIGTERM, and resolves once it has exited (so a --cpu-prof profile is written). */
  stop(): Promise<void>;
};

/** The seat bundle a benchmark runs unless told another (`--seat FILE`, e.g. an unminified build to profile). */
export const DEFAULT_SEAT_BUNDLE = join(ROOT, 'dist/server.js');

/** Starts `<bundle> --nats url [args]`; `nodeArgs` go to node before the script (e.g. --cpu-prof). */
export function startSeatProcess(url: string, nodeArgs: string[] = [], bundle = DEFAULT_SEAT_BUNDLE, args: string[] = []): SeatProcess {
  const child = spawn(process.execPath, [...nodeArgs, bundle, '--nats', url, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let text = '';
  const listeners = new Set<(chunk: string) => void>();
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    text = (text + d).slice(-65536);
    for (const l of listeners) l(d);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    child,
    stderr: () => text,
    saying: (pattern, clock) =>
      new Promise((resolve) => {
        const l = (chunk: string) => {
          if (!pattern.test(chunk)) return;
          listeners.delete(l);
          resolve(clock());
        };
        listeners.add(l);
      }),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Anything that puts a value under a key: a nats.js KV, or the seat's own KvPublisher. */
export type Putter = { put(key: string, value: Uint8Array): Promise<unknown> };

/** Puts every entry with at most `window` puts in flight; resolves when all are acknowledged. */
export async function putPipelined(kv: Putter, entries: Iterable<[string, Uint8Array]>, window = 256): Promise<void> {
  const inFlight = new Set<Promise<unknown>>();
  for (const [key, value] of entries) {
    const put: Promise<unknown> = kv.put(key, value).finally(() => inFlight.delete(put));
    inFlight.add(put);
    if (inFlight.size >= window) await Promise.race(inFlight);
  }
  await Promise.all(inFlight);
}

/** A watch of a whole bucket that counts writes and lets a caller await a value under a key. */
export type CountingWatch = {
  /** Puts seen since the watch began (deletes are not counted). */
  puts(): number;
  /** Distinct keys holding a value now. */
  keys(): number;
  /** When the last put or delete was seen (bench/lib.ts `now`). */
  lastAt(): number;
  /** Resolves with the time the first value of `key` after this call that `match` accepts is seen. */
  next(key: string, match: (text: string) => boolean): Promise<number>;
  /** Resolves with the time the number of keys holding a value first reaches `n`. */
  keysReached(n: number): Promise<number>;
  /** Calls `fn` with each put's key and text from now on (until it returns true). */
  each(fn: (key: string, text: string, at: number) => boolean): void;
  stop(): void;
};

/** Watches `bucket` from its first revision, counting writes; resolves once caught up. */
export async function countingWatch(nc: NatsConnection, bucket: string, clock: () => number): Promise<CountingWatch> {
  let puts = 0;
  let lastAt = clock();
  const present = new Set<string>();
  const waiters = new Map<string, { match(text: string): boolean; resolve(at: number): void }>();
  const listeners: ((key: string, text: string, at: number) => boolean)[] = [];
  const counts: { n: number; resolve(at: number): void }[] = [];
  const decoder = new TextDecoder();
  const watch: Watch = await watchKv(nc, bucket, '>', (e) => {
    const at = clock();
    lastAt = at;
    if (!e.value) return void present.delete(e.key);
    puts++;
    present.add(e.key);
    for (let i = counts.length - 1; i >= 0; i--) if (present.size >= counts[i]!.n) counts.splice(i, 1)[0]!.resolve(at);
    const waiter = waiters.get(e.key);
    if (!waiter && listeners.length === 0) return;
    const text = decoder.decode(e.value);
    if (waiter?.match(text)) {
      waiters.delete(e.key);
      waiter.resolve(at);
    }
    for (let i = listeners.length - 1; i >= 0; i--) if (listeners[i]!(e.key, text, at)) listeners.splice(i, 1);
  });
  await watch.caughtUp;
  return {
    puts: () => puts,
    keys: () => present.size,
    lastAt: () => lastAt,
    next: (key, match) => new Promise((resolve) => waiters.set(key, { match, resolve })),
    keysReached: (n) => new Promise((resolve) => (present.size >= n ? resolve(clock()) : counts.push({ n, resolve }))),
    each: (fn) => void listeners.push(fn),
    stop: () => watch.stop(),
  };
}

/** Resolves once `watch` has seen nothing for `quietMs` (or throws after `maxMs`). */
export async function untilQuiet(watch: CountingWatch, clock: () => number, quietMs: number, maxMs = 300_000): Promise<void> {
  const until = clock() + maxMs;
  while (clock() - watch.lastAt() < quietMs) {
    if (clock() > until) throw new Error(`the bucket did not go quiet within ${maxMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * The bus floor of a burst: `n` puts of `payload` pipelined into the watched bucket under `<prefix>.<i>`,
 * timed from the first put until `watch` has seen the last, in ms.
 */
export async function floorBurst(
  publisher: Putter,
  watch: CountingWatch,
  clock: () => number,
  payload: Uint8Array,
  n: number,
  prefix: string,
  pollMs = 1,
): Promise<number> {
  const before = watch.puts();
  const started = clock();
  await putPipelined(
    publisher,
    (function* () {
      for (let i = 0; i < n; i++) yield [`${prefix}.${i}`, payload] as [string, Uint8Array];
    })(),
  );
  while (watch.puts() - before < n) await new Promise((r) => setTimeout(r, pollMs));
  return watch.lastAt() - started;
}

/**
 * The CPU a process's main thread has used, in seconds: the rest of a node process's CPU is V8's
 * own threads (the optimizing compiler, the parallel and concurrent collectors) and libuv's.
 */
export function mainThreadSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}
