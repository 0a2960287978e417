// Benchmarks the client (DESIGN §10): config put → engine receives the file, beside the raw bus floor
// (the same put → a plain KV watcher) measured in the same run; and the time and peak memory for a
// client to bring many modules of three files each to `applied`.
//
//   node build.mjs && node --import tsx bench/latency.ts [--changes N] [--modules N]
import { spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KV } from '@nats-io/kv';
import type { ObjectStore } from '@nats-io/obj';
import { connectBus } from '../src/shared/bus.ts';
import { watchKv } from '../src/shared/watch/watch.ts';
import { APPLIED, CONFIG, PLANS } from '../src/shared/buckets.ts';
import { DENO } from '../test/helpers/bundle.ts';
import { cpuSeconds, fakeEngine, latencyRow, now, numberArg, peakRssMiB, percentile, publishBenchModule, ROOT, startBenchMesh, waitUntil } from './lib.ts';

const CHANGES = numberArg('changes', 1000);
const MODULES_N = numberArg('modules', 1000);

function publish(kv: { modules: KV; assignments: KV; config: KV }, store: ObjectStore, module: string, node: string) {
  const names = ['a', 'b', 'c'];
  return publishBenchModule({ kv, store }, module, node, {
    templates: Object.fromEntries(names.map((t) => [`${t}.conf`, `# ${module} ${t}\nport \${port:http}\nvalue \${config:${t}}\n`])),
    dir: `/srv/${module}`,
    config: Object.fromEntries(names.map((t) => [t, `${t}0`])),
    placement: { port: { http: 8080 } },
  });
}

async function main(): Promise<void> {
  const mesh = await startBenchMesh();
  const { nc, kvm, kv, store, dir } = mesh;
  try {
    // 1. Latency: one module, one value changed CHANGES times, one at a time.
    const socket = join(dir, 'latency.sock');
    const waiters = new Map<string, (t: number) => void>();
    const engine = await fakeEngine(socket, (req) => {
      const t = now();
      for (const f of req.files)
        for (const [needle, resolve] of waiters)
          if (typeof f.content === 'string' && f.content.includes(needle)) {
            waiters.delete(needle);
            resolve(t);
          }
    });
    await publish(kv, store, 'lat', 'bench');
    const client = mesh.startClient('bench', socket);
    const applied = await kvm.open(APPLIED);
    await waitUntil('lat applied', async () => (await applied.get('bench.lat'))?.json<{ state: string }>().state === 'applied', 20_000);

    const floorSeen = new Map<string, (t: number) => void>();
    const watchNc = await connectBus({ servers: [mesh.url], name: 'bench-floor' });
    const floorWatch = await watchKv(watchNc, CONFIG, 'bench.lat.a', (e) => {
      const t = now();
      const text = e.value ? new TextDecoder().decode(e.value) : '';
      floorSeen.get(text)?.(t);
    });
    await floorWatch.caughtUp;
    const fill: number[] = [];
    const floor: number[] = [];
    for (let i = 1; i <= CHANGES; i++) {
      const value = `v${i}x`;
      const engineAt = new Promise<number>((resolve) => waiters.set(`value ${value}\n`, resolve));
      const floorAt = new Promise<number>((resolve) => floorSeen.set(value, resolve));
      const put = now();
      await kv.config.put('bench.lat.a', value);
      const [e, f] = await Promise.all([engineAt, floorAt]);
      floorSeen.delete(value);
      fill.push(e - put);
      floor.push(f - put);
    }
    floorWatch.stop();
    await watchNc.close();
    const oneModuleRss = peakRssMiB(client.pid!);
    client.kill('SIGTERM');
    engine.close();
    fill.sort((a, b) => a - b);
    floor.sort((a, b) => a - b);
    const row = latencyRow;
    console.log(`latency over ${CHANGES} changes (client --settle 0)`);
    console.log(row('  floor: KV put → watcher', floor));
    console.log(row('  client: KV put → engine has file', fill));
    console.log(
      `  ratio client/floor              p50 ${(percentile(fill, 50) / percentile(floor, 50)).toFixed(2)}x   p99 ${(percentile(fill, 99) / percentile(floor, 99)).toFixed(2)}x`,
    );
    console.log(`  client peak RSS with one module  ${oneModuleRss.toFixed(0)} MiB (node, the bundle and the connection: the floor of the row below)`);

    // 2. Scale: MODULES_N modules of three files each, from client start to every report applied.
    for (let i = 0; i < MODULES_N; i++) await publish(kv, store, `s${i}`, 'big');
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
    let files = 0;
    const bigEngine = await fakeEngine(join(dir, 'big.sock'), (req) => (files += req.files.length));
    const started = now();
    const busCpu = cpuSeconds(mesh.natsPid);
    const benchCpu = process.cpuUsage();
    const big = mesh.startClient('big', join(dir, 'big.sock'));
    await waitUntil(`${MODULES_N} applied`, () => appliedCount === MODULES_N, 300_000);
    const took = now() - started;
    const rss = peakRssMiB(big.pid!);
    const clientCpu = cpuSeconds(big.pid!);
    const benchUsed = process.cpuUsage(benchCpu);
    appliedWatch.stop();
    big.kill('SIGTERM');
    await new Promise((resolve) => big.once('exit', resolve));
    bigEngine.close();
    console.log(`scale: ${MODULES_N} modules × 3 files (${files} files to the engine)`);
    console.log(`  client start → all applied       ${(took / 1000).toFixed(2)} s   peak RSS ${rss.toFixed(0)} MiB`);
    // On a 2-core machine the three share the CPU: what each used bounds the time above.
    console.log(
      `  CPU used meanwhile               client ${clientCpu.toFixed(2)} s, nats-server ${(cpuSeconds(mesh.natsPid) - busCpu).toFixed(2)} s, this bench (fake engine, report watch) ${((benchUsed.user + benchUsed.system) / 1e6).toFixed(2)} s`,
    );

    // 3. Bundle start: `node dist/client.js` (and deno) to its first line that needed the bus's answer.
    console.log('bundle start: process spawned → first line after the bus answered (median of 7)');
    for (const [name, argv] of [
      ['node', [process.execPath]],
      ['deno', [DENO, 'run', '-A']],
    ] as const) {
      const times: number[] = [];
      for (let i = 0; i < 8; i++) times.push(await firstBusLine([...argv], mesh.url, join(dir, `start-cache-${i}`)));
      const sorted = times.slice(1).sort((a, b) => a - b); // the first run warms deno's own cache
      console.log(
        `  ${name.padEnd(6)} p50 ${sorted[3]!.toFixed(0)} ms   (bare \`${name}\` with an empty script: ${(await bareStart([...argv])).toFixed(0)} ms)`,
      );
    }
  } finally {
    await mesh.close();
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
