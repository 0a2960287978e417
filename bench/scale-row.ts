// The scale row of bench/latency.ts: a client brings many modules of three files each from its start
// to every report `applied`, the reference engine writing every file; the time, each process's CPU
// and the client's peak RSS.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { watchKv } from '../src/shared/bus/watch/watch.ts';
import { APPLIED, PLANS } from '../src/shared/contract/buckets.ts';
import { engineBurst, startBenchEngine } from './engine-lib.ts';
import { cpuSeconds, now, peakRssMiB, publishThreeFiles, waitUntil, type BenchMesh } from './lib.ts';

/** `modules` modules of three files each, from client start to every report applied and every file on disk. */
export async function measureScale(mesh: BenchMesh, base: string, tag: string, modules: number): Promise<void> {
  const { nc, kvm } = mesh;
  const node = `big${tag}`;
  const engine = await startBenchEngine(base, node);
  for (let i = 0; i < modules; i++) await publishThreeFiles(mesh, `s${i}`, node, engine.root);
  const plans = await kvm.open(PLANS);
  await waitUntil('the plans', async () => (await plans.get(`${node}.s${modules - 1}`)) !== null, 120_000);
  let appliedCount = 0;
  const states = new Map<string, string>();
  const appliedWatch = await watchKv(nc, APPLIED, `${node}.*`, (e) => {
    if (!e.value) return;
    const state = (JSON.parse(new TextDecoder().decode(e.value)) as { state: string }).state;
    const before = states.get(e.key);
    states.set(e.key, state);
    if (state === 'applied' && before !== 'applied') appliedCount++;
  });
  await appliedWatch.caughtUp;
  const started = now();
  const cpu = { bus: cpuSeconds(mesh.natsPid), engine: cpuSeconds(engine.pid), bench: process.cpuUsage() };
  const big = mesh.startClient(node, engine.socket);
  await waitUntil(`${modules} applied`, () => appliedCount === modules, 300_000);
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
  console.log(`scale: ${modules} modules × 3 files (${files} files on disk)`);
  console.log(
    `  client start → all applied       ${(took / 1000).toFixed(2)} s   client peak RSS ${rss.client.toFixed(0)} MiB (engine ${rss.engine.toFixed(0)} MiB)`,
  );
  // On a 2-core machine the four share the CPU: what each used bounds the time above.
  console.log(
    `  CPU used meanwhile               client ${clientCpu.toFixed(2)} s, engine ${engineCpu.toFixed(2)} s, nats-server ${(cpuSeconds(mesh.natsPid) - cpu.bus).toFixed(2)} s, this bench (report watch) ${((benchUsed.user + benchUsed.system) / 1e6).toFixed(2)} s`,
  );
  if (engine.problems.length > 0) console.log(`  the engine said: ${engine.problems.slice(0, 3).join(' | ')}`);
  // The engine's share alone, and what a declaration (the record it then keeps) adds to it.
  const bare = await engineBurst(base, modules, false);
  const declared = await engineBurst(base, modules, true);
  console.log(
    `  the reference engine alone, the same ${modules} requests at once: ${(bare.ms / 1000).toFixed(2)} s (CPU ${(bare.cpu / 1000).toFixed(2)} s); with a declaration of every path ${(declared.ms / 1000).toFixed(2)} s (CPU ${(declared.cpu / 1000).toFixed(2)} s)`,
  );
}
