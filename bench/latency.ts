// Benchmarks the client (DESIGN §10) as a user sees it, with the reference engine (dist/engine.js)
// writing real files: config put → the file's new bytes on disk (the engine's log line for the
// request, bench/engine-lib.ts says why; the file is then read and must hold the value), beside the
// raw bus floor (the same put → a plain KV watcher) measured in the same run; and the time and peak memory for a client to bring many modules of three
// files each to `applied`, every file written.
//
//   node build.mjs && node --import tsx bench/latency.ts [--changes N] [--modules N] [--root-in DIR] [--rows latency,scale,start]
//
// --root-in is where the engine's root is made (default the OS temp dir): its file system's fsync is
// part of every write (DESIGN §9), so the run prints which one it is.
import { readdirSync, readFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KV } from '@nats-io/kv';
import type { ObjectStore } from '@nats-io/obj';
import { connectBus } from '../src/shared/bus.ts';
import { watchKv } from '../src/shared/watch/watch.ts';
import { APPLIED, CONFIG, PLANS } from '../src/shared/buckets.ts';
import { measureStart } from './bundle-start.ts';
import { startBenchEngine } from './engine-lib.ts';
import {
  cpuSeconds,
  fakeEngine,
  fileSystemOf,
  latencyRow,
  now,
  numberArg,
  peakRssMiB,
  percentile,
  publishBenchModule,
  startBenchMesh,
  stringArg,
  waitUntil,
  type BenchMesh,
} from './lib.ts';

const CHANGES = numberArg('changes', 1000);
const MODULES_N = numberArg('modules', 1000);
const BASE = stringArg('root-in', tmpdir());
/** Which rows to measure (all by default): `--rows latency,scale,start`. */
const ROWS = new Set(stringArg('rows', 'latency,scale,start').split(','));

function publish(kv: { modules: KV; assignments: KV; config: KV }, store: ObjectStore, module: string, node: string, root: string) {
  const names = ['a', 'b', 'c'];
  return publishBenchModule({ kv, store }, module, node, {
    templates: Object.fromEntries(names.map((t) => [`${t}.conf`, `# ${module} ${t}\nport \${port:http}\nvalue \${config:${t}}\n`])),
    dir: join(root, module),
    config: Object.fromEntries(names.map((t) => [t, `${t}0`])),
    placement: { port: { http: 8080 } },
  });
}

async function main(): Promise<void> {
  const mesh = await startBenchMesh();
  try {
    console.log(
      `engine root in ${BASE} (${fileSystemOf(BASE)}); load average ${loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}`,
    );
    if (ROWS.has('latency')) await measureLatency(mesh);
    if (ROWS.has('scale')) await measureScale(mesh);
    if (ROWS.has('start')) await measureStart(mesh);
  } finally {
    await mesh.close();
  }
}

/**
 * One module, one value changed CHANGES times, one at a time, each timed beside the floor: first
 * to the request at a stub engine's socket (what this bench timed before issue 22), then to the
 * file on disk written by the reference engine (what a user sees).
 */
async function measureLatency(mesh: BenchMesh): Promise<void> {
  const { kvm, kv, store } = mesh;
  const engine = await startBenchEngine(BASE, 'lat');
  const applied = await kvm.open(APPLIED);
  const appliedOn = (node: string) =>
    waitUntil(`${node}.lat applied`, async () => (await applied.get(`${node}.lat`))?.json<{ state: string }>().state === 'applied', 20_000);
  const rows: { name: string; fill: number[]; floor: number[] }[] = [];

  // The stub answers every file `written` without writing it, timed as its request line arrives.
  const atStub = new Map<string, (t: number) => void>();
  const stub = await fakeEngine(join(mesh.dir, 'stub.sock'), (req) => {
    const t = now();
    for (const f of req.files) if (typeof f.content === 'string') atStub.get(/^value (.*)$/m.exec(f.content)?.[1] ?? '')?.(t);
  });
  await publish(kv, store, 'lat', 'stub', engine.root);
  const stubClient = mesh.startClient('stub', join(mesh.dir, 'stub.sock'));
  await appliedOn('stub');
  rows.push({ name: 'client: KV put → request at a stub', ...(await timeChanges(mesh, 'stub', atStub)) });
  stubClient.kill('SIGTERM');
  stub.close();

  const onDisk = new Map<string, (t: number) => void>();
  engine.onWritten((module, t) => onDisk.get(/^value (.*)$/m.exec(readFileSync(join(engine.root, module, 'a.conf'), 'utf8'))?.[1] ?? '')?.(t));
  await publish(kv, store, 'lat', 'bench', engine.root);
  const client = mesh.startClient('bench', engine.socket);
  await appliedOn('bench');
  rows.push({ name: 'client: KV put → file on disk', ...(await timeChanges(mesh, 'bench', onDisk)) });
  const oneModuleRss = peakRssMiB(client.pid!);
  client.kill('SIGTERM');
  await engine.close();

  console.log(`latency over ${CHANGES} changes (client --settle 0), each row beside the floor of its own changes`);
  for (const row of rows) {
    console.log(latencyRow('  floor: KV put → watcher', row.floor));
    console.log(latencyRow(`  ${row.name}`, row.fill));
    console.log(`  ratio client/floor                       p50 ${ratio(row.fill, row.floor, 50)}x   p99 ${ratio(row.fill, row.floor, 99)}x`);
  }
  console.log(`  client peak RSS with one module  ${oneModuleRss.toFixed(0)} MiB (node, the bundle and the connection: the floor of the row below)`);
  if (engine.problems.length > 0) console.log(`  the engine said: ${engine.problems.slice(0, 3).join(' | ')}`);
}

/** Puts `v<i>x` under `<node>.lat.a` CHANGES times, one at a time: each timed from its put to `arrivals` hearing it, and to a plain watcher (the floor). */
async function timeChanges(mesh: BenchMesh, node: string, arrivals: Map<string, (t: number) => void>): Promise<{ fill: number[]; floor: number[] }> {
  const floorSeen = new Map<string, (t: number) => void>();
  const watchNc = await connectBus({ servers: [mesh.url], name: 'bench-floor' });
  const floorWatch = await watchKv(watchNc, CONFIG, `${node}.lat.a`, (e) => {
    const t = now();
    floorSeen.get(e.value ? new TextDecoder().decode(e.value) : '')?.(t);
  });
  await floorWatch.caughtUp;
  const fill: number[] = [];
  const floor: number[] = [];
  for (let i = 1; i <= CHANGES; i++) {
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
  }
  floorWatch.stop();
  await watchNc.close();
  return { fill: fill.sort((a, b) => a - b), floor: floor.sort((a, b) => a - b) };
}

/** `xs` over `floor` at percentile `p`, two decimals. */
function ratio(xs: number[], floor: number[], p: number): string {
  return (percentile(xs, p) / percentile(floor, p)).toFixed(2);
}

/** MODULES_N modules of three files each, from client start to every report applied and every file on disk. */
async function measureScale(mesh: BenchMesh): Promise<void> {
  const { nc, kvm, kv, store } = mesh;
  const engine = await startBenchEngine(BASE, 'big');
  for (let i = 0; i < MODULES_N; i++) await publish(kv, store, `s${i}`, 'big', engine.root);
  const plans = await kvm.open(PLANS);
  await waitUntil('the plans', async () => (await plans.get(`big.s${MODULES_N - 1}`)) !== null, 120_000);
  let appliedCount = 0;
  const states = new Map<string, string>();
  const appliedWatch = await watchKv(nc, APPLIED, 'big.*', (e) => {
    if (!e.value) return;
    const state = (JSON.parse(new TextDecoder().decode(e.value)) as { state: string }).state;
    const before = states.get(e.key);
    states.set(e.key, state);
    if (state === 'applied' && before !== 'applied') appliedCount++;
  });
  await appliedWatch.caughtUp;
  const started = now();
  const cpu = { bus: cpuSeconds(mesh.natsPid), engine: cpuSeconds(engine.pid), bench: process.cpuUsage() };
  const big = mesh.startClient('big', engine.socket);
  await waitUntil(`${MODULES_N} applied`, () => appliedCount === MODULES_N, 300_000);
  const took = now() - started;
  const rss = { client: peakRssMiB(big.pid!), engine: peakRssMiB(engine.pid) };
  const clientCpu = cpuSeconds(big.pid!);
  const benchUsed = process.cpuUsage(cpu.bench);
  const engineCpu = cpuSeconds(engine.pid) - cpu.engine;
  appliedWatch.stop();
  big.kill('SIGTERM');
  await new Promise((resolve) => big.once('exit', resolve));
  const files = readdirSync(engine.root).reduce((n, m) => n + readdirSync(join(engine.root, m)).length, 0);
  await engine.close();
  console.log(`scale: ${MODULES_N} modules × 3 files (${files} files on disk)`);
  console.log(
    `  client start → all applied       ${(took / 1000).toFixed(2)} s   client peak RSS ${rss.client.toFixed(0)} MiB (engine ${rss.engine.toFixed(0)} MiB)`,
  );
  // On a 2-core machine the four share the CPU: what each used bounds the time above.
  console.log(
    `  CPU used meanwhile               client ${clientCpu.toFixed(2)} s, engine ${engineCpu.toFixed(2)} s, nats-server ${(cpuSeconds(mesh.natsPid) - cpu.bus).toFixed(2)} s, this bench (report watch) ${((benchUsed.user + benchUsed.system) / 1e6).toFixed(2)} s`,
  );
  if (engine.problems.length > 0) console.log(`  the engine said: ${engine.problems.slice(0, 3).join(' | ')}`);
}

await main();
