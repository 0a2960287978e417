// What bench/rollout.ts plays instead of a fleet of clients (DESIGN §12): a watch of
// mesh-provisioner_plans that, for each plan written for a node, writes that node's report into
// mesh-provisioner_applied after a random delay, as a real client would (`failed` for a build the
// bench calls bad, else `applied`); and a watch of mesh-provisioner_rollouts that keeps each state
// seen. Every plan write and report is kept with its time, so a row can say who got what, and when.
import type { NatsConnection } from '@nats-io/transport-node';
import { APPLIED, PLANS, ROLLOUTS } from '../src/shared/contract/buckets.ts';
import { jsonBytes } from '../src/shared/base/bytes.ts';
import { KvPublisher } from '../src/shared/bus/kv-publisher.ts';
import type { Watch } from '../src/shared/bus/watch/types.ts';
import { watchKv } from '../src/shared/bus/watch/watch.ts';
import type { RolloutState } from '../src/shared/contract/rollout-state.ts';
import { now } from './lib.ts';

/** One plan write seen by the bench's watch: the build (null: deleted) and when. */
export type PlanSeen = { build: string | null; at: number };

/** One report the bench wrote for a node: the build, its state, when the put was issued and when the bus acked it. */
export type ReportWritten = { build: string; state: 'applied' | 'failed'; putAt: number; ackAt: number };

/** One state of mesh-provisioner_rollouts seen by the bench, when, its size in bytes and its previous composition's. */
export type StateSeen = { state: RolloutState; at: number; bytes: number; previousBytes: number };

/** How the simulated fleet reports. */
export type SimFleetOptions = {
  /** The shortest delay from a plan seen to its report, in ms. */
  minDelayMs: number;
  /** The longest delay from a plan seen to its report, in ms. */
  maxDelayMs: number;
};

/** The fleet the bench plays: what it saw and wrote, per `<node>.<module>` key. */
export type SimFleet = {
  /** Every plan write seen per key, in order. */
  plans: Map<string, PlanSeen[]>;
  /** Every report written per key, in order (filled in once acked). */
  reports: Map<string, ReportWritten[]>;
  /** Every rollout state seen per module, in order. */
  states: Map<string, StateSeen[]>;
  /** Makes every node that is planned `build` of `module` report it `failed` (a bad build). */
  failBuild(module: string, build: string): void;
  /** Calls `fn` with each rollout state seen from now on. */
  onState(fn: (seen: StateSeen) => void): void;
  /** When the last plan write of `module` was seen (0: none). */
  lastPlanAt(module: string): number;
  stop(): void;
};

/** Watches the plans and the rollouts, and answers each plan with a report after a random delay. */
export async function startSimFleet(nc: NatsConnection, opts: SimFleetOptions): Promise<SimFleet> {
  const plans = new Map<string, PlanSeen[]>();
  const reports = new Map<string, ReportWritten[]>();
  const states = new Map<string, StateSeen[]>();
  const lastAt = new Map<string, number>();
  const bad = new Set<string>();
  const stateListeners: ((seen: StateSeen) => void)[] = [];
  const publisher = new KvPublisher(nc, APPLIED);
  const decoder = new TextDecoder();

  /** Reports `build` for `key` unless a newer plan came meanwhile (a client applies its latest plan only). */
  const report = (key: string, build: string, seen: PlanSeen) => {
    const list = plans.get(key)!;
    if (list.at(-1) !== seen) return;
    const dot = key.indexOf('.');
    const [node, module] = [key.slice(0, dot), key.slice(dot + 1)];
    const failed = bad.has(`${module}@${build}`);
    const value = {
      node,
      module,
      build,
      state: failed ? 'failed' : 'applied',
      files: [],
      waiting: [],
      ...(failed ? { reason: 'fill: "${confg:port}": unknown placeholder kind "confg"' } : {}),
      at: new Date().toISOString(),
    };
    const written: ReportWritten = { build, state: failed ? 'failed' : 'applied', putAt: now(), ackAt: 0 };
    void publisher.put(key, jsonBytes(value)).then(
      () => {
        written.ackAt = now();
        const mine = reports.get(key) ?? [];
        mine.push(written);
        reports.set(key, mine);
      },
      (err: unknown) => console.error(`report of ${key}: ${String(err)}`),
    );
  };

  const planWatch: Watch = await watchKv(nc, PLANS, '>', (e) => {
    const at = now();
    const build = e.value ? (JSON.parse(decoder.decode(e.value)) as { build: string }).build : null;
    const seen: PlanSeen = { build, at };
    const list = plans.get(e.key) ?? [];
    list.push(seen);
    plans.set(e.key, list);
    lastAt.set(e.key.slice(e.key.indexOf('.') + 1), at);
    if (build === null) return;
    const delay = opts.minDelayMs + Math.random() * (opts.maxDelayMs - opts.minDelayMs);
    setTimeout(() => report(e.key, build, seen), delay);
  });
  const stateWatch: Watch = await watchKv(nc, ROLLOUTS, '>', (e) => {
    if (!e.value) return;
    const state = JSON.parse(decoder.decode(e.value)) as RolloutState;
    const previousBytes = state.previous === undefined ? 0 : jsonBytes(state.previous).length;
    const seen: StateSeen = { state, at: now(), bytes: e.value.length, previousBytes };
    const list = states.get(e.key) ?? [];
    list.push(seen);
    states.set(e.key, list);
    for (const fn of stateListeners) fn(seen);
  });
  await Promise.all([planWatch.caughtUp, stateWatch.caughtUp]);
  return {
    plans,
    reports,
    states,
    failBuild: (module, build) => void bad.add(`${module}@${build}`),
    onState: (fn) => void stateListeners.push(fn),
    lastPlanAt: (module) => lastAt.get(module) ?? 0,
    stop() {
      planWatch.stop();
      stateWatch.stop();
      publisher.close();
    },
  };
}

/** The keys of `module` in `map`, with their values. */
export function* ofModule<T>(map: Map<string, T>, module: string): Generator<[string, T]> {
  for (const [key, value] of map) if (key.endsWith(`.${module}`)) yield [key, value];
}

/** The keys of `module` whose plan went from `newer` straight back to `older` (only a halt or an abort may do that). */
export function plannedBackwards(fleet: SimFleet, module: string, newer: string, older: string): string[] {
  const out: string[] = [];
  for (const [key, list] of ofModule(fleet.plans, module)) {
    for (let i = 1; i < list.length; i++) if (list[i - 1]!.build === newer && list[i]!.build === older) out.push(key);
  }
  return out;
}
