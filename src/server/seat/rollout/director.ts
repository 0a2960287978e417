// The seat's progressive rollouts (DESIGN §12): which composition each node of a rolling module gets,
// when a wave is done, when the nodes' reports halt it, and the operator's resume and abort. It is a
// selector the composer asks per key; the seat hands it what it hears (compositions, plans, reports,
// passes) and routes what it asks (a pass over some keys) to the composer. Every decision is made
// again from the state, the stored plans and the reports, so a restarted seat goes on where it was.
import { parseNodeModuleKey } from '../../../shared/contract/keys.ts';
import type { Logger } from '../../../shared/cli/log.ts';
import type { Rollout } from '../../../shared/contract/rollout-schema.ts';
import type { Composition } from '../../../shared/contract/composition.ts';
import type { Health } from '../../../shared/contract/verb.ts';
import { unrefTimer, type Timer } from '../../../shared/base/timer.ts';
import { digestOf } from '../../../shared/contract/digest.ts';
import { contentOf, type RolloutHealth, type RolloutState } from '../../../shared/contract/rollout-state.ts';
import type { RolloutContext, RolloutHost } from './context.ts';
import { judgeModule } from './deciding.ts';
import { failedListed } from './failed-nodes.ts';
import { rolloutHealth, rolloutHealthKeys } from './health-view.ts';
import { clockOf, compositionOf, restartClocks, stopTimers, type Live } from './live.ts';
import { markOfPlan, readSeenReport } from './marks.ts';
import { answerOperator, type RolloutAnswer, type RolloutOp } from './operator.ts';
import { Soon, type Turn } from './soon.ts';
import { startFor, takeUp } from './starting.ts';
import type { StateWriter } from './store.ts';

/** How the director is built. */
export type DirectorOptions = {
  /** The seat's `--rollout`: what a composition without its own `rollout` gets (none: every plan at once). */
  policy?: Rollout;
  /** The clock, in ms (Date.now). */
  now?: () => number;
  /** The timer of the `wait` deadlines and of the stored counts (unrefTimer). */
  timer?: Timer;
  /** The turn a burst of reports is judged at (setImmediate). */
  turn?: Turn;
};

/** Directs the rollouts of every module. */
export class RolloutDirector {
  readonly #lives = new Map<string, Live>();
  /** Each node's stored plan's mark (`markOfPlan`), per module neither settled nor rolled out yet (the seat's start, a module held). */
  readonly #unseen = new Map<string, Map<string, string>>();
  readonly #ctx: RolloutContext;
  readonly #soon: Soon;
  #host: RolloutHost | undefined;
  #reportsSeen = 0;
  #passed = false;
  #reportsRead = false;
  #closed = false;

  constructor(
    private readonly writer: StateWriter,
    say: (line: Health) => void,
    log: Logger,
    private readonly options: DirectorOptions = {},
  ) {
    this.#soon = new Soon((module) => judgeModule(this.#ctx, module), options.turn);
    this.#ctx = {
      lives: this.#lives,
      settled: new Map(),
      writer,
      log,
      say,
      now: options.now ?? Date.now,
      timer: options.timer ?? unrefTimer,
      host: () => this.#host,
      reportsSeen: () => this.#reportsSeen,
      closed: () => this.#closed,
      judging: () => this.#passed && this.#reportsRead,
      judgeSoon: (module) => this.#soon.ask(module),
    };
  }

  /** Hands the director the composer it reads, and where its passes are asked (the seat wires both). */
  attach(host: RolloutHost): void {
    this.#host = host;
  }

  /** Takes the states read from the bucket at start, before any pass. */
  load(states: ReadonlyMap<string, RolloutState>): void {
    takeUp(this.#ctx, states);
  }

  /** The composer read a module's composition: `next` when plans are composed from it, undefined when it is gone or held. */
  compositionChanged(module: string, next: Composition | undefined): void {
    const live = this.#lives.get(module);
    if (!next) {
      // A held module is judged no further: a node it did not plan must not run out of time, and
      // once back its nodes' clocks start again, as their plans are written again.
      if (live) {
        live.target = undefined;
        restartClocks(live);
      }
      return;
    }
    const digest = digestOf(contentOf(next));
    if (live?.state.digest === digest) {
      // Back from held (its clocks started again at the hold), or first seen by a restarted seat.
      live.target = next;
      if (live.state.state === 'done') this.#ctx.settled.set(module, next);
      return this.#soon.ask(module);
    }
    const unseen = this.#unseen.get(module);
    this.#unseen.delete(module);
    startFor(this.#ctx, module, next, digest, live, unseen, this.options.policy);
  }

  /** The composition `key`'s plan is composed from: the new build, the last good one, or undefined to keep its stored plan. */
  compositionFor(key: string, node: string, module: string, current: Composition): Composition | undefined {
    const live = this.#lives.get(module);
    if (!live) return current;
    const chosen = compositionOf(live, node, this.#host?.hasStoredPlan(key) ?? false, current);
    if (chosen.reached) clockOf(live, node, this.#ctx.now(), this.#reportsSeen);
    return chosen.composition;
  }

  /** A plan seen on the bus (null: deleted), stored `at` (ms, the bus's clock): what a rolling module's node holds, and since when. */
  seePlan(key: string, value: Uint8Array | null, at?: number): void {
    const id = parseNodeModuleKey(key);
    if (!id.ok) return;
    const { module, node } = id.value;
    const live = this.#lives.get(module);
    let marks = live?.marks ?? this.#unseen.get(module);
    if (!marks && !this.#ctx.settled.has(module) && value) this.#unseen.set(module, (marks = new Map()));
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
    this.#soon.ask(id.value.module);
  }

  /**
   * The composer finished a pass: after the first, with the reports read, waves are judged; a
   * rolling module with a key that `failed` to compose in it is judged again (a wave node whose
   * plan of the new build cannot be composed fails at once).
   */
  passed(failed: Iterable<string> = []): void {
    if (!this.#passed) {
      this.#passed = true;
      return this.#soon.askAll(this.#lives.keys());
    }
    for (const key of failed) {
      const id = parseNodeModuleKey(key);
      if (id.ok && this.#lives.get(id.value.module)?.state.state === 'rolling') this.#soon.ask(id.value.module);
    }
  }

  /** The reports present at start have all been seen. */
  reportsRead(): void {
    this.#reportsRead = true;
    this.#soon.askAll(this.#lives.keys());
  }

  /** An operator's `resume` or `abort` of a module's rollout; resolves once the new state is stored. */
  request(op: RolloutOp, module: string): Promise<RolloutAnswer> {
    return answerOperator(this.#ctx, op, module);
  }

  /** The state of a module's rollout, when there is one. */
  stateOf(module: string): RolloutState | undefined {
    return this.#lives.get(module)?.state;
  }

  /** The modules whose rollout is not done, or done with nodes still failed, in order: the verb's `health` keys them `<module>`. */
  healthKeys(): string[] {
    return rolloutHealthKeys(this.#ctx);
  }

  /** The verb's `health` entry of a module's rollout not done, or done with failed nodes (`rolloutHealthEntry`). */
  healthEntry(module: string): RolloutHealth | undefined {
    return rolloutHealth(this.#ctx, module);
  }

  /** Resolves once no judgement is asked and every state asked is stored: all it was handed so far is handled (a deadline to come is not waited for). */
  async idle(): Promise<void> {
    while (this.#soon.asked || this.writer.writing) await Promise.all([this.#soon.idle(), this.writer.idle()]);
  }

  /** Stops every deadline; nothing is judged any more. */
  close(): void {
    this.#closed = true;
    for (const live of this.#lives.values()) stopTimers(live);
    this.writer.close();
  }
}
