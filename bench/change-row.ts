// The change row of bench/latency.ts: one module, one config value changed many times, one at a
// time, each timed from its put to where the client's work is heard, beside the bus floor (the same
// put → a plain KV watcher, on its own connection in this process) measured for the same changes.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { connectBus } from '../src/shared/bus.ts';
import { watchKv } from '../src/shared/watch/watch.ts';
import { APPLIED, CONFIG } from '../src/shared/buckets.ts';
import { startBenchEngine } from './engine-lib.ts';
import { fakeEngine, latencyRow, now, peakRssMiB, percentile, publishThreeFiles, waitUntil, type BenchMesh } from './lib.ts';

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
  const rows: { name: string; fill: number[]; floor: number[] }[] = [];

  if (withStub) rows.push({ name: 'client: KV put → request at a stub', ...(await timeAtStub(mesh, engine.root, changes, appliedOn)) });

  const onDisk = new Map<string, (t: number) => void>();
  engine.onWritten((module, t) => onDisk.get(/^value (.*)$/m.exec(readFileSync(join(engine.root, module, 'a.conf'), 'utf8'))?.[1] ?? '')?.(t));
  const node = `lat${tag}`;
  await publishLatModule(mesh, node, engine.root);
  const client = mesh.startClient(node, engine.socket);
  await appliedOn(node);
  rows.push({ name: 'client: KV put → file on disk', ...(await timeChanges(mesh, node, changes, onDisk)) });
  const oneModuleRss = peakRssMiB(client.pid!);
  client.kill('SIGTERM');
  await engine.close();

  console.log(`latency over ${changes} changes (client --settle 0), each row beside the floor of its own changes`);
  for (const row of rows) {
    console.log(latencyRow('  floor: KV put → watcher', row.floor));
    console.log(latencyRow(`  ${row.name}`, row.fill));
    console.log(`  ratio client/floor                       p50 ${ratio(row.fill, row.floor, 50)}x   p99 ${ratio(row.fill, row.floor, 99)}x`);
  }
  console.log(`  client peak RSS with one module  ${oneModuleRss.toFixed(0)} MiB (node, the bundle and the connection: the floor of the row below)`);
  if (engine.problems.length > 0) console.log(`  the engine said: ${engine.problems.slice(0, 3).join(' | ')}`);
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
  }
  floorWatch.stop();
  await watchNc.close();
  return { fill: fill.sort((a, b) => a - b), floor: floor.sort((a, b) => a - b) };
}

/** `xs` over `floor` at percentile `p`, two decimals. */
function ratio(xs: number[], floor: number[], p: number): string {
  return (percentile(xs, p) / percentile(floor, p)).toFixed(2);
}
