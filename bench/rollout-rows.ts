// The rows of bench/rollout.ts (issue 21, DESIGN §12): a bad build halted and planned back, a good
// build through every wave, the seat killed during wave 2, and the plan writes during a halt. Each
// row returns its figure and whether it met the goal; the bench prints them beside the bus floor.
import type { KV } from '@nats-io/kv';
import { jsonBytes } from '../src/shared/base/bytes.ts';
import { nodeHash, reachedBy } from '../src/shared/contract/waves.ts';
import { cpuSeconds, now } from './lib.ts';
import { ofModule, plannedBackwards, type PlanSeen, type SimFleet } from './rollout-fleet.ts';
import { startSeatProcess, type SeatProcess } from './seat-lib.ts';

/** The waves of every rollout the bench runs. */
export const WAVES = [0.01, 0.1, 0.5, 1];

/** One row of the table. */
export type Row = { what: string; goal: string; figure: string; met: boolean; floor: string };

/** What the rows share: the bus, the seat (replaced when a row restarts it), the fleet and the size. */
export type Run = { url: string; modules: KV; fleet: SimFleet; seat: SeatProcess; nodes: number; notes: string[] };

/** A composition of `module` at `build`: one file under ${dir:config}, rolled out in WAVES, halt 1. */
export function composition(module: string, build: string): Uint8Array {
  return jsonBytes({
    module,
    build,
    published: true,
    archive: {
      ref: `obj://mesh-catalog_archives/${module}-${build}.tar`,
      digest: 'sha256:' + Buffer.from(`${module}-${build}`).toString('hex').padEnd(64, '0'),
    },
    provisioning: { files: [{ path: `\${dir:config}/${module}.conf`, template: `${module}.conf`, mode: 'owned', change: 'restart' }] },
    rollout: { waves: WAVES, halt: 1, wait: 600 },
  });
}

/** Polls until `fn` holds; throws when the seat exits or after `ms`. */
export async function until(what: string, fn: () => boolean, ms: number, run: Pick<Run, 'seat'>): Promise<void> {
  const deadline = now() + ms;
  while (!fn()) {
    if (run.seat.child.exitCode !== null) throw new Error(`the seat exited (${run.seat.child.exitCode}) while waiting for ${what}`);
    if (now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;
const lastState = (run: Run, module: string) => run.fleet.states.get(module)?.at(-1)?.state;
/** When the last write of `build` in a key's plan writes was seen. */
const lastOf = (list: PlanSeen[], build: string) => Math.max(...list.filter((p) => p.build === build).map((p) => p.at));
const hadBuild = (run: Run, module: string, build: string) => [...ofModule(run.fleet.plans, module)].filter(([, list]) => list.some((p) => p.build === build));

/**
 * Rows 1 and 4: a build failing on every node that gets it; how far it reaches, how fast it is
 * planned back, and every plan write while halted. The nodes reached are counted once the halt has
 * held 3 s: a plan of the new build the seat wrote just before the halt may be seen after it.
 */
export async function badBuild(run: Run, floor: { putP50: number; fiftyMs: number }): Promise<Row[]> {
  const module = 'bad';
  run.fleet.failBuild(module, 'b2');
  const published = now();
  await run.modules.put(module, composition(module, 'b2'));
  await until('the bad build halted', () => lastState(run, module)?.state === 'halted', 60_000, run);
  const planned = () => hadBuild(run, module, 'b2');
  await until('every reached node planned back', () => planned().every(([, list]) => list.at(-1)!.build === 'b1'), 30_000, run);
  // The halt held a while: the late failed reports and the nodes' reports of b1 arrive, and nothing may move.
  await new Promise((r) => setTimeout(r, 3000));
  const reached = planned();
  const backAt = Math.max(...reached.map(([, list]) => lastOf(list, 'b1')));
  const failed = [...ofModule(run.fleet.reports, module)].flatMap(([, list]) => list.filter((r) => r.build === 'b2' && r.state === 'failed'));
  const firstFailed = Math.min(...failed.map((r) => r.putAt));
  // Each reached node is written once after its b2 plan, back to b1; no other node is written at all.
  const reachedKeys = new Set(reached.map(([key]) => key));
  const during = [...ofModule(run.fleet.plans, module)].flatMap(([key, list]) => {
    const since = reachedKeys.has(key) ? lastOf(list, 'b2') : published;
    return list.filter((p) => p.at > since).map((p) => ({ key, build: p.build }));
  });
  const rollback = during.filter((w) => w.build === 'b1' && reachedKeys.has(w.key));
  const oneEach = new Set(rollback.map((w) => w.key)).size === rollback.length && rollback.length === reached.length;
  const cap = reachedBy(WAVES, 1, run.nodes);
  const state = lastState(run, module)!;
  run.notes.push(
    `bad build: halted at wave ${state.wave} with ${state.nodes.failed} failed of ${state.nodes.planned} planned; ${failed.length} failed reports written`,
  );
  return [
    {
      what: `a bad build, waves ${WAVES.join('/')}, halt 1: nodes reached`,
      goal: `≤ ${cap} (1% of ${run.nodes})`,
      figure: `${reached.length} nodes`,
      met: reached.length <= cap,
      floor: '',
    },
    {
      what: 'first failed report written → last node planned back',
      goal: '≤ 1 s',
      figure: seconds(backAt - firstFailed),
      met: backAt - firstFailed <= 1000,
      floor: `one put → watcher p50 ${floor.putP50.toFixed(2)} ms; ${cap} pipelined puts → watcher ${floor.fiftyMs.toFixed(1)} ms`,
    },
    {
      what: 'plan writes during the halt (3 s held after the rollback)',
      goal: `only the rollback's, one per node (${reached.length})`,
      figure: `${during.length} writes: ${rollback.length} rollbacks to b1 over ${new Set(rollback.map((w) => w.key)).size} nodes, ${during.length - rollback.length} others`,
      met: oneEach && during.length === rollback.length,
      floor: '',
    },
  ];
}

/** Row 2: a good build through every wave, nodes reporting after 20–200 ms; the seat's CPU per wave from /proc at each wave's state. */
export async function goodBuild(run: Run, floor: { allMs: number }): Promise<Row> {
  const module = 'good';
  const starts: number[] = [];
  const cpu: number[] = [];
  run.fleet.onState(({ state, at }) => {
    if (state.module !== module || state.build !== 'b2') return;
    const wave = state.state === 'done' ? WAVES.length + 1 : state.wave;
    if (starts[wave] !== undefined || (state.state !== 'rolling' && state.state !== 'done')) return;
    starts[wave] = at;
    cpu[wave] = cpuSeconds(run.seat.child.pid!);
  });
  const started = now();
  await run.modules.put(module, composition(module, 'b2'));
  const onB2 = () => [...ofModule(run.fleet.reports, module)].filter(([, list]) => list.some((r) => r.build === 'b2' && r.state === 'applied'));
  await until(`all ${run.nodes} nodes on b2, rollout done`, () => onB2().length >= run.nodes && starts[WAVES.length + 1] !== undefined, 120_000, run);
  const { cuts, nodes } = lastState(run, module)!;
  // Wave k is every node hashed at most its cut (DESIGN §12).
  const waveOf = (node: string) => cuts.findIndex((cut) => nodeHash(module, 'b2', node) <= cut) + 1;
  const lastReport: number[] = [];
  const lastPlan: number[] = [];
  let slowestNode = 0;
  for (const [key, list] of onB2()) {
    const report = list.find((r) => r.build === 'b2')!;
    const wave = waveOf(key.slice(0, key.indexOf('.')));
    const plan = run.fleet.plans.get(key)!.find((p) => p.build === 'b2')!;
    lastReport[wave] = Math.max(lastReport[wave] ?? 0, report.ackAt);
    lastPlan[wave] = Math.max(lastPlan[wave] ?? 0, plan.at);
    slowestNode = Math.max(slowestNode, report.ackAt - plan.at);
  }
  const allOn = Math.max(...lastReport.filter((x) => x !== undefined));
  const durations = WAVES.map((_, k) => lastReport[k + 1]! - (k === 0 ? started : starts[k + 1]!));
  const bound = 4 * Math.max(...durations) + 1000;
  for (let k = 1; k <= WAVES.length; k++) {
    const gap = k < WAVES.length ? `, its last report → wave ${k + 1} stored ${(starts[k + 1]! - lastReport[k]!).toFixed(0)} ms` : '';
    const size = reachedBy(WAVES, k, nodes.total) - reachedBy(WAVES, k - 1, nodes.total);
    const planned = (lastPlan[k]! - (k === 1 ? started : starts[k]!)).toFixed(0);
    run.notes.push(
      `good build, wave ${k} (${size} nodes): its plans seen within ${planned} ms, its last report after ${durations[k - 1]!.toFixed(0)} ms${gap}; seat CPU ${(cpu[k + 1]! - cpu[k]!).toFixed(2)} s`,
    );
  }
  const writes = [...ofModule(run.fleet.plans, module)].reduce((n, [, list]) => n + list.filter((p) => p.at >= started).length, 0);
  run.notes.push(`good build: ${writes} plan writes from the publish to done (${run.nodes} nodes)`);
  run.notes.push(
    `good build: slowest node, plan seen → report acked: ${slowestNode.toFixed(0)} ms; rollout stored done ${(starts[WAVES.length + 1]! - allOn).toFixed(0)} ms after the last report`,
  );
  return {
    what: `a good build, same waves, reports after 20–200 ms: all ${run.nodes} on it`,
    goal: '≤ 4 × slowest wave + 1 s',
    figure: `${seconds(allOn - started)} (bound ${seconds(bound)})`,
    met: allOn - started <= bound,
    floor: `${run.nodes} pipelined puts → watcher ${seconds(floor.allMs)}`,
  };
}

/** Row 3: the seat killed (SIGKILL) once wave 2's first plan is seen, started again; the rollout must end done, no node planned backwards. */
export async function seatKilled(run: Run): Promise<Row> {
  const module = 'restart';
  const wave1 = reachedBy(WAVES, 1, run.nodes);
  await run.modules.put(module, composition(module, 'b2'));
  await until('wave 2 planned', () => (lastState(run, module)?.wave ?? 0) >= 2 && hadBuild(run, module, 'b2').length > wave1, 60_000, run);
  const exited = new Promise((r) => run.seat.child.once('exit', r));
  run.seat.child.kill('SIGKILL');
  await exited;
  const atKill = hadBuild(run, module, 'b2').length;
  const restarted = now();
  run.seat = startSeatProcess(run.url);
  const ready = run.seat.saying(/seat ready/, now);
  await until('the rollout done', () => lastState(run, module)?.state === 'done', 120_000, run);
  const doneIn = now() - restarted;
  const backwards = [...plannedBackwards(run.fleet, module, 'b2', 'b1'), ...plannedBackwards(run.fleet, 'good', 'b2', 'b1')];
  const twice = [...ofModule(run.fleet.plans, module)].filter(([, list]) => list.filter((p) => p.build === 'b2').length > 1).length;
  const readyIn = (await ready) - restarted;
  run.notes.push(
    `seat killed: ${atKill} of ${run.nodes} nodes planned b2 at the kill; restarted seat ready after ${readyIn.toFixed(0)} ms; ${twice} nodes planned b2 twice`,
  );
  return {
    what: 'seat killed (SIGKILL) during wave 2, restarted',
    goal: 'ends done, never planned backwards',
    figure: `done ${seconds(doneIn)} after the restart; ${backwards.length} nodes planned backwards`,
    met: lastState(run, module)?.state === 'done' && backwards.length === 0,
    floor: '',
  };
}

/** The most a state a rollout can store may take beside its previous composition (DESIGN §12), at any fleet size. */
export const STATE_BESIDE_PREVIOUS_BYTES = 64 * 1024;

/**
 * Row 5: the largest state each module's rollout stored, beside its previous composition (the state
 * less that composition's bytes), against what a list of the fleet's names alone would have taken.
 */
export function stateSize(run: Run, nodeNames: readonly string[]): Row {
  let largest = { beside: 0, bytes: 0, module: '' };
  for (const [module, seen] of run.fleet.states)
    for (const s of seen) if (s.bytes - s.previousBytes > largest.beside) largest = { beside: s.bytes - s.previousBytes, bytes: s.bytes, module };
  const memberList = Buffer.byteLength(JSON.stringify(nodeNames));
  return {
    what: `rollout state beside its previous composition, largest stored (${run.nodes} nodes)`,
    goal: `≤ ${STATE_BESIDE_PREVIOUS_BYTES / 1024} KiB`,
    figure: `${largest.beside} bytes (${largest.bytes} with it, ${largest.module})`,
    met: largest.beside <= STATE_BESIDE_PREVIOUS_BYTES,
    floor: `the fleet's names alone, as a list: ${memberList} bytes`,
  };
}
