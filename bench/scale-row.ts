// The scale rows of bench/latency.ts (issue 34 item 3): a client brings many modules of three files
// each from its start to every report applied — with a stub engine (the mesh's own cost), and with
// the reference engine writing every file — beside the bus's cold floor for the same node, measured
// in the same run (bench/cold-floor.ts); the time, each process's CPU and the client's peak RSS.
import { readdirSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import type { Watch } from '../src/shared/bus/watch/types.ts';
import { watchKv } from '../src/shared/bus/watch/watch.ts';
import { APPLIED, NEEDS, PLANS } from '../src/shared/contract/buckets.ts';
import { measureFloor, type FloorNeeds, type FloorRun } from './cold-floor.ts';
import { engineBurst, startBenchEngine } from './engine-lib.ts';
import { cpuSeconds, fakeEngine, now, peakRssMiB, publishThreeFiles, waitUntil, type BenchMesh } from './lib.ts';

/** The goals of issue 34 item 3. */
const GOAL = { ratio: 2, rssMiB: 100 };

/** One client's cold start: seconds to every report applied, its CPU seconds, its peak RSS, and the engine's CPU meanwhile. */
type ColdRun = {
  s: number;
  cpu: number;
  /** The client's CPU until AFTER_MS after every module was applied: what the start left for later counted too. */
  cpuAfter: number;
  rss: number;
  engineCpu: number;
  busCpu: number;
  reportBytes: number;
};

/**
 * How long after every module was applied the client's CPU is read again: a start may leave work
 * behind its last report (the archive cache is written behind the fills: a file an archive cost
 * 0.6–1.0 s of CPU there for 1,000 on this machine's ext4, the pack a few ms), and it is the start's too.
 */
const AFTER_MS = 3000;

/** `modules` modules of three files each for `node`, every plan written by the seat. */
export async function publishNode(mesh: BenchMesh, node: string, root: string, modules: number): Promise<void> {
  for (let i = 0; i < modules; i++) await publishThreeFiles(mesh, `s${i}`, node, root);
  const plans = await mesh.kvm.open(PLANS);
  await waitUntil(`${node}'s plans`, async () => (await plans.get(`${node}.s${modules - 1}`)) !== null, 120_000);
}

/** Counts `node`'s modules that reached `applied`, and the size of the last report seen. */
async function watchApplied(mesh: BenchMesh, node: string): Promise<{ watch: Watch; count: () => number; bytes: () => number }> {
  let applied = 0;
  let bytes = 0;
  const states = new Map<string, string>();
  const watch = await watchKv(mesh.nc, APPLIED, `${node}.*`, (e) => {
    if (!e.value) return;
    bytes = e.value.length;
    const state = (JSON.parse(new TextDecoder().decode(e.value)) as { state: string }).state;
    if (state === 'applied' && states.get(e.key) !== 'applied') applied++;
    states.set(e.key, state);
  });
  await watch.caughtUp;
  return { watch, count: () => applied, bytes: () => bytes };
}

/** The needs `node`'s client recorded (DESIGN §7 point 2): how many a module, and their mean size in bytes. */
async function needsOf(mesh: BenchMesh, node: string, modules: number): Promise<FloorNeeds> {
  const needs = await mesh.kvm.open(NEEDS);
  let count = 0;
  let bytes = 0;
  for await (const key of await needs.keys(`${node}.>`)) {
    count++;
    if (count <= 50) bytes += (await needs.get(key))?.value.length ?? 0;
  }
  return { each: Math.round(count / modules), bytes: count === 0 ? 0 : Math.round(bytes / Math.min(count, 50)) };
}

/** Starts the client of `node` on `socket` and times it to every module applied. */
async function coldStart(mesh: BenchMesh, node: string, socket: string, modules: number, enginePid?: number): Promise<ColdRun> {
  const applied = await watchApplied(mesh, node);
  const before = { bus: cpuSeconds(mesh.natsPid), engine: enginePid ? cpuSeconds(enginePid) : 0 };
  const started = now();
  const client = mesh.startClient(node, socket);
  await waitUntil(`${modules} applied`, () => applied.count() === modules, 300_000);
  const s = (now() - started) / 1000;
  const run = {
    s,
    cpu: cpuSeconds(client.pid!),
    cpuAfter: 0,
    rss: peakRssMiB(client.pid!),
    engineCpu: enginePid ? cpuSeconds(enginePid) - before.engine : 0,
    busCpu: cpuSeconds(mesh.natsPid) - before.bus,
    reportBytes: applied.bytes(),
  };
  applied.watch.stop();
  await new Promise((resolve) => setTimeout(resolve, AFTER_MS));
  run.cpuAfter = cpuSeconds(client.pid!);
  const exited = new Promise((resolve) => client.once('exit', resolve));
  client.kill('SIGTERM');
  await exited;
  return run;
}

/** The floor and the client's two rows for `modules` modules of three files; the engine root under `base`. */
export async function measureScale(mesh: BenchMesh, base: string, tag: string, modules: number): Promise<void> {
  const stubNode = `stubbig${tag}`;
  const node = `big${tag}`;
  const engine = await startBenchEngine(base, node);
  await publishNode(mesh, stubNode, engine.root, modules);
  await publishNode(mesh, node, engine.root, modules);
  const load = loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
  const stub = await fakeEngine(join(mesh.dir, `stub-${tag}.sock`), () => {});
  const atStub = await coldStart(mesh, stubNode, join(mesh.dir, `stub-${tag}.sock`), modules);
  stub.close();
  const floor = await measureFloor(mesh, stubNode, `floor${tag}`, atStub.reportBytes, false);
  const floorArchives = await measureFloor(mesh, stubNode, `floora${tag}`, atStub.reportBytes, true);
  const needs = await needsOf(mesh, stubNode, modules);
  const floorWrites = await measureFloor(mesh, stubNode, `floorn${tag}`, atStub.reportBytes, true, needs);
  const real = await coldStart(mesh, node, engine.socket, modules, engine.pid);
  const files = readdirSync(engine.root).reduce((n, m) => n + readdirSync(join(engine.root, m)).length, 0);
  await engine.close();
  const bare = await engineBurst(base, modules, false);
  const declared = await engineBurst(base, modules, true);
  printScale({ modules, files, load, floor, floorArchives, needs, floorWrites, atStub, real, bare, declared });
  if (engine.problems.length > 0) console.log(`  the engine said: ${engine.problems.slice(0, 3).join(' | ')}`);
}

/** What printScale prints. */
type ScaleRows = {
  modules: number;
  files: number;
  load: string;
  floor: FloorRun;
  floorArchives: FloorRun;
  /** The needs the client recorded, and the floor that also writes as many (every write the contract asks of this start). */
  needs: FloorNeeds;
  floorWrites: FloorRun;
  atStub: ColdRun;
  real: ColdRun;
  /** The reference engine alone taking the same requests, and with a declaration of every path (ms). */
  bare: { ms: number; cpu: number };
  declared: { ms: number; cpu: number };
};

function printScale(r: ScaleRows): void {
  const engineAloneCpu = r.bare.cpu / 1000;
  const met = (ok: boolean) => (ok ? 'met' : 'NOT met');
  const ratios = (run: ColdRun) => {
    const a = run.s / r.floor.s;
    const b = run.s / r.floorArchives.s;
    const c = run.s / r.floorWrites.s;
    return `${a.toFixed(2)}× the floor, ${b.toFixed(2)}× with archives, ${c.toFixed(2)}× with archives and needs (goal ≤ ${GOAL.ratio}× the last: ${met(c <= GOAL.ratio)})`;
  };
  console.log(`scale: ${r.modules} modules × 3 files, ${r.modules} distinct archives (${r.files} files on disk); load average ${r.load}`);
  console.log(`  floor: fresh process, plans + config watched, ${r.modules} reports put     ${r.floor.s.toFixed(2)} s (its CPU ${r.floor.cpu.toFixed(2)} s)`);
  console.log(`  floor with each plan's archive read by direct get  ${r.floorArchives.s.toFixed(2)} s (its CPU ${r.floorArchives.cpu.toFixed(2)} s)`);
  console.log(
    `  floor with archives and ${r.needs.each} needs a module (${r.needs.bytes} bytes each, as the client recorded)  ${r.floorWrites.s.toFixed(2)} s (its CPU ${r.floorWrites.cpu.toFixed(2)} s)`,
  );
  console.log(`  client start → all applied, stub engine          ${r.atStub.s.toFixed(2)} s: ${ratios(r.atStub)}`);
  console.log(
    `    client CPU ${r.atStub.cpu.toFixed(2)} s (${r.atStub.cpuAfter.toFixed(2)} s counting the ${AFTER_MS / 1000} s after), peak RSS ${r.atStub.rss.toFixed(0)} MiB, nats-server CPU ${r.atStub.busCpu.toFixed(2)} s`,
  );
  console.log(`  client start → all applied, reference engine     ${r.real.s.toFixed(2)} s: ${ratios(r.real)}`);
  console.log(
    `    client CPU ${r.real.cpu.toFixed(2)} s, ${r.real.cpuAfter.toFixed(2)} s counting the ${AFTER_MS / 1000} s after (idle), against the reference engine's ${engineAloneCpu.toFixed(2)} s writing the same files alone (goal ≤, the whole: ${met(r.real.cpuAfter <= engineAloneCpu)}); engine CPU in this row ${r.real.engineCpu.toFixed(2)} s, nats-server ${r.real.busCpu.toFixed(2)} s`,
  );
  console.log(
    `    client peak RSS ${r.real.rss.toFixed(0)} MiB (goal ≤ ${GOAL.rssMiB}: ${met(r.real.rss <= GOAL.rssMiB)}); stub row ${r.atStub.rss.toFixed(0)} MiB`,
  );
  console.log(
    `  the reference engine alone, the same ${r.modules} requests at once: ${(r.bare.ms / 1000).toFixed(2)} s (CPU ${(r.bare.cpu / 1000).toFixed(2)} s); with a declaration of every path ${(r.declared.ms / 1000).toFixed(2)} s (CPU ${(r.declared.cpu / 1000).toFixed(2)} s)`,
  );
}
