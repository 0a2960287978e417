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
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KV } from '@nats-io/kv';
import type { ObjectStore } from '@nats-io/obj';
import { connectBus } from '../src/shared/bus.ts';
import { watchKv } from '../src/shared/watch/watch.ts';
import { APPLIED, CONFIG, PLANS } from '../src/shared/buckets.ts';
import { DENO } from '../test/helpers/bundle.ts';
import { startBenchEngine } from './engine-lib.ts';
import {
  cpuSeconds,
  fileSystemOf,
  latencyRow,
  now,
  numberArg,
  peakRssMiB,
  percentile,
  publishBenchModule,
  ROOT,
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

/** One module, one value changed CHANGES times, one at a time: put → the file's new bytes on disk, beside put → a plain watcher. */
async function measureLatency(mesh: BenchMesh): Promise<void> {
  const { kvm, kv, store } = mesh;
  const engine = await startBenchEngine(BASE, 'lat');
  await publish(kv, store, 'lat', 'bench', engine.root);
  const client = mesh.startClient('bench', engine.socket);
  const applied = await kvm.open(APPLIED);
  await waitUntil('lat applied', async () => (await applied.get('bench.lat'))?.json<{ state: string }>().state === 'applied', 20_000);
  const onDisk = new Map<string, (t: number) => void>();
  engine.onWritten((module, t) => {
    const value = /^value (.*)$/m.exec(readFileSync(join(engine.root, module, 'a.conf'), 'utf8'))?.[1];
    if (value !== undefined) onDisk.get(value)?.(t);
  });
  const floorSeen = new Map<string, (t: number) => void>();
  const watchNc = await connectBus({ servers: [mesh.url], name: 'bench-floor' });
  const floorWatch = await watchKv(watchNc, CONFIG, 'bench.lat.a', (e) => {
    const t = now();
    floorSeen.get(e.value ? new TextDecoder().decode(e.value) : '')?.(t);
  });
  await floorWatch.caughtUp;
  const fill: number[] = [];
  const floor: number[] = [];
  for (let i = 1; i <= CHANGES; i++) {
    const value = `v${i}x`;
    const diskAt = new Promise<number>((resolve) => onDisk.set(value, resolve));
    const floorAt = new Promise<number>((resolve) => floorSeen.set(value, resolve));
    const put = now();
    await kv.config.put('bench.lat.a', value);
    const [d, f] = await Promise.all([diskAt, floorAt]);
    onDisk.delete(value);
    floorSeen.delete(value);
    fill.push(d - put);
    floor.push(f - put);
  }
  floorWatch.stop();
  await watchNc.close();
  const oneModuleRss = peakRssMiB(client.pid!);
  client.kill('SIGTERM');
  await engine.close();
  fill.sort((a, b) => a - b);
  floor.sort((a, b) => a - b);
  console.log(`latency over ${CHANGES} changes (client --settle 0, the reference engine)`);
  console.log(latencyRow('  floor: KV put → watcher', floor));
  console.log(latencyRow('  client: KV put → file on disk', fill));
  console.log(
    `  ratio client/floor              p50 ${(percentile(fill, 50) / percentile(floor, 50)).toFixed(2)}x   p99 ${(percentile(fill, 99) / percentile(floor, 99)).toFixed(2)}x`,
  );
  console.log(`  client peak RSS with one module  ${oneModuleRss.toFixed(0)} MiB (node, the bundle and the connection: the floor of the row below)`);
  if (engine.problems.length > 0) console.log(`  the engine said: ${engine.problems.slice(0, 3).join(' | ')}`);
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

/** `node dist/client.js` (and deno) spawned → its first line that needed the bus's answer. */
async function measureStart(mesh: BenchMesh): Promise<void> {
  console.log('bundle start: process spawned → first line after the bus answered (median of 7)');
  for (const [name, argv] of [
    ['node', [process.execPath]],
    ['deno', [DENO, 'run', '-A']],
  ] as const) {
    const times: number[] = [];
    for (let i = 0; i < 8; i++) times.push(await firstBusLine([...argv], mesh.url, join(mesh.dir, `start-cache-${i}`)));
    const sorted = times.slice(1).sort((a, b) => a - b); // the first run warms deno's own cache
    console.log(`  ${name.padEnd(6)} p50 ${sorted[3]!.toFixed(0)} ms   (bare \`${name}\` with an empty script: ${(await bareStart([...argv])).toFixed(0)} ms)`);
  }
}

/** Milliseconds from spawning the client to its line saying a bucket's state (the bus answered). */
async function firstBusLine(argv: string[], url: string, cache: string): Promise<number> {
  const started = now();
  const child = spawn(
    argv[0]!,
    [...argv.slice(1), join(ROOT, 'dist/client.js'), '--node', 'nobody', '--nats', url, '--socket', join(cache, 'sock'), '--cache', cache],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const at = await new Promise<number>((resolve, reject) => {
    const seen = (d: Buffer) => (/bucket|client ready/.test(d.toString()) ? resolve(now()) : undefined);
    child.stdout!.on('data', seen);
    child.stderr!.on('data', seen);
    child.once('exit', (code) => reject(new Error(`the client exited ${code} before a bus line`)));
  });
  child.kill('SIGKILL');
  return at - started;
}

/** Milliseconds for the runtime to run an empty script: the part of the start no bundle can shave. */
async function bareStart(argv: string[]): Promise<number> {
  const script = join(tmpdir(), `mesh-empty-${process.pid}.mjs`);
  writeFileSync(script, '');
  const times: number[] = [];
  for (let i = 0; i < 7; i++) {
    const started = now();
    spawnSync(argv[0]!, [...argv.slice(1), script]);
    times.push(now() - started);
  }
  return times.sort((a, b) => a - b)[3]!;
}

await main();
