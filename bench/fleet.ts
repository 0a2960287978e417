// Benchmarks a fleet on one bus (issue 22): N real node clients (the client's own code, each on its
// own connection and node name, behind a confirming engine stub; spread over worker processes), one
// nats-server, the real seat bundle; 5 modules a node, 3 config keys a module. Each size measures,
// beside the bus's floor from the same run (the same plans and values delivered to N plain watchers,
// each on its own connection): cold start → every module applied; a new build of one module → every
// engine has it; one config put per node at once → every engine has it; then the idle bus per node.
// Prints one markdown table per size and the growth law over the sizes (docs/scale.md keeps them).
//
//   npm run bench -- fleet [--nodes 100,300,1000] [--at-once N] [--quiet-s 20] [--phase-s 120]
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kvm } from '@nats-io/kv';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { APPLIED, CONFIG, NEEDS, PLANS } from '../src/shared/contract/buckets.ts';
import { bytes, fleetEntries, loadFleet, moduleName, MODULES_N, nodeName, publishBuild, putAll, storeArchive } from './fleet-load.ts';
import { apiAsksFrom, apiCalls, hearAlive, idleMessageKinds, trafficFrom, measureQuiet, sampleUsage, startFleetBus, type FleetBus } from './fleet-bus.ts';
import { startPool, type Pool } from './fleet-pool.ts';
import type { FloorBuckets, FloorColdWork } from './fleet-floor.ts';
import { growthOf, spreadOf, tableOf, type ColdCpu, type FleetFigures, type Restart } from './fleet-rows.ts';
import { wallNow } from './fleet-worker.ts';
import { traceBuild } from './fleet-trace.ts';
import { summaryOf } from './fleet-summary.ts';
import { cpuSeconds, numberArg } from './lib.ts';
import { WATCH_HEARTBEAT_MS } from '../src/shared/bus/watch/keeper.ts';

const SIZES = (process.argv.includes('--nodes') ? process.argv[process.argv.indexOf('--nodes') + 1]! : '100,300,1000').split(',').map(Number);
const QUIET_MS = numberArg('quiet-s', 20) * 1000;
/** Clients a worker process runs at most: several processes let the system spread them over the cores. */
const PER_WORKER = 100;
/** How long a phase waits for every node before it prints how many never got it. */
const PHASE_MS = numberArg('phase-s', 120) * 1000;
/** Clients started at once across the fleet (0: every one at once, a fleet's cold start); the rest wait for a lane. */
const AT_ONCE = numberArg('at-once', 0);
/** The size of the report a floor watcher puts for a change: a fleet module's report measured 1,113 bytes (the run logs the client's own). */
const FLOOR_REPORT_BYTES = 1100;
/**
 * The needs a floor watcher puts for each plan at its cold start, and their size: a fleet module's
 * client put 3, stored as 171 bytes each, as the floor's 100-byte values under its shorter bucket
 * name are (the run logs the clients' own).
 */
const FLOOR_NEEDS = 3;
const FLOOR_NEED_BYTES = 100;

/** The bus's floor: the same plans and values, to N plain watchers on their own connections. */
async function measureFloor(bus: FleetBus, nodes: string[], kvm: Kvm, workers: number) {
  const plan = (await (await kvm.open(PLANS)).get(`${nodes[0]}.m0`))!.string();
  await kvm.create('bench_floor_plans');
  await kvm.create('bench_floor_config');
  await kvm.create('bench_floor_applied');
  await putAll(bus.nc, 'bench_floor_config', fleetEntries(nodes, 'config'));
  await putAll(
    bus.nc,
    'bench_floor_plans',
    (function* () {
      for (const node of nodes) for (let j = 0; j < MODULES_N; j++) yield [`${node}.${moduleName(j)}`, bytes(plan)] as [string, Uint8Array];
    })(),
  );
  const report = { text: 'burst-report', bucket: 'bench_floor_applied', bytes: FLOOR_REPORT_BYTES, subject: 'bench.floor' };
  const buckets: FloorBuckets = { plans: 'bench_floor_plans', config: 'bench_floor_config', fetchBuild: '3', reportBuild: '4', report };
  let pool: Pool | undefined;
  try {
    const first = await floorColdPass(bus, nodes, workers, buckets);
    await first.pool.stop();
    const { cold, cpu: coldUsed, load: coldLoad, retried: coldRetried, failed: coldFailed } = first;
    // Again from the start, each watcher now doing a client's cold work for every plan it finds: the
    // archive, the report and the needs (as many and as large as the clients' own, logged by the run).
    // These watchers go on to the build and the burst: a change's report then replaces one, as a client's does.
    await kvm.create('bench_floor_needs');
    const work: FloorColdWork = { bucket: 'bench_floor_needs', needs: FLOOR_NEEDS, needBytes: FLOOR_NEED_BYTES };
    const full = await floorColdPass(bus, nodes, workers, { ...buckets, cold: work });
    const running = (pool = full.pool);
    const built = running.firstOf(nodes, (what, text) => what.endsWith('.m0') && text === '2', PHASE_MS);
    const t1 = wallNow();
    const writes = await putPlans(bus, nodes, plan, '2');
    const build = spreadOf(await built, t1, nodes.length);
    // Again, each watcher now fetching the archive its changed plan names, as a client does: a phase of its own.
    const fetched = running.firstOf(nodes, (what, text) => what === 'archive' && text === '3', PHASE_MS);
    const buildCpu = coldCpu(bus, running);
    const t3 = wallNow();
    await putPlans(bus, nodes, plan, '3');
    const buildArchive = spreadOf(await fetched, t3, nodes.length);
    const buildUsed = buildCpu.done();
    // Again, the archive first stored as `publish` stores it, each watcher then fetching it and
    // reporting the build as a client does (its report put and acked, its two notices): the bus's
    // whole work of a new build, from the publisher's first write, as the clients' row is timed.
    const reported = running.firstOf(nodes, (what, text) => what === 'archive' && text === '4', PHASE_MS);
    const reportCpu = coldCpu(bus, running);
    const t4 = wallNow();
    const ref = await storeArchive(bus.nc, 'm0', '4', 'm0-floor-4.tar');
    await putPlans(bus, nodes, plan, '4', ref);
    const buildReport = spreadOf(await reported, t4, nodes.length);
    const buildReportCpu = reportCpu.done();
    // One config value put on every node at once, timed to each watcher's sighting of it.
    const burstOf = async (text: string) => {
      const seen = running.firstOf(nodes, (what, said) => what.endsWith('.m1.a') && said === text, PHASE_MS);
      const t = wallNow();
      await putAll(
        bus.nc,
        'bench_floor_config',
        nodes.map((n) => [`${n}.m1.a`, bytes(text)] as [string, Uint8Array]),
      );
      return spreadOf(await seen, t, nodes.length);
    };
    const burstSpread = await burstOf('burst');
    // Again, each watcher now answering the change as a client does: its report put and two notices.
    const burstCpu = coldCpu(bus, running);
    const burstReport = await burstOf('burst-report');
    const burstUsed = burstCpu.done();
    return {
      cold,
      coldCpu: coldUsed,
      coldLoad,
      coldRetried,
      coldFailed,
      build,
      buildArchive,
      buildCpu: buildUsed,
      buildReport,
      buildReportCpu,
      writes,
      burst: burstSpread,
      burstReport,
      burstCpu: burstUsed,
      coldWork: { ms: full.cold, cpu: full.cpu, retried: full.retried, failed: full.failed },
    };
  } finally {
    await pool?.stop();
    // Gone with their streams: the watchers' consumers would otherwise count as the fleet's for minutes.
    // A stream with thousands of consumers takes the server more than the API's default 5 s to delete.
    // Unchecked (an account info waits behind the same queue), and a delete still unanswered is said, not the run's end:
    // at 1,000 at once the floor's own consumers kept the server from answering within the 2 minutes.
    const jsm = await jetstreamManager(bus.nc, { timeout: 120_000, checkAPI: false });
    for (const b of ['bench_floor_plans', 'bench_floor_config', 'bench_floor_applied', 'bench_floor_needs'])
      await jsm.streams.delete(`KV_${b}`).catch((err: unknown) => log(`the floor's stream KV_${b} not deleted: ${String(err)}`));
  }
}

/** Starts a floor watcher (`buckets`) for every node on a fresh pool; resolves once each said it caught up, with the pool still running. */
async function floorColdPass(bus: FleetBus, nodes: string[], workers: number, buckets: FloorBuckets) {
  const pool = await startPool(workers);
  const caughtUp = pool.firstOf(nodes, (what) => what === 'caught-up', PHASE_MS);
  // A watch whose consumer was not made within nats.js's 5 s is asked for again (bench/fleet-floor.ts): the nodes that needed it.
  const retried = pool.nodesSeen((what) => what === 'retry');
  const failed = pool.nodesSeen((what) => what === 'floor-failed' || what === 'cold-failed');
  const cpu = coldCpu(bus, pool);
  const t0 = wallNow();
  try {
    // As the clients' phase does: a watcher still asking for its watch does not hold the phase past its end.
    const started = pool.start(nodes, (share) => ({ type: 'floor', url: bus.nats.url, nodes: share, buckets, atOnce: atOnceOf(workers) }));
    await Promise.race([started, caughtUp]);
    const cold = spreadOf(await caughtUp, t0, nodes.length).max;
    return { pool, cold, cpu: cpu.done(), load: loadNow(), retried: retried.done().size, failed: failed.done().size };
  } catch (err) {
    await pool.stop();
    throw err;
  }
}

/**
 * Starts every client again at once on a fresh pool over the caches in `dir` — each node's record of
 * plans kept, or removed first (`records`) — and waits until each module of each node was handed to its engine.
 */
async function restartPass(
  bus: FleetBus,
  nodes: string[],
  workers: number,
  dir: string,
  atOnce: number,
  records: boolean,
): Promise<{ pool: Pool; restart: Restart }> {
  if (!records) for (const node of nodes) rmSync(join(dir, `cache-${node}`, 'plans'), { recursive: true, force: true });
  const pool = await startPool(workers);
  try {
    const everyModule = Array.from({ length: MODULES_N }, (_, j) => pool.firstOf(nodes, (what) => what === moduleName(j), PHASE_MS));
    const api0 = await apiCalls(bus);
    const cpu = coldCpu(bus, pool);
    const t0 = wallNow();
    await Promise.race([pool.start(nodes, (share) => ({ type: 'clients', url: bus.nats.url, nodes: share, dir, atOnce })), Promise.all(everyModule)]);
    const spreads = (await Promise.all(everyModule)).map((m) => spreadOf(m, t0, nodes.length));
    const used = cpu.done();
    const api1 = await apiCalls(bus);
    return {
      pool,
      restart: { ms: Math.max(...spreads.map((x) => x.max)), missing: spreads.reduce((sum, x) => sum + x.missing, 0), cpu: used, api: api1.total - api0.total },
    };
  } catch (err) {
    await pool.stop();
    throw err;
  }
}

/** Puts `plan` at `build` as every node's `m0` of the floor's plans, one writer, pipelined; resolves with the ms it took. */
async function putPlans(bus: FleetBus, nodes: string[], plan: string, build: string, ref?: string): Promise<number> {
  const t0 = wallNow();
  const built = plan.replace(/"build":"1"/, `"build":"${build}"`);
  const value = bytes(ref === undefined ? built : built.replace(/"ref":"[^"]*"/, `"ref":"${ref}"`));
  await putAll(
    bus.nc,
    'bench_floor_plans',
    nodes.map((n) => [`${n}.m0`, value] as [string, Uint8Array]),
  );
  return wallNow() - t0;
}

/** Counts the CPU the pool's workers and nats-server use from now until `done()`. */
function coldCpu(bus: FleetBus, pool: Pool): { done(): ColdCpu } {
  const sum = () => pool.pids().reduce((t, pid) => t + cpuSeconds(pid), 0);
  const nats0 = cpuSeconds(bus.nats.pid()!);
  const workers0 = sum();
  return { done: () => ({ workersS: sum() - workers0, natsS: cpuSeconds(bus.nats.pid()!) - nats0 }) };
}

/** The clients (or watchers) each of `workers` starts at once. */
const atOnceOf = (workers: number) => (AT_ONCE === 0 ? 0 : Math.max(1, Math.round(AT_ONCE / workers)));

/** Resolves once no engine has been handed anything for `ms`. */
async function untilEnginesQuiet(pool: Pool, ms: number): Promise<void> {
  while (wallNow() - pool.lastSeenAt() < ms) await new Promise((r) => setTimeout(r, 100));
}

/** Runs one size on a fresh bus. */
async function runSize(n: number): Promise<FleetFigures> {
  const nodes = Array.from({ length: n }, (_, i) => nodeName(i));
  const workers = Math.ceil(n / PER_WORKER);
  const bus = await startFleetBus(n);
  const dir = mkdtempSync(join(tmpdir(), 'mesh-fleet-'));
  let pool: Pool | undefined;
  try {
    const kvm = new Kvm(jetstream(bus.nc));
    const modules = await loadFleet(bus.nc, nodes);
    const base = await measureQuiet(bus, Math.min(QUIET_MS, 10_000));
    const floor = await measureFloor(bus, nodes, kvm, workers);
    log(
      `N=${n}: floor cold ${floor.cold.toFixed(0)} ms (${floor.coldRetried} watchers asked again, ${floor.coldFailed} never up), build max ${floor.build.max.toFixed(0)} ms ` +
        `(archive fetched ${floor.buildArchive.max.toFixed(0)} ms), burst max ${floor.burst.max.toFixed(0)} ms`,
    );

    pool = await startPool(workers);
    const p = pool;
    let seat = sampleUsage(bus.seat.child.pid!);
    const everyModule = Array.from({ length: MODULES_N }, (_, j) => p.firstOf(nodes, (what) => what === moduleName(j), PHASE_MS));
    const api0 = await apiCalls(bus);
    const asks = apiAsksFrom(bus);
    const cpu = coldCpu(bus, p);
    const t0 = wallNow();
    const atOnce = atOnceOf(workers);
    // A client that never gets its watches (the bus refusing consumers) never resolves its start: the phase ends anyway.
    await Promise.race([pool.start(nodes, (share) => ({ type: 'clients', url: bus.nats.url, nodes: share, dir, atOnce })), Promise.all(everyModule)]);
    const cold = (await Promise.all(everyModule)).map((m) => spreadOf(m, t0, n));
    const coldMs = Math.max(...cold.map((c) => c.max));
    const coldMissing = cold.reduce((sum, c) => sum + c.missing, 0);
    const seatCold = seat.done();
    const coldUsed = cpu.done();
    const coldLoad = loadNow();
    const api1 = await apiCalls(bus);
    const coldApi = { total: api1.total - api0.total, errors: api1.errors - api0.errors };
    const coldAsks = await asks.done(n);
    const needs = (await jetstreamManager(bus.nc).then((jsm) => jsm.streams.info(`KV_${NEEDS}`))).state;
    log(
      `N=${n}: the clients put ${(needs.messages / (n * MODULES_N)).toFixed(2)} needs a module, ${(needs.bytes / Math.max(1, needs.messages)).toFixed(0)} bytes each as stored (the floor's cold work: ${FLOOR_NEEDS} of ${FLOOR_NEED_BYTES}-byte values)`,
    );
    log(
      `N=${n}: cold ${coldMs.toFixed(0)} ms${coldMissing ? `, ${coldMissing} modules never` : ''}; JetStream API asks a node by kind ${JSON.stringify(coldAsks)}`,
    );

    await untilEnginesQuiet(pool, 3000);
    seat = sampleUsage(bus.seat.child.pid!);
    const built = pool.firstOf(nodes, (what, text) => what === 'm0' && text.includes('build 2'), PHASE_MS);
    const buildTraffic = await trafficFrom(bus);
    const trace = traceBuild(bus.nc, 'm0');
    const buildCpu = coldCpu(bus, p);
    const t1 = wallNow();
    await publishBuild(bus.nc, modules, 'm0', '2');
    const builtAt = await built;
    const build = spreadOf(builtAt, t1, n);
    const seatBuild = seat.done();
    const buildUsed = buildCpu.done();
    const buildLoad = loadNow();
    // The reports follow each engine's answer within milliseconds; the phase's idle heartbeats are counted too.
    await new Promise((r) => setTimeout(r, 500));
    const buildBus = await buildTraffic.done(n);
    const buildSteps = trace.done(builtAt, t1);

    await untilEnginesQuiet(pool, 3000);
    seat = sampleUsage(bus.seat.child.pid!);
    const burst = pool.firstOf(nodes, (what, text) => what === 'm1' && text.includes('value burst'), PHASE_MS);
    const burstTraffic = await trafficFrom(bus);
    const burstCpu = coldCpu(bus, p);
    const t2 = wallNow();
    await putAll(
      bus.nc,
      CONFIG,
      nodes.map((node) => [`${node}.m1.a`, bytes('burst')] as [string, Uint8Array]),
    );
    const burstSpread = spreadOf(await burst, t2, n);
    const burstUsed = burstCpu.done();
    const report = await (await kvm.open(APPLIED)).get(`${nodes[0]}.m1`);
    log(`N=${n}: a client's report of m1 is ${report?.value.length ?? 0} bytes; the floor's is ${FLOOR_REPORT_BYTES}`);
    const seatBurst = seat.done();
    const burstLoad = loadNow();
    await new Promise((r) => setTimeout(r, 500));
    const burstBus = await burstTraffic.done(n);

    await untilEnginesQuiet(pool, 5000);
    log(`N=${n}: the alive messages are heard by ${await hearAlive(bus)}`);
    const idle = await measureQuiet(bus, QUIET_MS);
    const kinds = [...(await idleMessageKinds(bus, 5000))].sort((a, b) => b[1] - a[1]);

    // Every client stopped and started again at once over its cache, as after a power cut: with the
    // records the clients kept, then with their records of plans removed (the plans read from sequence 1).
    // First a plans watch's idle heartbeat, as a fleet up for a while has had: it moves the record's
    // sequence to the stream's end past the other nodes' plans of the new build (src/client/plans/record.ts).
    await new Promise((r) => setTimeout(r, WATCH_HEARTBEAT_MS + 2000));
    await pool.stop();
    const again = await restartPass(bus, nodes, workers, dir, atOnce, true);
    pool = again.pool;
    await untilEnginesQuiet(pool, 3000);
    await pool.stop();
    const bare = await restartPass(bus, nodes, workers, dir, atOnce, false);
    pool = bare.pool;
    log(`N=${n}: restart ${again.restart.ms.toFixed(0)} ms over the caches, ${bare.restart.ms.toFixed(0)} ms without the records of plans`);
    return {
      nodes: n,
      date: new Date().toISOString().slice(0, 10),
      coldMs,
      coldMissing,
      atOnce: atOnce * workers,
      coldApi,
      coldCpu: coldUsed,
      coldFloorCpu: floor.coldCpu,
      perChange: { build: buildBus, burst: burstBus },
      loopDelay: await pool.loopDelay(),
      coldFloorMs: floor.cold,
      coldFloorWork: floor.coldWork,
      build,
      buildFloor: floor.build,
      buildFloorArchive: floor.buildArchive,
      floorWritesMs: floor.writes,
      floorRetried: floor.coldRetried,
      floorFailed: floor.coldFailed,
      buildSteps,
      buildCpu: buildUsed,
      buildFloorCpu: floor.buildCpu,
      buildFloorReport: floor.buildReport,
      buildFloorReportCpu: floor.buildReportCpu,
      burstCpu: burstUsed,
      burstFloorCpu: floor.burstCpu,
      load: { floor: floor.coldLoad, cold: coldLoad, build: buildLoad, burst: burstLoad },
      burst: burstSpread,
      burstFloor: floor.burst,
      burstFloorReport: floor.burstReport,
      base,
      idle,
      seat: { cold: seatCold, build: seatBuild, burst: seatBurst },
      kinds,
      restart: again.restart,
      restartBare: bare.restart,
    };
  } catch (err) {
    console.error(`seat stderr (tail):\n${bus.seat.stderr().slice(-3000)}`);
    throw err;
  } finally {
    await pool?.stop();
    await bus.seat.stop();
    await bus.nc.close();
    await bus.nats.cleanup();
    rmSync(dir, { recursive: true, force: true });
  }
}

const log = (line: string) => console.error(`# ${line}`);

/** The 1-minute load average now (the machine is shared: every figure is printed beside it). */
const loadNow = () => loadavg()[0]!;

async function main(): Promise<void> {
  const all: FleetFigures[] = [];
  for (const n of SIZES) {
    const f = await runSize(n);
    all.push(f);
    console.log(tableOf(f).join('\n') + '\n');
    console.log(["where the new build's time went (stamped on the bus by the bench; see bench/fleet-trace.ts):", '', ...f.buildSteps].join('\n') + '\n');
    console.log(`FLEET ${JSON.stringify(f)}\n`);
  }
  console.log(summaryOf(all).join('\n') + '\n');
  if (all.length > 1) console.log(['growth over the sizes (y = a·N^b; b is the exponent):', '', ...growthOf(all)].join('\n'));
}

await main();
