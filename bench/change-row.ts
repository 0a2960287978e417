// The change row of bench/latency.ts: one module, one config value changed many times, one at a
// time, each timed from its put to where the client's work is heard, beside the bus floor (the same
// put → a plain KV watcher, on its own connection in this process) measured for the same changes;
// the same changes through two bare processes of the same shape (bench/relay.ts), the topology's own
// floor; and the CPU each process used a change.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { connectBus } from '../src/shared/bus/bus.ts';
import { watchKv } from '../src/shared/bus/watch/watch.ts';
import { APPLIED, CONFIG } from '../src/shared/contract/buckets.ts';
import { startBenchEngine } from './engine-lib.ts';
import { cpuSeconds, fakeEngine, latencyRow, now, numberArg, peakRssMiB, percentile, publishThreeFiles, ROOT, waitUntil, type BenchMesh } from './lib.ts';

/**
 * Idle time between one change's arrival and the next change's put, the same in every row (`--gap-ms`,
 * default 0: back to back). Back to back, a change's put lands while the process that took the last one
 * is still at its afterwork (the client's report, the engine's record), so the rows time a cadence of
 * 1,000 changes a second as much as one change; with a gap they time one change as an operator makes it.
 */
const GAP_MS = numberArg('gap-ms', 0);

/** Publishes module `lat` (three files, written under `root`) for `node`. */
function publishLatModule(mesh: BenchMesh, node: string, root: string): Promise<void> {
  return publishThreeFiles(mesh, 'lat', node, root);
}

/**
 * One module, one value changed `changes` times, one at a time, each timed beside the floor: first (`withStub`)
 * to the request at a stub engine's socket (what this bench timed before issue 22), then to the
 * file on disk written by the reference engine (what a user sees).
 */
export async function measureLatency(mesh: BenchMesh, base: string, tag: string, changes: number, withStub: boolean): Promise<void> {
  const { kvm } = mesh;
  const engine = await startBenchEngine(base, `lat${tag}`);
  const applied = await kvm.open(APPLIED);
  const appliedOn = (node: string) =>
    waitUntil(`${node}.lat applied`, async () => (await applied.get(`${node}.lat`))?.json<{ state: string }>().state === 'applied', 20_000);
  const rows: Row[] = [];

  if (withStub) rows.push({ name: 'client: KV put → request at a stub', ...(await timeAtStub(mesh, engine.root, changes, appliedOn)) });
  const bare = { name: 'bare watcher → bare engine → file', ...(await timeThroughRelay(mesh, base, changes)) };
  rows.push(bare);
  const clientBare = { name: 'client → bare fill engine → file', ...(await timeThroughClientAndBareEngine(mesh, base, tag, changes, appliedOn)) };
  rows.push(clientBare);

  const onDisk = new Map<string, (t: number) => void>();
  engine.onWritten((module, t) => onDisk.get(/^value (.*)$/m.exec(readFileSync(join(engine.root, module, 'a.conf'), 'utf8'))?.[1] ?? '')?.(t));
  const node = `lat${tag}`;
  await publishLatModule(mesh, node, engine.root);
  const client = mesh.startClient(node, engine.socket);
  await appliedOn(node);
  const pids = { client: client.pid!, engine: engine.pid };
  const real = { name: 'client: KV put → file on disk', ...(await withCpu(mesh, pids, changes, () => timeChanges(mesh, node, changes, onDisk))) };
  rows.push(real);
  const oneModuleRss = peakRssMiB(client.pid!);
  client.kill('SIGTERM');
  await engine.close();

  console.log(
    `latency over ${changes} changes (client --settle 0), ${GAP_MS > 0 ? `each put ${GAP_MS} ms after the last change arrived` : 'back to back'}, each row beside the floor of its own changes`,
  );
  for (const row of rows) {
    console.log(latencyRow('  floor: KV put → watcher', row.floor));
    console.log(latencyRow(`  ${row.name}`, row.fill));
    console.log(`  ratio to the floor                       p50 ${ratio(row.fill, row.floor, 50)}x   p99 ${ratio(row.fill, row.floor, 99)}x`);
    if (row.cpu) console.log(`  CPU a change (ms)                        ${row.cpu}`);
  }
  console.log(`  against the bare topology (issue 34 item 4: p50 ≤ ${GOAL.p50}×, p99 ≤ ${GOAL.p99}× the bare row's, same run)`);
  for (const row of [real, clientBare]) console.log(againstBare(row, bare));
  console.log(`  client peak RSS with one module  ${oneModuleRss.toFixed(0)} MiB (node, the bundle and the connection: the floor of the row below)`);
  if (engine.problems.length > 0) console.log(`  the engine said: ${engine.problems.slice(0, 3).join(' | ')}`);
}

/** A row of the table: the changes' times, the floor's for the same changes, and what each process used a change. */
type Row = Timed & { name: string; cpu?: string };

/**
 * Times the changes and says the CPU each of `pids`, nats-server and this bench used a change (ms):
 * on two cores they take turns, so the sum bounds the row as much as any hop does.
 */
async function withCpu(mesh: BenchMesh, pids: Record<string, number>, changes: number, time: () => Promise<Timed>): Promise<Timed & { cpu: string }> {
  const all = { ...pids, 'nats-server': mesh.natsPid };
  const before = Object.fromEntries(Object.entries(all).map(([name, pid]) => [name, cpuSeconds(pid)]));
  const bench = process.cpuUsage();
  const timed = await time();
  const benchUsed = process.cpuUsage(bench);
  const perChange = (s: number) => ((s * 1000) / changes).toFixed(2);
  const used = Object.entries(all).map(([name, pid]) => `${name} ${perChange(cpuSeconds(pid) - before[name]!)}`);
  used.push(`this bench (put, floor, the file's line) ${perChange((benchUsed.user + benchUsed.system) / 1e6)}`);
  return { ...timed, cpu: used.join(', ') };
}

/** The same changes to the request at a stub engine's socket, which answers every file `written` without writing it. */
async function timeAtStub(mesh: BenchMesh, root: string, changes: number, appliedOn: (node: string) => Promise<void>): Promise<Timed> {
  const atStub = new Map<string, (t: number) => void>();
  const stub = await fakeEngine(join(mesh.dir, 'stub.sock'), (req) => {
    const t = now();
    for (const f of req.files) if (typeof f.content === 'string') atStub.get(/^value (.*)$/m.exec(f.content)?.[1] ?? '')?.(t);
  });
  await publishLatModule(mesh, 'stub', root);
  const client = mesh.startClient('stub', join(mesh.dir, 'stub.sock'));
  await appliedOn('stub');
  const timed = await timeChanges(mesh, 'stub', changes, atStub);
  client.kill('SIGTERM');
  stub.close();
  return timed;
}

/** The line bench/relay.ts's bare engines say once a value's file is on disk. */
const RELAY_WRITTEN = /^written (.*)$/;

/** A bench/relay.ts process; `written` hears each value its engine says it wrote. */
export function startRelay(args: string[], stdio: ('ignore' | 'pipe')[], written?: Map<string, (t: number) => void>): ChildProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'bench/relay.ts'), ...args], {
    stdio: stdio as ['ignore', 'ignore' | 'pipe', 'ignore' | 'pipe'],
    cwd: ROOT,
  });
  let partial = '';
  child.stderr?.setEncoding('utf8').on('data', (d: string) => {
    const t = now();
    const lines = (partial + d).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) written?.get(RELAY_WRITTEN.exec(line)?.[1] ?? '')?.(t);
  });
  return child;
}

/**
 * The same changes through the topology floor (bench/relay.ts): a plain watcher process hands each
 * value to a bare engine process, which writes the file as the reference engine does and says so on
 * stderr. No mesh code but the watch: what two processes and a file write cost on this machine.
 */
async function timeThroughRelay(mesh: BenchMesh, base: string, changes: number): Promise<Timed & { cpu: string }> {
  const dir = mkdtempSync(join(base, 'mesh-bench-relay-'));
  const root = join(dir, 'root');
  mkdirSync(root);
  const socket = join(dir, 'relay.sock');
  const written = new Map<string, (t: number) => void>();
  const engine = startRelay(['engine', socket, root], ['ignore', 'ignore', 'pipe'], written);
  let watching = false;
  let watcher: ReturnType<typeof startRelay> | undefined;
  // The engine's wait inside the try: one that times out still takes the engine and its dir with it.
  try {
    await waitUntil('the bare engine', () => existsSync(socket), 20_000);
    watcher = startRelay(['watch', mesh.url, CONFIG, 'relay.lat.a', socket], ['ignore', 'pipe', 'ignore']);
    watcher.stdout!.on('data', () => (watching = true));
    await waitUntil('the bare watcher', () => watching, 20_000);
    const pids = { watcher: watcher.pid!, engine: engine.pid! };
    return await withCpu(mesh, pids, changes, () => timeChanges(mesh, 'relay', changes, written));
  } finally {
    watcher?.kill('SIGTERM');
    engine.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The same changes through the client and bench/relay.ts's bare engine speaking the fill protocol:
 * the topology floor's hops with the mesh's client, and only it, in them.
 */
async function timeThroughClientAndBareEngine(mesh: BenchMesh, base: string, tag: string, changes: number, appliedOn: (node: string) => Promise<void>) {
  const dir = mkdtempSync(join(base, 'mesh-bench-bare-fill-'));
  const socket = join(dir, 'fill.sock');
  const written = new Map<string, (t: number) => void>();
  const engine = startRelay(['fill-engine', socket], ['ignore', 'ignore', 'pipe'], written);
  const node = `latbare${tag}`;
  try {
    await waitUntil('the bare fill engine', () => existsSync(socket), 20_000);
    await publishLatModule(mesh, node, join(dir, 'root'));
    const client = mesh.startClient(node, socket);
    await appliedOn(node);
    const timed = await withCpu(mesh, { client: client.pid!, engine: engine.pid! }, changes, () => timeChanges(mesh, node, changes, written));
    client.kill('SIGTERM');
    return timed;
  } finally {
    engine.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Each change's time to where it was heard, and to the floor's watcher, both sorted. */
type Timed = { fill: number[]; floor: number[] };

/** Puts `v<i>x` under `<node>.lat.a` `changes` times, one at a time: each timed from its put to `arrivals` hearing it, and to a plain watcher (the floor). */
async function timeChanges(mesh: BenchMesh, node: string, changes: number, arrivals: Map<string, (t: number) => void>): Promise<Timed> {
  const floorSeen = new Map<string, (t: number) => void>();
  const watchNc = await connectBus({ servers: [mesh.url], name: 'bench-floor' });
  const floorWatch = await watchKv(watchNc, CONFIG, `${node}.lat.a`, (e) => {
    const t = now();
    floorSeen.get(e.value ? new TextDecoder().decode(e.value) : '')?.(t);
  });
  await floorWatch.caughtUp;
  const fill: number[] = [];
  const floor: number[] = [];
  for (let i = 1; i <= changes; i++) {
    const value = `v${i}x`;
    const arrived = new Promise<number>((resolve) => arrivals.set(value, resolve));
    const floorAt = new Promise<number>((resolve) => floorSeen.set(value, resolve));
    const put = now();
    await mesh.kv.config.put(`${node}.lat.a`, value);
    const [a, f] = await Promise.all([arrived, floorAt]);
    arrivals.delete(value);
    floorSeen.delete(value);
    fill.push(a - put);
    floor.push(f - put);
    if (GAP_MS > 0) await new Promise((resolve) => setTimeout(resolve, GAP_MS));
  }
  floorWatch.stop();
  await watchNc.close();
  return { fill: fill.sort((a, b) => a - b), floor: floor.sort((a, b) => a - b) };
}

/** Issue 34 item 4's goals: a change through the mesh against the same change through the bare topology. */
const GOAL = { p50: 1.15, p99: 1.5 };

/** A row's p50 and p99 over the bare topology's, and whether each goal is met. */
function againstBare(row: Row, bare: Row): string {
  const [p50, p99] = [50, 99].map((p) => percentile(row.fill, p) / percentile(bare.fill, p)) as [number, number];
  const met = (ok: boolean) => (ok ? 'met' : 'NOT met');
  return `    ${row.name.padEnd(38)} p50 ${p50.toFixed(2)}x (${met(p50 <= GOAL.p50)})   p99 ${p99.toFixed(2)}x (${met(p99 <= GOAL.p99)})`;
}

/** `xs` over `floor` at percentile `p`, two decimals. */
function ratio(xs: number[], floor: number[], p: number): string {
  return (percentile(xs, p) / percentile(floor, p)).toFixed(2);
}
