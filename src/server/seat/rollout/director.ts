// The seat's progressive rollouts (DESIGN §12): which composition each node of a rolling module gets,
// when a wave is done, when the nodes' reports halt it, and the operator's resume and abort. The
// composer asks it per key; the watches feed it plans and reports; it writes each state and says
// each step. Every decision is made again from the state, the stored plans and the reports, so a
// restarted seat goes on where it was.
import { compareKeys, nodeModuleKey, parseNodeModuleKey } from '../../../shared/contract/keys.ts';
import type { Level, Logger } from '../../../shared/cli/log.ts';
import type { Rollout } from '../../../shared/contract/rollout-schema.ts';
import type { Composition } from '../../../shared/contract/composition.ts';
import type { Health } from '../../../shared/contract/verb.ts';
import { unrefTimer, type Timer } from '../../../shared/base/timer.ts';
import { digestOf } from '../digest.ts';
import { isUsable, type KnownComposition } from '../inputs.ts';
import { judgeWave } from './judge.ts';
import { carryOver, clockOf, compositionOf, newLive, plannedAhead, reachedNodes, restartClocks, stopTimers, type Live } from './live.ts';
import { lateFailures } from './progress.ts';
import { markOfComposition, markOfPlan, readSeenReport } from './marks.ts';
import { failedListed, keepFailedOnly, planOfLive, rolloutHealthEntry, sayOnce, takeRecovered } from './failed-nodes.ts';
import { contentOf, MAX_FAILED_LISTED, type RolloutHealth, type RolloutState } from '../../../shared/contract/rollout-state.ts';
import { abortRollout, describeState, levelOf, refusal, resumeRollout, startRollout, supersedeRollout, withFailed } from './steps.ts';
import type { StateWriter } from './store.ts';
import { waveOrder } from '../../../shared/contract/waves.ts';

/** What the director asks of the composer: the module's keys, their stored plans, and a pass over a module's keys. */
export type RolloutHost = {
  /** The keys with a good assignment of `module`. */
  keysOf(module: string): Iterable<string>;
  /** Whether `key` has a stored plan. */
  hasStoredPlan(key: string): boolean;
  /** Whether `key` has a good assignment. */
  isAssigned(key: string): boolean;
  /** Why the seat cannot compose `key`'s plan of `build` (the reason its health entry says), when it cannot. */
  composeFailure(key: string, build: string): string | undefined;
  /** Composes the keys of `module` again at the next pass: every one, or those of `nodes`. */
  recompose(module: string, nodes?: Iterable<string>): void;
};

/** How the director is built. */
export type DirectorOptions = {
  /** The seat's `--rollout`: what a composition without its own `rollout` gets (none: every plan at once). */
  policy?: Rollout;
  /** The clock, in ms (Date.now). */
  now?: () => number;
  /** The timer of the `wait` deadlines (unrefTimer). */
  timer?: Timer;
};

/** An operator's request answered: taken, or refused with why. */
export type RolloutAnswer = { ok: true } | { ok: false; reason: string };

/** How often changed counts of a rollout are stored at most (a step is stored at once). */
export const COUNTS_WRITE_MS = 1000;

/** Directs the rollouts of every module. */
export class RolloutDirector {
  readonly #lives = new Map<string, Live>();
  /** The composition each module's nodes are on while no rollout holds them back. */
  readonly #settled = new Map<string, Composition>();
  /**
   * What each node's stored plan holds (`markOfPlan`), per module neither settled nor rolled out yet
   * (the seat's start, a module held): its first composition rolls out on the nodes whose plan is older.
   */
  readonly #unseen = new Map<string, Map<string, string>>();
  readonly #pending = new Set<string>();
  readonly #now: () => number;
  readonly #timer: Timer;
  #host: RolloutHost | undefined;
  #reportsSeen = 0;
  #passed = false;
  #reportsRead = false;
  #scheduled = false;
  #closed = false;

  constructor(
    private readonly writer: StateWriter,
    private readonly say: (line: Health) => void,
    private readonly log: Logger,
    private readonly options: DirectorOptions = {},
  ) {
    this.#now = options.now ?? Date.now;
    this.#timer = options.timer ?? unrefTimer;
  }

  /** Hands the director the composer it directs. */
  attach(host: RolloutHost): void {
    this.#host = host;
  }

  /** Takes the states read from the bucket at start, before any pass. */
  load(states: ReadonlyMap<string, RolloutState>): void {
    for (const state of states.values()) {
      const live = newLive(state, undefined, state.wave);
      // The reports are read after: every one of the module's is seen, while the rollout follows them.
      live.everyReportSeen = state.state === 'rolling' || state.state === 'halted' || state.state === 'aborted';
      this.#lives.set(state.module, live);
      // A restarted seat says what it goes on with: a rollout under way is no surprise in its log, and a halt still waits on an operator.
      if (state.state === 'rolling') this.log.notice(`taken up where it was: ${describeState(state)}`);
      if (state.state === 'halted') this.log.warn(`taken up where it was: ${describeState(state)}`);
    }
  }

  /** The composer read a module's composition (null: gone): a new one starts, supersedes or settles a rollout. */
  compositionChanged(module: string, known: KnownComposition | null): void {
    const usable = known ?? undefined;
    if (!isUsable(usable)) {
      // A held module is judged no further: a node it did not plan must not run out of time, and
      // once back its nodes' clocks start again, as their plans are written again.
      const held = this.#lives.get(module);
      if (held) {
        held.target = undefined;
        restartClocks(held);
      }
      return;
    }
    const next = usable.parsed.value;
    const digest = digestOf(contentOf(next));
    const live = this.#lives.get(module);
    if (live?.state.digest === digest) {
      // Back from held (its clocks started again at the hold), or first seen by a restarted seat.
      live.target = next;
      if (live.state.state === 'done') this.#settled.set(module, next);
      return this.#evaluateSoon(module);
    }
    const unseen = this.#unseen.get(module);
    this.#unseen.delete(module);
    const policy = next.rollout ?? this.options.policy;
    // The last good composition when the seat saw it; else the nodes' stored plans tell which are older.
    const from = this.#lastGood(module, live);
    const marks = live?.marks ?? unseen ?? new Map<string, string>();
    const members = !policy ? [] : from ? this.#membersOf(module) : this.#membersOf(module, marks, markOfComposition(next));
    const fromBuild = from?.build ?? (live ? live.state.from : mostHeld(members, marks));
    if (live && live.state.state !== 'done' && live.state.state !== 'superseded') this.#step(live, supersedeRollout(live.state, this.#now()));
    if (!policy || members.length === 0 || (from && digestOf(contentOf(from)) === digest)) {
      this.#settled.set(module, next);
      return;
    }
    const state = startRollout({ target: next, digest, from: from ?? fromBuild, policy, members: waveOrder(module, next.build, members), now: this.#now() });
    const started = newLive(state, next, 0);
    // What the superseded rollout learnt of the nodes' plans and reports still holds.
    if (live) carryOver(live, started);
    else for (const [node, mark] of marks) started.marks.set(node, mark);
    this.#settled.delete(module);
    this.#lives.set(module, started);
    this.#planWhenStored(started, state);
  }

  /** The composition `key`'s plan is composed from: the new build, the last good one, or undefined to keep its stored plan. */
  compositionFor(key: string, node: string, module: string, current: Composition): Composition | undefined {
    const live = this.#lives.get(module);
    if (!live) return current;
    const chosen = compositionOf(live, node, this.#host?.hasStoredPlan(key) ?? false, current);
    if (chosen.reached) clockOf(live, node, this.#now(), this.#reportsSeen);
    return chosen.composition;
  }

  /** A plan seen on the bus (null: deleted), stored `at` (ms, the bus's clock): what a rolling module's node holds, and since when. */
  seePlan(key: string, value: Uint8Array | null, at?: number): void {
    const id = parseNodeModuleKey(key);
    if (!id.ok) return;
    const { module, node } = id.value;
    const live = this.#lives.get(module);
    let marks = live?.marks ?? this.#unseen.get(module);
    if (!marks && !this.#settled.has(module) && value) this.#unseen.set(module, (marks = new Map()));
    if (!marks) return;
    if (value) marks.set(node, markOfPlan(value));
    else marks.delete(node);
    // Only a node with no clock yet: a plan this seat wrote started its clock as it was composed.
    if (value && at !== undefined && live && !live.clocks.has(node)) live.planTimes.set(node, at);
    else live?.planTimes.delete(node);
  }

  /** A report seen in `mesh-provisioner_applied` (null: deleted), with its revision. */
  seeReport(key: string, value: Uint8Array | null, revision: number): void {
    this.#reportsSeen = Math.max(this.#reportsSeen, revision);
    const id = parseNodeModuleKey(key);
    const live = id.ok ? this.#lives.get(id.value.module) : undefined;
    if (!live || !id.ok || live.state.state === 'superseded') return;
    // A done rollout follows only its failed nodes: its health entry lists those not applied since.
    if (live.state.state === 'done' && !failedListed(live).has(id.value.node)) return;
    const seen = value ? readSeenReport(value, revision) : undefined;
    if (seen) live.reports.set(id.value.node, seen);
    else live.reports.delete(id.value.node);
    this.#evaluateSoon(id.value.module);
  }

  /**
   * The composer finished a pass: after the first, with the reports read, waves are judged; a
   * rolling module with a key that `failed` to compose in it is judged again (a wave node whose
   * plan of the new build cannot be composed fails at once).
   */
  passed(failed: Iterable<string> = []): void {
    if (!this.#passed) {
      this.#passed = true;
      return this.#judgeAll();
    }
    for (const key of failed) {
      const id = parseNodeModuleKey(key);
      if (id.ok && this.#lives.get(id.value.module)?.state.state === 'rolling') this.#evaluateSoon(id.value.module);
    }
  }

  /** The reports present at start have all been seen. */
  reportsRead(): void {
    this.#reportsRead = true;
    this.#judgeAll();
  }

  /** An operator's `resume` or `abort` of a module's rollout; resolves once the new state is stored. */
  async request(op: 'resume' | 'abort', module: string): Promise<RolloutAnswer> {
    const live = this.#lives.get(module);
    if (!live) return { ok: false, reason: `there is no rollout of ${module}` };
    const why = refusal(live.state, op);
    if (why !== undefined) return { ok: false, reason: why };
    restartClocks(live);
    if (op === 'resume') await this.#planWhenStored(live, resumeRollout(live.state, this.#now()));
    else {
      const back = plannedAhead(live, [...this.#nodesOf(live.state.module)]);
      const stored = this.#step(live, abortRollout(live.state, this.#now()));
      this.#host?.recompose(module, back);
      await stored;
    }
    return { ok: true };
  }

  /** The state of a module's rollout, when there is one. */
  stateOf(module: string): RolloutState | undefined {
    return this.#lives.get(module)?.state;
  }

  /** The modules whose rollout is not done, or done with nodes still failed, in order: the verb's `health` keys them `<module>`. */
  healthKeys(): string[] {
    const host = this.#host;
    if (!host) return [];
    return [...this.#lives.values()]
      .filter((l) => rolloutHealthEntry(l, host) !== undefined)
      .map((l) => l.state.module)
      .sort(compareKeys);
  }

  /** The verb's `health` entry of a module's rollout not done, or done with failed nodes (`rolloutHealthEntry`). */
  healthEntry(module: string): RolloutHealth | undefined {
    const live = this.#lives.get(module);
    return live && this.#host ? rolloutHealthEntry(live, this.#host) : undefined;
  }

  /** Stops every deadline; nothing is judged any more. */
  close(): void {
    this.#closed = true;
    for (const live of this.#lives.values()) stopTimers(live);
    this.writer.close();
  }

  /**
   * The composition a new rollout starts from: what this seat settled the nodes on, else the last
   * good build of the module's rollout (the new build once done); undefined when it saw neither.
   */
  #lastGood(module: string, live: Live | undefined): Composition | undefined {
    return this.#settled.get(module) ?? live?.state.previous;
  }

  /**
   * The nodes of `module` on an older plan: every assigned node with a stored plan; with `marks`,
   * only those whose plan was read and holds another build than `newMark` (the seat saw no
   * composition they are on: their plans are the only witness).
   */
  #membersOf(module: string, marks?: ReadonlyMap<string, string>, newMark?: string): string[] {
    const nodes: string[] = [];
    for (const key of this.#host?.keysOf(module) ?? []) {
      const id = parseNodeModuleKey(key);
      if (!id.ok || !this.#host?.hasStoredPlan(key)) continue;
      const mark = marks?.get(id.value.node);
      if (marks && (mark === undefined || mark === newMark)) continue;
      nodes.push(id.value.node);
    }
    return nodes;
  }

  /** Takes a rolling state whose wave moved: its nodes are planned once it is stored, then the wave is judged. */
  #planWhenStored(live: Live, state: RolloutState, level?: Level): Promise<void> {
    live.storedWave = 0;
    return this.#step(live, state, level).then(() => {
      if (this.#closed || this.#lives.get(state.module) !== live || live.state.state !== 'rolling' || live.state.wave !== state.wave) return;
      live.storedWave = state.wave;
      // Only the nodes the waves reach now change plan: at 50,000 nodes a pass over every key took seconds.
      this.#host?.recompose(state.module, reachedNodes(live, this.#nodesOf(state.module)));
      this.#evaluateSoon(state.module);
    });
  }

  /** Takes a new state: stored, said, and logged at the level an operator watches it by. */
  #step(live: Live, state: RolloutState, level: Level = levelOf(state)): Promise<void> {
    stopTimers(live);
    live.state = state;
    // A halt or an abort plans the nodes back: those planned anew join their wave's hash again.
    if (state.state === 'halted' || state.state === 'aborted') {
      live.anew.clear();
      live.reached = undefined;
    }
    // A failed node is said once, with the step that names it; a resume starts the count again.
    if (state.state === 'rolling' && state.nodes.failed === 0) live.saidFailed.clear();
    for (const f of state.failed) live.saidFailed.add(f.node);
    const reason = describeState(state, planOfLive(live));
    this.log[level](reason);
    this.say({ module: state.module, build: state.build, reason, passes: state.wave });
    return this.writer.write(state);
  }

  #judgeAll(): void {
    for (const module of this.#lives.keys()) this.#evaluateSoon(module);
  }

  #evaluateSoon(module: string): void {
    this.#pending.add(module);
    if (this.#scheduled) return;
    this.#scheduled = true;
    // Reports come in bursts: one judgement per module per turn of the loop, not per report.
    setImmediate(() => {
      this.#scheduled = false;
      const modules = [...this.#pending];
      this.#pending.clear();
      for (const m of modules) this.#judge(m);
    });
  }

  /**
   * A halted rollout records the failed reports of its wave that came after the halt, while its list
   * has room (under it, every failed node is listed, so none is counted twice); nothing moves for
   * them, and they are not said (the halt was).
   */
  #recordLateFailures(live: Live): void {
    const { state } = live;
    if (state.failed.length >= MAX_FAILED_LISTED || !this.#host) return;
    const reached = reachedNodes(live, this.#nodesOf(state.module));
    const late = lateFailures(reached, state.build, new Set(state.failed.map((f) => f.node)), (node) => live.reports.get(node));
    if (late.length === 0) return;
    live.state = withFailed(state, [...state.failed, ...late]);
    void this.writer.write(live.state);
  }

  /** The nodes of a module's good assignments. */
  *#nodesOf(module: string): Generator<string> {
    for (const key of this.#host?.keysOf(module) ?? []) yield key.slice(0, key.length - module.length - 1);
  }

  /**
   * A done rollout's failed nodes that reported the new build applied since are failed no more: the
   * state is written again without them (counted applied), so `rollout` says what `status` does, and
   * said at notice, a failure that ended. A rollout left with none is done as any other.
   */
  #recordRecovered(live: Live): void {
    const reason = takeRecovered(live);
    if (reason === undefined) return;
    this.log.notice(reason);
    this.say({ module: live.state.module, build: live.state.build, reason, passes: live.state.wave });
    void this.writer.write(live.state);
  }

  /** Judges the planned wave and takes what it decides. */
  #judge(module: string): void {
    const live = this.#lives.get(module);
    if (live?.state.state === 'halted' && !this.#closed) return this.#recordLateFailures(live);
    if (live?.state.state === 'done' && !this.#closed) return this.#recordRecovered(live);
    if (!live || this.#closed || !this.#passed || !this.#reportsRead || !this.#host || !live.target || live.state.state !== 'rolling') return;
    // A wave not stored yet is not planned yet: judged once it is.
    if (live.storedWave !== live.state.wave) return;
    live.deadline?.cancel();
    live.deadline = undefined;
    const host = this.#host;
    const build = live.state.build;
    const judged = judgeWave(live, this.#now(), this.#reportsSeen, {
      nodes: this.#nodesOf(module),
      assigned: (node) => host.isAssigned(nodeModuleKey(node, module)),
      composeFailure: (node) => host.composeFailure(nodeModuleKey(node, module), build),
    });
    if (judged.kind === 'halt') {
      restartClocks(live);
      const back = plannedAhead(live, [...this.#nodesOf(live.state.module)]);
      void this.#step(live, judged.state);
      return host.recompose(module, back);
    }
    const failedAnew = sayOnce(live, judged.failed);
    // The step's line names a node failed below `halt` anew: at warning, as a halt is.
    const level = failedAnew ? 'warn' : undefined;
    if (judged.kind === 'next' && judged.state.state === 'rolling') return void this.#planWhenStored(live, judged.state, level);
    if (judged.kind === 'next') {
      this.#settled.set(module, live.target);
      void this.#step(live, judged.state, level);
      return keepFailedOnly(live);
    }
    this.#waitOn(live, judged, failedAnew);
  }

  /** Takes a wave that waits on: a node failed in it anew said, changed counts stored within a second, the next deadline set. */
  #waitOn(live: Live, judged: { state: RolloutState; countsMoved: boolean; deadline: number | undefined }, failedAnew: boolean): void {
    const { module } = judged.state;
    live.state = judged.state;
    if (failedAnew) {
      const reason = describeState(judged.state, planOfLive(live));
      this.log.warn(reason);
      this.say({ module, build: judged.state.build, reason, passes: judged.state.wave });
    }
    // Counts change with every report: stored at most once a second, never said (a step is said once).
    if (judged.countsMoved)
      live.counts ??= this.#timer(() => {
        live.counts = undefined;
        if (!this.#closed) void this.writer.write(live.state);
      }, COUNTS_WRITE_MS);
    if (judged.deadline !== undefined) live.deadline = this.#timer(() => this.#evaluateSoon(module), Math.max(0, judged.deadline - this.#now()) + 1);
  }
}

/** The build most of `nodes`' stored plans hold (ties: the first by name): where a rollout the seat never saw the start of comes from. */
function mostHeld(nodes: readonly string[], marks: ReadonlyMap<string, string>): string {
  const counts = new Map<string, number>();
  for (const node of nodes) {
    const build = (marks.get(node) ?? '').split('\n')[0]!;
    counts.set(build, (counts.get(build) ?? 0) + 1);
  }
  let best = '';
  let most = 0;
  for (const [build, n] of [...counts].sort(([a], [b]) => compareKeys(a, b))) if (n > most) [best, most] = [build, n];
  return best;
}
