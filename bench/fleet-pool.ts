// The parent's side of bench/fleet-worker.ts: forks the worker processes, hands each a share of the
// nodes, and keeps what they saw so a phase can wait for "every node has it" and read each node's time.
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
// @ts-expect-error build.mjs is the project's own untyped build script.
import { benchOptions } from '../build.mjs';
import type { Seen, WorkerCommand, WorkerEvent } from './fleet-worker.ts';

const WORKER_SOURCE = new URL('./fleet-worker.ts', import.meta.url).pathname;

let bundled: Promise<string> | undefined;

/**
 * The worker bundled once a run as dist/client.js is (build.mjs benchOptions): the clients in it run the
 * code that ships — nats.js's patches, node:crypto's signing — not the source under tsx. Removed at exit.
 */
function workerBundle(): Promise<string> {
  bundled ??= (async () => {
    const dir = mkdtempSync(join(tmpdir(), 'mesh-fleet-worker-'));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'fleet-worker.mjs');
    await build(benchOptions(WORKER_SOURCE, file));
    return file;
  })();
  return bundled;
}

/** A node's first sighting that a test accepts, awaited by the phase that asked. */
type Waiter = { node: string; match(what: string, text: string): boolean; at?: number };

/** The fleet's worker processes and what they saw. */
export type Pool = {
  /** Sends each worker its share of `nodes` with `make(share)`; resolves once every worker started its share. */
  start(nodes: string[], make: (share: string[]) => WorkerCommand): Promise<void>;
  /**
   * From now on, notes for each node the first sighting `match` accepts; resolves with each node's
   * time (wall-clock ms) once all have one, or after `ms` with those that had (a node left out never
   * got it: a figure is printed with how many are missing, never waited for without end).
   */
  firstOf(nodes: string[], match: (what: string, text: string) => boolean, ms: number): Promise<Map<string, number>>;
  /** From now on, notes each node of which a sighting `match` accepts came; `done()` stops and says them. */
  nodesSeen(match: (what: string, text: string) => boolean): { done(): Set<string> };
  /** The workers' event-loop delay since they started, in ms (p99 and max of the worst worker): what sharing a process costs a client. */
  loopDelay(): Promise<{ p99: number; max: number }>;
  /** When the last sighting of anything came (wall-clock ms). */
  lastSeenAt(): number;
  /** The workers' process ids (their CPU and memory are the fleet's, not the bus's). */
  pids(): number[];
  /** Stops every worker and waits for its exit. */
  stop(): Promise<void>;
};

/** Forks `count` workers, each the worker's bundle. */
export async function startPool(count: number): Promise<Pool> {
  const worker = await workerBundle();
  const children: ChildProcess[] = [];
  const waiters = new Set<Waiter>();
  const listeners = new Set<(node: string, what: string, text: string) => void>();
  let started: (() => void)[] = [];
  let failed: ((err: Error) => void)[] = [];
  let delays: ((d: { p99: number; max: number }) => void)[] = [];
  let last = 0;
  const onSeen = (list: Seen[]) => {
    for (const [node, what, text, at] of list) {
      last = Math.max(last, at);
      for (const w of waiters) if (w.at === undefined && w.node === node && w.match(what, text)) w.at = at;
      for (const l of listeners) l(node, what, text);
    }
  };
  for (let i = 0; i < count; i++) {
    const child = fork(worker, [], {
      execArgv: [
        '--max-old-space-size=4096',
        ...(process.env['FLEET_PROF'] ? ['--cpu-prof', `--cpu-prof-dir=${process.env['FLEET_PROF']}`] : []),
        ...(process.env['FLEET_PROF'] && process.env['MESH_BENCH_PROF_INTERVAL'] ? [`--cpu-prof-interval=${process.env['MESH_BENCH_PROF_INTERVAL']}`] : []),
      ],
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
    child.on('message', (e: WorkerEvent) => {
      if (e.type === 'seen') onSeen(e.seen);
      if (e.type === 'started') started.shift()?.();
      if (e.type === 'loop-delay') delays.shift()?.(e);
      if (e.type === 'error') failed.forEach((f) => f(new Error(`a fleet worker: ${e.text}`)));
    });
    children.push(child);
  }
  return {
    async start(nodes, make) {
      const shares = children.map((_, i) => nodes.filter((_, j) => j % children.length === i));
      const all = new Promise<void>((resolve, reject) => {
        let left = children.length;
        started = children.map(() => () => --left === 0 && resolve());
        failed = [reject];
      });
      children.forEach((c, i) => c.send(make(shares[i]!)));
      await all;
    },
    firstOf(nodes, match, ms) {
      const mine = nodes.map((node) => ({ node, match }) as Waiter);
      for (const w of mine) waiters.add(w);
      return new Promise((resolve) => {
        const until = Date.now() + ms;
        const poll = setInterval(() => {
          const missing = mine.filter((w) => w.at === undefined).length;
          if (missing > 0 && Date.now() < until) return;
          clearInterval(poll);
          for (const w of mine) waiters.delete(w);
          resolve(new Map(mine.filter((w) => w.at !== undefined).map((w) => [w.node, w.at!])));
        }, 5);
      });
    },
    nodesSeen(match) {
      const nodes = new Set<string>();
      const listener = (node: string, what: string, text: string) => void (match(what, text) && nodes.add(node));
      listeners.add(listener);
      return { done: () => (listeners.delete(listener), nodes) };
    },
    async loopDelay() {
      const all = await Promise.all(
        children.map(
          (c) => new Promise<{ p99: number; max: number }>((resolve) => (delays.push(resolve), c.send({ type: 'loop-delay' } satisfies WorkerCommand))),
        ),
      );
      return { p99: Math.max(...all.map((d) => d.p99)), max: Math.max(...all.map((d) => d.max)) };
    },
    lastSeenAt: () => last,
    pids: () => children.map((c) => c.pid!),
    async stop() {
      await Promise.all(
        children.map(
          (c) =>
            new Promise<void>((resolve) => {
              if (c.exitCode !== null || c.signalCode !== null) return resolve();
              const kill = setTimeout(() => c.kill('SIGKILL'), 20_000);
              c.once('exit', () => (clearTimeout(kill), resolve()));
              c.send({ type: 'stop' } satisfies WorkerCommand);
            }),
        ),
      );
    },
  };
}
