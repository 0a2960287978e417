// Benchmarks the client (DESIGN §10): config put → engine receives the file, beside the raw bus floor
// (the same put → a plain KV watcher) measured in the same run; and the time and peak memory for a
// client to bring many modules of three files each to `applied`.
//
//   node build.mjs && node --import tsx bench/latency.ts [--changes N] [--modules N]
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { packTar } from 'modern-tar';
import type { KV } from '@nats-io/kv';
import type { ObjectStore } from '@nats-io/obj';
import { connectBus, watchKv } from '../src/shared/bus.ts';
import { APPLIED, CONFIG, PLANS } from '../src/shared/buckets.ts';
import { fakeEngine, latencyRow, now, numberArg, peakRssMiB, percentile, startBenchMesh, waitUntil } from './lib.ts';

const CHANGES = numberArg('changes', 1000);
const MODULES_N = numberArg('modules', 1000);

async function publish(kv: { modules: KV; assignments: KV; config: KV }, store: ObjectStore, module: string, node: string) {
  const templates = ['a', 'b', 'c'].map((t) => ({ name: `${t}.conf`, text: `# ${module} ${t}\nport \${port:http}\nvalue \${config:${t}}\n` }));
  const tar = await packTar(templates.map((t) => {
    const body = new TextEncoder().encode(t.text);
    return { header: { name: t.name, size: body.length, type: 'file' as const }, body };
  }));
  await store.putBlob({ name: `${module}.tar` }, tar);
  await kv.modules.put(module, JSON.stringify({
    module, build: '1', published: true,
    archive: { ref: `obj://mesh-catalog_archives/${module}.tar`, digest: 'sha256:' + createHash('sha256').update(tar).digest('hex') },
    provisioning: { files: templates.map((t) => ({ path: `/srv/${module}/${t.name}`, template: t.name, change: 'restart' })) },
  }));
  for (const t of ['a', 'b', 'c']) await kv.config.put(`${node}.${module}.${t}`, `${t}0`);
  await kv.assignments.put(`${node}.${module}`, JSON.stringify({ node, module, placement: { port: { http: 8080 } } }));
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
      for (const f of req.files) for (const [needle, resolve] of waiters) if (typeof f.content === 'string' && f.content.includes(needle)) { waiters.delete(needle); resolve(t); }
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
    client.kill('SIGTERM');
    engine.close();
    fill.sort((a, b) => a - b);
    floor.sort((a, b) => a - b);
    const row = latencyRow;
    console.log(`latency over ${CHANGES} changes (client --settle 0)`);
    console.log(row('  floor: KV put → watcher', floor));
    console.log(row('  client: KV put → engine has file', fill));
    console.log(`  ratio client/floor              p50 ${(percentile(fill, 50) / percentile(floor, 50)).toFixed(2)}x   p99 ${(percentile(fill, 99) / percentile(floor, 99)).toFixed(2)}x`);

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
    const big = mesh.startClient('big', join(dir, 'big.sock'));
    await waitUntil(`${MODULES_N} applied`, () => appliedCount === MODULES_N, 300_000);
    const took = now() - started;
    const rss = peakRssMiB(big.pid!);
    appliedWatch.stop();
    big.kill('SIGTERM');
    await new Promise((resolve) => big.once('exit', resolve));
    bigEngine.close();
    console.log(`scale: ${MODULES_N} modules × 3 files (${files} files to the engine)`);
    console.log(`  client start → all applied       ${(took / 1000).toFixed(2)} s   peak RSS ${rss.toFixed(0)} MiB`);
  } finally {
    await mesh.close();
  }
}

await main();
