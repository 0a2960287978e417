// Benchmarks progressive rollout (issue 21, DESIGN §12): the seat bundle as a process on a real
// nats-server, NODES nodes each assigned three modules (`bad`, `good`, `restart`), and the bench
// playing the fleet — each plan answered by the node's report after 20–200 ms, as a real client
// would. Rows: a bad build halted and planned back, a good build through waves 1%/10%/50%/100%,
// the seat killed during wave 2, and the plan writes during a halt; each beside the bus's floor
// measured in the same run.
//
//   node build.mjs && node --import tsx bench/rollout.ts [--nodes N]
import { loadavg } from 'node:os';
import { Kvm } from '@nats-io/kv';
import { jetstream } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { connectBus, ensureKv } from '../src/shared/bus/bus.ts';
import { jsonBytes } from '../src/shared/base/bytes.ts';
import { ASSIGNMENTS, MODULES, PLANS } from '../src/shared/contract/buckets.ts';
import { KvPublisher } from '../src/shared/bus/kv-publisher.ts';
import { reachedBy } from '../src/shared/contract/waves.ts';
import { startNats } from '../test/helpers/nats.ts';
import { now, numberArg, percentile } from './lib.ts';
import { startSimFleet } from './rollout-fleet.ts';
import { badBuild, composition, goodBuild, seatKilled, stateSize, until, WAVES, type Row, type Run } from './rollout-rows.ts';
import { countingWatch, floorBurst, putPipelined, startSeatProcess } from './seat-lib.ts';

const NODES = numberArg('nodes', 5000);
const MODULE_NAMES = ['bad', 'good', 'restart'];

const nodeName = (i: number) => `n${String(i).padStart(5, '0')}`;

/** The bus's own figures in the same run: plan-sized pipelined puts seen by a watcher (a wave's worth and NODES), and one put → watcher. */
type Floor = { putP50: number; fiftyMs: number; allMs: number };

/** Measures the floor with the bytes of a real plan, on a scratch bucket, while the seat is idle. */
async function measureFloor(nc: NatsConnection, planBytes: Uint8Array): Promise<Floor> {
  await new Kvm(jetstream(nc)).create('bench_floor');
  const publisher = new KvPublisher(nc, 'bench_floor');
  const watch = await countingWatch(nc, 'bench_floor', now);
  const bulk = (n: number, prefix: string) => floorBurst(publisher, watch, now, planBytes, n, prefix, 1);
  const fiftyMs = await bulk(reachedBy(WAVES, 1, NODES), 'wave');
  const allMs = await bulk(NODES, 'all');
  const one: number[] = [];
  for (let i = 0; i < 100; i++) {
    const seen = watch.next('one', (t) => t === `v${i}`);
    const started = now();
    await publisher.put('one', new TextEncoder().encode(`v${i}`));
    one.push((await seen) - started);
  }
  watch.stop();
  publisher.close();
  return {
    putP50: percentile(
      one.sort((a, b) => a - b),
      50,
    ),
    fiftyMs,
    allMs,
  };
}

/** Publishes b1 of every module and assigns each to NODES nodes; waits until every node has reported b1 applied. */
async function setUp(run: Run, nc: NatsConnection): Promise<void> {
  const started = now();
  for (const m of MODULE_NAMES) await run.modules.put(m, composition(m, 'b1'));
  const publisher = new KvPublisher(nc, ASSIGNMENTS);
  await putPipelined(
    publisher,
    (function* () {
      for (let i = 0; i < NODES; i++)
        for (const module of MODULE_NAMES) {
          const node = nodeName(i);
          yield [`${node}.${module}`, jsonBytes({ node, module, placement: { dir: { config: `/etc/${module}` } } })] as [string, Uint8Array];
        }
    })(),
  );
  publisher.close();
  const total = NODES * MODULE_NAMES.length;
  await until(`${total} reports of b1`, () => run.fleet.reports.size >= total, 120_000, run);
  run.notes.push(`set up: ${total} assignments → every plan written and reported b1 in ${((now() - started) / 1000).toFixed(2)} s`);
}

async function main(): Promise<void> {
  const nats = await startNats();
  const nc = await connectBus({ servers: [nats.url], name: 'bench-rollout' });
  const modules = await ensureKv(nc, MODULES, 1);
  await ensureKv(nc, ASSIGNMENTS, 1);
  const seat = startSeatProcess(nats.url);
  const ready = seat.saying(/seat ready/, now);
  let run: Run | undefined;
  try {
    await until('the seat ready', () => seat.stderr().includes('seat ready'), 30_000, { seat });
    await ready;
    const fleet = await startSimFleet(nc, { minDelayMs: 20, maxDelayMs: 200 });
    run = { url: nats.url, modules, fleet, seat, nodes: NODES, notes: [] };
    await setUp(run, nc);
    const plan = await (await new Kvm(jetstream(nc)).open(PLANS)).get(`${nodeName(0)}.good`);
    const floor = await measureFloor(nc, plan!.value);
    const rows: Row[] = [];
    const [reached, back, halt] = await badBuild(run, floor);
    rows.push(reached!, back!, await goodBuild(run, floor), await seatKilled(run), halt!);
    rows.push(
      stateSize(
        run,
        Array.from({ length: NODES }, (_, i) => nodeName(i)),
      ),
    );
    fleet.stop();
    const [l1, l5] = loadavg();
    console.log(
      `rollout: ${NODES} nodes × ${MODULE_NAMES.length} modules, waves ${WAVES.join('/')} (load average ${l1!.toFixed(2)} / ${l5!.toFixed(2)} at the end)`,
    );
    printTable(rows);
    for (const n of run.notes) console.log(`  ${n}`);
  } catch (err) {
    console.error(`seat stderr (tail):\n${(run?.seat ?? seat).stderr().slice(-4000)}`);
    throw err;
  } finally {
    await (run?.seat ?? seat).stop();
    await nc.close();
    await nats.cleanup();
  }
}

/** One table: the work, its goal, the figure measured, whether it met the goal, and the bus's floor beside it. */
function printTable(rows: Row[]): void {
  const w = [Math.max(...rows.map((r) => r.what.length)), Math.max(...rows.map((r) => r.goal.length)), Math.max(...rows.map((r) => r.figure.length))];
  console.log(`  ${'work'.padEnd(w[0]!)}  ${'goal'.padEnd(w[1]!)}  ${'measured'.padEnd(w[2]!)}  met  bus floor (same run)`);
  for (const r of rows) console.log(`  ${r.what.padEnd(w[0]!)}  ${r.goal.padEnd(w[1]!)}  ${r.figure.padEnd(w[2]!)}  ${r.met ? 'yes' : 'NO '}  ${r.floor}`);
}

await main();
