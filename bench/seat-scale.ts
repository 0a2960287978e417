// Benchmarks the seat at fleet size (DESIGN §4, §6): the seat bundle as a process on a real
// nats-server, NODES × 10 assignments. Measures the seat from cold to every plan written, one
// assignment change to its plan (p50, and that it is exactly one write), one composition change to
// its NODES plans, the seat's peak RSS, and a walk of 20,000 reports through the verb, each beside
// the bus's own floor measured in the same run.
//
//   node build.mjs && node --import tsx bench/seat-scale.ts [--nodes N] [--changes N] [--reports N] [--walks N] [--cpu-prof] [--seat FILE]
import { mkdtempSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kvm, type KV } from '@nats-io/kv';
import { jetstream } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { connectBus, ensureKv } from '../src/shared/bus/bus.ts';
import { jsonBytes } from '../src/shared/base/bytes.ts';
import { APPLIED, ASSIGNMENTS, MODULES, PLANS } from '../src/shared/contract/buckets.ts';
import { PROVISIONING_VERB } from '../src/shared/contract/subjects.ts';
import { AssignmentSchema } from '../src/shared/contract/assignment.ts';
import { CompositionSchema } from '../src/shared/contract/composition.ts';
import { decodeJson } from '../src/shared/contract/decode.ts';
import type { VerbReply } from '../src/shared/contract/verb.ts';
import { composePlan } from '../src/server/seat/compose.ts';
import { KvPublisher } from '../src/shared/bus/kv-publisher.ts';
import { startNats } from '../test/helpers/nats.ts';
import { readBucketBare } from './seat-verb-floor.ts';
import { cpuSeconds, now, numberArg, peakRssMiB, percentile } from './lib.ts';
import {
  countingWatch,
  floorBurst,
  DEFAULT_SEAT_BUNDLE,
  mainThreadSeconds,
  putPipelined,
  startSeatProcess,
  untilQuiet,
  type CountingWatch,
  type SeatProcess,
} from './seat-lib.ts';

const NODES = numberArg('nodes', 5000);
const MODULES_PER_NODE = 10;
const CHANGES = numberArg('changes', 100);
const REPORTS = numberArg('reports', 20_000);
const WALKS = numberArg('walks', 1);
const CPU_PROF = process.argv.includes('--cpu-prof');
const SEAT_BUNDLE = stringArg('seat', DEFAULT_SEAT_BUNDLE);
const TOTAL = NODES * MODULES_PER_NODE;
/** How long the plans bucket must stay still before the seat counts as idle. */
const QUIET_MS = 1000;

const nodeName = (i: number) => `n${String(i).padStart(5, '0')}`;
const moduleName = (j: number) => `m${j}`;

/** A composition of three files, a secret with a path and a provision's credential. */
function composition(module: string, build: string) {
  return {
    module,
    build,
    published: true,
    archive: { ref: `obj://mesh-catalog_archives/${module}-${build}.tar`, digest: 'sha256:' + 'a'.repeat(64) },
    provisioning: {
      files: ['a', 'b', 'c'].map((t) => ({ path: `\${dir:config}/${t}.conf`, template: `${t}.conf`, owner: module, mode: 'owned', change: 'restart' })),
      secrets: [{ name: 'api-key' }, { name: 'tls-key', path: '${dir:config}/tls.key' }],
      provisions: [{ provider: 'postgres', provision: 'database', node: 'db1', local: 'main', name: 'db-password', values: { name: module } }],
    },
  };
}

function assignment(node: string, module: string, config = `/etc/${module}/${node}`) {
  return { node, module, placement: { dir: { config, state: `/var/lib/${module}` }, port: { http: 8080 } } };
}

function report(node: string, module: string) {
  return {
    node,
    module,
    build: '1',
    state: 'applied',
    files: [{ path: `/etc/${module}/a.conf`, action: 'written', digest: 'sha256:' + 'b'.repeat(64) }],
    waiting: [],
    at: new Date().toISOString(),
  };
}

function* everyAssignment(): Generator<[string, Uint8Array]> {
  for (let i = 0; i < NODES; i++)
    for (let j = 0; j < MODULES_PER_NODE; j++) {
      yield [`${nodeName(i)}.${moduleName(j)}`, jsonBytes(assignment(nodeName(i), moduleName(j)))];
    }
}

type Row = { what: string; goal: string; figure: string; floor: string };

/** The bus's own figures, measured in the same run before the seat starts. */
type Floor = { all: number; module: number; putP50: number; planBytes: number };

/** What the phases share once the seat runs. */
type Run = { nc: NatsConnection; assignments: KV; modules: KV; plans: CountingWatch; seat: SeatProcess };

/** The bytes of one plan as the seat writes it, so the floor moves the same payload. */
function planBytes(): Uint8Array {
  const a = decodeJson(AssignmentSchema, jsonBytes(assignment(nodeName(0), moduleName(0))));
  const c = decodeJson(CompositionSchema, jsonBytes(composition(moduleName(0), '1')));
  const plan = a.ok && c.ok ? composePlan(a.value, c.value) : undefined;
  if (!plan?.ok) throw new Error('the bench composition does not compose');
  return jsonBytes(plan.value);
}

/** The floor: TOTAL and NODES plan-sized puts written the way the seat writes, seen on a watcher; one put → watcher, 200 times. */
async function measureFloor(nc: NatsConnection, kvm: Kvm): Promise<Floor> {
  const scratch = await kvm.create('bench_floor');
  const publisher = new KvPublisher(nc, 'bench_floor');
  const watch = await countingWatch(nc, 'bench_floor', now);
  const payload = planBytes();
  const bulk = (n: number, prefix: string) => floorBurst(publisher, watch, now, payload, n, prefix, 2);
  const all = await bulk(TOTAL, 'all');
  const module = await bulk(NODES, 'module');
  const put: number[] = [];
  for (let i = 0; i < 200; i++) {
    const seen = watch.next('one', (t) => t === `v${i}`);
    const started = now();
    await scratch.put('one', `v${i}`);
    put.push((await seen) - started);
  }
  watch.stop();
  publisher.close();
  return {
    all,
    module,
    putP50: percentile(
      put.sort((a, b) => a - b),
      50,
    ),
    planBytes: payload.length,
  };
}

/** Loads the compositions and TOTAL assignments (pipelined) before the seat starts; the seat's buckets made as it makes them, so they can be watched first. */
async function loadInputs(nc: NatsConnection, kvm: Kvm, notes: string[]): Promise<{ modules: KV; assignments: KV }> {
  const modules = await ensureKv(nc, MODULES, 1);
  const assignments = await ensureKv(nc, ASSIGNMENTS, 1);
  await ensureKv(nc, PLANS, 1);
  await ensureKv(nc, APPLIED, 1);
  const started = now();
  for (let j = 0; j < MODULES_PER_NODE; j++) await modules.put(moduleName(j), jsonBytes(composition(moduleName(j), '1')));
  const publisher = new KvPublisher(nc, ASSIGNMENTS);
  await putPipelined(publisher, everyAssignment());
  publisher.close();
  notes.push(`inputs loaded (${TOTAL} assignments, pipelined) in ${((now() - started) / 1000).toFixed(2)} s`);
  return { modules, assignments };
}

/** 1. From cold: the seat process starts; the time until a watcher has seen every plan. */
async function measureCold(url: string, plans: CountingWatch, floor: Floor, rows: Row[], notes: string[], profDir: string | undefined): Promise<SeatProcess> {
  const started = now();
  const seat = startSeatProcess(url, profDir ? ['--cpu-prof', '--cpu-prof-dir', profDir] : [], SEAT_BUNDLE);
  const ready = seat.saying(/seat ready/, now);
  const firstPlan = plans.keysReached(1);
  let lastPlan = 0;
  void plans.keysReached(TOTAL).then((at) => (lastPlan = at));
  await until(`${TOTAL} plans`, () => lastPlan > 0, 600_000, seat);
  const cold = lastPlan - started;
  // The seat's own work, which a machine busy with other processes does not stretch as it does the time.
  const cpu = cpuSeconds(seat.child.pid!);
  notes.push(
    `from cold: seat ready after ${((await ready) - started).toFixed(0)} ms, first plan after ${((await firstPlan) - started).toFixed(0)} ms, last after ${cold.toFixed(0)} ms`,
  );
  await untilQuiet(plans, now, QUIET_MS);
  rows.push({
    what: `seat from cold, ${TOTAL} assignments → every plan written`,
    goal: '≤ 5 s',
    figure: `${(cold / 1000).toFixed(2)} s (${plans.puts()} writes; seat CPU ${cpu.toFixed(2)} s)`,
    floor: `${(floor.all / 1000).toFixed(2)} s: ${TOTAL} pipelined puts of ${floor.planBytes} B → watcher`,
  });
  return seat;
}

/** 2. The plan writes a watcher sees after one assignment change, until the bucket is still. */
async function countWritesOfOneChange(run: Run): Promise<number> {
  const before = run.plans.puts();
  const key = `${nodeName(0)}.${moduleName(0)}`;
  const seen = run.plans.next(key, (t) => t.includes('/etc/m0/once/a.conf'));
  await run.assignments.put(key, jsonBytes(assignment(nodeName(0), moduleName(0), '/etc/m0/once')));
  await seen;
  await untilQuiet(run.plans, now, QUIET_MS);
  return run.plans.puts() - before;
}

/** 3. One assignment change → its plan seen on a watcher, CHANGES times one after the other. */
async function measureChanges(run: Run, floor: Floor, writes: number, rows: Row[]): Promise<void> {
  const latency: number[] = [];
  for (let i = 1; i <= CHANGES; i++) {
    const node = nodeName((i * 7919) % NODES);
    const module = moduleName(i % MODULES_PER_NODE);
    const dir = `/etc/${module}/x${i}`;
    const seen = run.plans.next(`${node}.${module}`, (t) => t.includes(`"${dir}/a.conf"`));
    const put = now();
    await run.assignments.put(`${node}.${module}`, jsonBytes(assignment(node, module, dir)));
    latency.push((await within(seen, 60_000, `plan ${node}.${module}`)) - put);
  }
  latency.sort((a, b) => a - b);
  rows.push({
    what: `one assignment changed at ${TOTAL} → its plan written`,
    goal: 'p50 ≤ 20 ms',
    figure: `p50 ${fmt(percentile(latency, 50))} ms, p99 ${fmt(percentile(latency, 99))}, max ${fmt(latency.at(-1)!)} (${CHANGES} changes)`,
    floor: `p50 ${fmt(floor.putP50)} ms: KV put → watcher`,
  });
  rows.push({ what: 'writes for one assignment change', goal: 'exactly 1', figure: String(writes), floor: '' });
  await untilQuiet(run.plans, now, QUIET_MS);
}

/** 4. One composition changed → the time until a watcher has seen its NODES plans rewritten. */
async function measureComposition(run: Run, floor: Floor, rows: Row[]): Promise<void> {
  const target = moduleName(3);
  const rewritten = new Set<string>();
  let last = 0;
  run.plans.each((key, text, at) => {
    if (!key.endsWith(`.${target}`) || !text.includes('"build":"2"')) return false;
    rewritten.add(key);
    last = at;
    return rewritten.size >= NODES;
  });
  const started = now();
  await run.modules.put(target, jsonBytes(composition(target, '2')));
  await until(`${NODES} plans of ${target} rewritten`, () => rewritten.size >= NODES, 300_000, run.seat);
  rows.push({
    what: `one composition changed → its ${NODES} plans rewritten`,
    goal: '≤ 2 s',
    figure: `${((last - started) / 1000).toFixed(2)} s`,
    floor: `${(floor.module / 1000).toFixed(2)} s: ${NODES} pipelined puts → watcher`,
  });
  await untilQuiet(run.plans, now, QUIET_MS);
}

/**
 * 5. The seat stopped and started again over TOTAL stored plans: the time until it says it is ready,
 * then until an assignment changed at that moment has its plan (the restart's pass over every key
 * done), and the plans it wrote besides (none: every stored plan holds).
 */
async function measureRestart(run: Run, url: string, rows: Row[], profDir: string | undefined): Promise<SeatProcess> {
  await run.seat.stop();
  const started = now();
  const seat = startSeatProcess(url, profDir ? ['--cpu-prof', '--cpu-prof-dir', profDir] : [], SEAT_BUNDLE);
  let ready: number;
  let planned: number;
  let before: number;
  try {
    ready = await within(seat.saying(/seat ready/, now), 300_000, 'the restarted seat');
    before = run.plans.puts();
    const key = `${nodeName(1)}.${moduleName(1)}`;
    const seen = run.plans.next(key, (t) => t.includes('/etc/m1/restart/a.conf'));
    await run.assignments.put(key, jsonBytes(assignment(nodeName(1), moduleName(1), '/etc/m1/restart')));
    planned = await within(seen, 300_000, `plan ${key} after the restart`);
  } catch (err) {
    // main() holds only the first seat: this one is said and stopped here, or it outlives the bench and its bus.
    console.error(`restarted seat stderr (tail):\n${seat.stderr().slice(-4000)}`);
    await seat.stop();
    throw err;
  }
  const cpu = cpuSeconds(seat.child.pid!);
  await untilQuiet(run.plans, now, QUIET_MS);
  rows.push({
    what: `seat restarted over ${TOTAL} stored plans`,
    goal: 'printed',
    figure: `ready ${((ready - started) / 1000).toFixed(2)} s, a change planned ${((planned - started) / 1000).toFixed(2)} s (seat CPU ${cpu.toFixed(2)} s); ${run.plans.puts() - before - 1} other plans written; peak RSS ${peakRssMiB(seat.child.pid!).toFixed(0)} MiB`,
    floor: '',
  });
  return seat;
}

/** 6. REPORTS reports put directly, then paged through with {what: applied, after} until no next, WALKS times. */
async function measureVerb(run: Run, rows: Row[], notes: string[]): Promise<void> {
  const pid = run.seat.child.pid!;
  const cpuAtPut = cpuSeconds(pid);
  const publisher = new KvPublisher(run.nc, APPLIED);
  await putPipelined(
    publisher,
    (function* () {
      for (let i = 0; i < REPORTS; i++) {
        const node = nodeName(Math.floor(i / MODULES_PER_NODE));
        const module = moduleName(i % MODULES_PER_NODE);
        yield [`${node}.${module}`, jsonBytes(report(node, module))] as [string, Uint8Array];
      }
    })(),
  );
  publisher.close();
  const floorStarted = now();
  const bare = await readBucketBare(run.nc, APPLIED);
  const floor = now() - floorStarted;
  // The seat watches `applied` for its rollouts: its digest of the reports' burst must be over before
  // the walk, or the walk's CPU and wall time would be the digest's too.
  const digest = await untilSeatQuiet(pid);
  notes.push(
    `the seat's own watch of the ${REPORTS} reports put: seat CPU ${(digest.cpu - cpuAtPut).toFixed(2)} s, quiet ${(digest.waited / 1000).toFixed(2)} s after the floor's read`,
  );
  for (let walk = 1; walk <= WALKS; walk++) {
    const started = now();
    const cpuBefore = cpuSeconds(pid);
    const mainBefore = mainThreadSeconds(pid);
    const { pages, entries } = await walkApplied(run.nc);
    rows.push({
      what: `verb: page through ${REPORTS} reports end to end${WALKS > 1 ? ` (walk ${walk})` : ''}`,
      goal: '≤ 0.5 s',
      figure: `${((now() - started) / 1000).toFixed(2)} s (${pages} pages, ${entries} entries; seat CPU ${(cpuSeconds(pid) - cpuBefore).toFixed(2)} s, its main thread ${(mainThreadSeconds(pid) - mainBefore).toFixed(2)} s)`,
      floor:
        walk > 1 ? '' : `${(floor / 1000).toFixed(2)} s: ${bare.keys} keys listed, their ${(bare.bytes / 1e6).toFixed(1)} MB by pipelined direct get, bare`,
    });
  }
}

/** Pages through `applied` with {what: applied, after} until no next. */
async function walkApplied(nc: NatsConnection): Promise<{ pages: number; entries: number }> {
  let after: string | undefined;
  let entries = 0;
  let pages = 0;
  do {
    const body = jsonBytes(after === undefined ? { what: 'applied' } : { what: 'applied', after });
    const reply = (await nc.request(PROVISIONING_VERB, body, { timeout: 30_000 })).json<VerbReply & { error?: string }>();
    if (reply.error) throw new Error(`verb: ${reply.error}`);
    pages++;
    entries += reply.entries.length;
    after = reply.next;
  } while (after !== undefined);
  return { pages, entries };
}

/** Waits until the process used no more than a tick of CPU in 200 ms (at most 30 s); its CPU then, and the wait. */
async function untilSeatQuiet(pid: number): Promise<{ cpu: number; waited: number }> {
  const started = now();
  let cpu = cpuSeconds(pid);
  for (;;) {
    await new Promise((r) => setTimeout(r, 200));
    const later = cpuSeconds(pid);
    if (later - cpu <= 0.01 || now() - started > 30_000) return { cpu: later, waited: now() - started - 200 };
    cpu = later;
  }
}

async function main(): Promise<void> {
  const nats = await startNats();
  const nc = await connectBus({ servers: [nats.url], name: 'bench-seat' });
  const kvm = new Kvm(jetstream(nc));
  const rows: Row[] = [];
  const notes: string[] = [];
  const profDir = CPU_PROF ? mkdtempSync(join(tmpdir(), 'seat-prof-')) : undefined;
  let seat: SeatProcess | undefined;
  try {
    const floor = await measureFloor(nc, kvm);
    const { modules, assignments } = await loadInputs(nc, kvm, notes);
    const plans = await countingWatch(nc, PLANS, now);
    seat = await measureCold(nats.url, plans, floor, rows, notes, profDir);
    const run: Run = { nc, assignments, modules, plans, seat };
    const writes = await countWritesOfOneChange(run);
    await measureChanges(run, floor, writes, rows);
    await measureComposition(run, floor, rows);
    const rss = peakRssMiB(seat.child.pid!);
    rows.push({
      what: `seat peak RSS at ${TOTAL} assignments`,
      goal: '≤ 150 MB',
      figure: `${rss.toFixed(0)} MiB (${(rss * 1.048576).toFixed(0)} MB) VmHWM`,
      floor: '',
    });
    run.seat = seat = await measureRestart(run, nats.url, rows, profDir);
    await measureVerb(run, rows, notes);
    notes.push(`seat VmHWM after the verb walk: ${peakRssMiB(seat.child.pid!).toFixed(0)} MiB`);
    plans.stop();
    const [l1, l5] = loadavg();
    console.log(`seat-scale: ${NODES} nodes × ${MODULES_PER_NODE} modules (load average ${l1!.toFixed(2)} / ${l5!.toFixed(2)} at the end)`);
    printTable(rows);
    for (const n of notes) console.log(`  ${n}`);
  } catch (err) {
    if (seat) console.error(`seat stderr (tail):\n${seat.stderr().slice(-4000)}`);
    throw err;
  } finally {
    await seat?.stop();
    if (profDir) console.log(`  seat CPU profile in ${profDir}`);
    await nc.close();
    await nats.cleanup();
  }
}

/** One table: the work, its goal, the figure measured and the bus's floor beside it. */
function printTable(rows: Row[]): void {
  const w = [Math.max(...rows.map((r) => r.what.length)), Math.max(4, ...rows.map((r) => r.goal.length)), Math.max(...rows.map((r) => r.figure.length))];
  console.log(`  ${'work'.padEnd(w[0]!)}  ${'goal'.padEnd(w[1]!)}  ${'measured'.padEnd(w[2]!)}  bus floor (same run)`);
  for (const r of rows) console.log(`  ${r.what.padEnd(w[0]!)}  ${r.goal.padEnd(w[1]!)}  ${r.figure.padEnd(w[2]!)}  ${r.floor}`);
}

/** Reads `--name VALUE` from argv, else `fallback`. */
function stringArg(name: string, fallback: string): string {
  const args = process.argv.slice(2);
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1]! : fallback;
}

/** Milliseconds as a table prints them. */
function fmt(ms: number): string {
  return ms.toFixed(1);
}

/** Polls until `fn` holds; throws when the seat exits or after `ms`. */
async function until(what: string, fn: () => boolean, ms: number, seat: { child: { exitCode: number | null } }): Promise<void> {
  const deadline = now() + ms;
  while (!fn()) {
    if (seat.child.exitCode !== null) throw new Error(`the seat exited (${seat.child.exitCode}) while waiting for ${what}`);
    if (now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

/** `p`, or a rejection naming `what` after `ms`. */
async function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms)));
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

await main();
