// The client's CPU a change (issue 34, fifth session): one client with one module of three files,
// one value changed N times, and a bare watcher (bench/relay.ts's, no mesh code) of the same key in
// the same run, each process's CPU read from /proc over the same changes. Back to back (each put as
// soon as both heard the last) and spaced (`--gap-ms` idle between changes), and each client bundle
// named by `--clients` in turn, `--rounds` times over, so an old and a new build meet the same machine.
//
//   node build.mjs && node --import tsx bench/change-cpu.ts [--changes N] [--gap-ms MS] [--rounds R] [--clients A.js,B.js]
//
// A stub engine in this process answers every file `written`; its CPU is this bench's, not the
// client's. The first half of a row's changes still warms V8's compiler up: the row prints the CPU
// a change over all of them and over the second half (a steady client).
import { type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { APPLIED, CONFIG } from '../src/shared/contract/buckets.ts';
import { startRelay } from './change-row.ts';
import { cpuSeconds, fakeEngine, helperCpuSeconds, numberArg, publishThreeFiles, ROOT, startBenchMesh, stringArg, waitUntil, type BenchMesh } from './lib.ts';

const CHANGES = numberArg('changes', 2000);
const GAP_MS = numberArg('gap-ms', 2);
const ROUNDS = numberArg('rounds', 1);
const CLIENTS = stringArg('clients', join(ROOT, 'dist/client.js')).split(',');

/** What one row measured: CPU ms a change of the client and of the bare watcher, over all changes and over the second half; write syscalls a change of each. */
type CpuRow = {
  system: number;
  helpers: number;
  client: number;
  watcher: number;
  clientWarm: number;
  watcherWarm: number;
  clientWrites: number;
  watcherWrites: number;
};

/** CPU seconds a process has spent in the kernel (its syscalls: the writes, reads and wake-ups). */
function systemSeconds(pid: number): number {
  return Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[12]) / 100;
}

/** How many write syscalls (any descriptor: the bus, the engine's socket, the log) a process has made. */
function writeCalls(pid: number): number {
  return Number(/^syscw: (\d+)$/m.exec(readFileSync(`/proc/${pid}/io`, 'utf8'))![1]);
}

/** The two processes watching the key, and where each says it heard a value. */
type Pair = { client: ChildProcess; watcher: ChildProcess; heard: { client: Map<string, () => void>; watcher: Map<string, () => void> } };

/** CPU seconds of a process, once it has stopped using any (two reads 50 ms apart agree): a change's afterwork counted whole. */
async function settledCpu(pid: number): Promise<number> {
  let last = cpuSeconds(pid);
  for (;;) {
    await new Promise((r) => setTimeout(r, 50));
    const next = cpuSeconds(pid);
    if (next === last) return next;
    last = next;
  }
}

/** Puts `changes` values under `key`, each once both processes heard the last (and `gap` ms after); returns CPU ms a change. */
async function change(mesh: BenchMesh, pair: Pair, key: string, tag: string, gap: number): Promise<CpuRow> {
  const pids = [pair.client.pid!, pair.watcher.pid!];
  const marks: number[][] = [await Promise.all(pids.map(settledCpu))];
  const writes = pids.map(writeCalls);
  const helpers = helperCpuSeconds(pids[0]!);
  const system = systemSeconds(pids[0]!);
  for (let i = 1; i <= CHANGES; i++) {
    const value = `${tag}${i}x`;
    const heard = [pair.heard.client, pair.heard.watcher].map((m) => new Promise<void>((r) => m.set(value, r)));
    await mesh.kv.config.put(key, value);
    await Promise.all(heard);
    pair.heard.client.delete(value);
    pair.heard.watcher.delete(value);
    if (i === CHANGES / 2) marks.push(pids.map(cpuSeconds));
    if (gap > 0) await new Promise((r) => setTimeout(r, gap));
  }
  marks.push(await Promise.all(pids.map(settledCpu)));
  const wrote = pids.map((pid, i) => (writeCalls(pid) - writes[i]!) / CHANGES);
  const perChange = (a: number[], b: number[], n: number, i: number) => ((b[i]! - a[i]!) * 1000) / n;
  const [start, half, end] = marks as [number[], number[], number[]];
  return {
    system: ((systemSeconds(pids[0]!) - system) * 1000) / CHANGES,
    helpers: ((helperCpuSeconds(pids[0]!) - helpers) * 1000) / CHANGES,
    client: perChange(start, end, CHANGES, 0),
    watcher: perChange(start, end, CHANGES, 1),
    clientWarm: perChange(half, end, CHANGES / 2, 0),
    watcherWarm: perChange(half, end, CHANGES / 2, 1),
    clientWrites: wrote[0]!,
    watcherWrites: wrote[1]!,
  };
}

/** Starts `bundle` as node `node`'s client on a stub engine, and a bare watcher of the same key; both heard per value. */
async function startPair(mesh: BenchMesh, bundle: string, node: string): Promise<Pair & { close(): Promise<void> }> {
  const heard = { client: new Map<string, () => void>(), watcher: new Map<string, () => void>() };
  const stubSocket = join(mesh.dir, `${node}-stub.sock`);
  const stub = await fakeEngine(stubSocket, (req) => {
    for (const f of req.files) if (typeof f.content === 'string') heard.client.get(/^value (.*)$/m.exec(f.content)?.[1] ?? '')?.();
  });
  // The bare watcher's socket: each line is a value it was handed.
  const sinkSocket = join(mesh.dir, `${node}-sink.sock`);
  const sink = createServer((conn) => {
    let buf = '';
    conn.setEncoding('utf8').on('data', (d: string) => {
      const lines = (buf + d).split('\n');
      buf = lines.pop() ?? '';
      for (const line of lines) heard.watcher.get(line)?.();
    });
  });
  await new Promise<void>((r) => sink.listen(sinkSocket, r));
  await publishThreeFiles(mesh, 'lat', node, join(mesh.dir, `${node}-root`));
  process.env['MESH_BENCH_CLIENT'] = bundle;
  const client = mesh.startClient(node, stubSocket);
  const applied = await mesh.kvm.open(APPLIED);
  await waitUntil(`${node}.lat applied`, async () => (await applied.get(`${node}.lat`))?.json<{ state: string }>().state === 'applied', 30_000);
  let watching = false;
  const watcher = startRelay(['watch', mesh.url, CONFIG, `${node}.lat.a`, sinkSocket], ['ignore', 'pipe', 'ignore']);
  watcher.stdout!.on('data', () => (watching = true));
  await waitUntil('the bare watcher', () => watching, 20_000);
  return {
    client,
    watcher,
    heard,
    // Waits for the client's exit: a CPU profile (MESH_BENCH_PROF) is written as it exits.
    async close() {
      const exited = new Promise((r) => client.once('exit', r));
      client.kill('SIGTERM');
      watcher.kill('SIGTERM');
      stub.close();
      sink.close();
      await exited;
    },
  };
}

const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
const ms = (x: number) => x.toFixed(3);

async function main(): Promise<void> {
  for (const c of CLIENTS) if (!existsSync(c)) throw new Error(`bench/change-cpu.ts: no client bundle at ${c}`);
  const mesh = await startBenchMesh();
  try {
    console.log(
      `the client's CPU a change: one module of three files, ${CHANGES} changes of one value a row, a stub engine; a bare watcher of the same key in the same run`,
    );
    for (let round = 0; round < ROUNDS; round++) {
      for (const [i, bundle] of CLIENTS.entries()) {
        const pair = await startPair(mesh, bundle, `cpu${round}x${i}`);
        try {
          for (const [name, gap] of [
            ['back to back', 0],
            [`${GAP_MS} ms apart`, GAP_MS],
          ] as const) {
            const before = load();
            const row = await change(mesh, pair, `cpu${round}x${i}.lat.a`, `r${round}g${gap}v`, gap);
            console.log(
              `  ${bundle.replace(ROOT, '')} ${name.padEnd(12)} client ${ms(row.client)} ms (second half ${ms(row.clientWarm)}), of which in the kernel ${ms(row.system)} and off its main thread ${ms(row.helpers)}, bare watcher ${ms(row.watcher)} (${ms(row.watcherWarm)}); client over watcher ${ms(row.clientWarm - row.watcherWarm)} ms warm; write syscalls a change: client ${row.clientWrites.toFixed(2)}, watcher ${row.watcherWrites.toFixed(2)}; load average ${before}`,
            );
          }
        } finally {
          await pair.close();
        }
      }
    }
  } finally {
    await mesh.close();
  }
}

await main();
