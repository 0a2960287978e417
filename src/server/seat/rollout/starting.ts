// Starting a module's rollout (DESIGN §12): the states stored taken up at start; a new composition starts one from the last good build,
// supersedes the one under way, or settles the module's nodes on it at once (no policy, no node on
// an older plan, or the content they are on already).
import { compareKeys, parseNodeModuleKey } from '../../../shared/contract/keys.ts';
import type { Composition } from '../../../shared/contract/composition.ts';
import type { Rollout } from '../../../shared/contract/rollout-schema.ts';
import { contentOf, type RolloutState } from '../../../shared/contract/rollout-state.ts';
import { digestOf } from '../../../shared/contract/digest.ts';
import { waveOrder } from '../../../shared/contract/waves.ts';
import type { RolloutContext } from './context.ts';
import { carryOver, newLive, type Live } from './live.ts';
import { markOfComposition } from './marks.ts';
import { describeState, startRollout, supersedeRollout } from './steps.ts';
import { planWhenStored, takeStep } from './take-step.ts';

/** Takes up the states read from the bucket at start, before any pass: a restarted seat goes on with each where it was. */
export function takeUp(ctx: RolloutContext, states: ReadonlyMap<string, RolloutState>): void {
  for (const state of states.values()) {
    const live = newLive(state, undefined, state.wave);
    // The reports are read after: every one of the module's is seen, while the rollout follows them.
    live.everyReportSeen = state.state === 'rolling' || state.state === 'halted' || state.state === 'aborted';
    ctx.lives.set(state.module, live);
    // A restarted seat says what it goes on with: a rollout under way is no surprise in its log, and a halt still waits on an operator.
    if (state.state === 'rolling') ctx.log.notice(`taken up where it was: ${describeState(state)}`);
    if (state.state === 'halted') ctx.log.warn(`taken up where it was: ${describeState(state)}`);
  }
}

/**
 * Takes `next`, a new composition of `module` (its content's digest `digest`) that `live` (the
 * module's rollout, if any) is not on: `unseen` are the nodes' stored plans' marks when the seat saw
 * no composition of the module yet, `policy` the seat's `--rollout`.
 */
export function startFor(
  ctx: RolloutContext,
  module: string,
  next: Composition,
  digest: string,
  live: Live | undefined,
  unseen: ReadonlyMap<string, string> | undefined,
  policy: Rollout | undefined,
): void {
  const rollout = next.rollout ?? policy;
  // The last good composition when the seat saw it; else the nodes' stored plans tell which are older.
  const from = ctx.settled.get(module) ?? live?.state.previous;
  const marks = live?.marks ?? unseen ?? new Map<string, string>();
  const members = !rollout ? [] : from ? membersOf(ctx, module) : membersOf(ctx, module, marks, markOfComposition(next));
  const fromBuild = from?.build ?? (live ? live.state.from : mostHeld(members, marks));
  if (live && live.state.state !== 'done' && live.state.state !== 'superseded') void takeStep(ctx, live, supersedeRollout(live.state, ctx.now()));
  if (!rollout || members.length === 0 || (from && digestOf(contentOf(from)) === digest)) {
    ctx.settled.set(module, next);
    return;
  }
  const state = startRollout({
    target: next,
    digest,
    from: from ?? fromBuild,
    policy: rollout,
    members: waveOrder(module, next.build, members),
    now: ctx.now(),
  });
  const started = newLive(state, next, 0);
  // What the superseded rollout learnt of the nodes' plans and reports still holds.
  if (live) carryOver(live, started);
  else for (const [node, mark] of marks) started.marks.set(node, mark);
  ctx.settled.delete(module);
  ctx.lives.set(module, started);
  void planWhenStored(ctx, started, state);
}

/**
 * The nodes of `module` on an older plan: every assigned node with a stored plan; with `marks`,
 * only those whose plan was read and holds another build than `newMark` (the seat saw no
 * composition they are on: their plans are the only witness).
 */
function membersOf(ctx: RolloutContext, module: string, marks?: ReadonlyMap<string, string>, newMark?: string): string[] {
  const nodes: string[] = [];
  const host = ctx.host();
  for (const key of host?.keysOf(module) ?? []) {
    const id = parseNodeModuleKey(key);
    if (!id.ok || !host?.hasStoredPlan(key)) continue;
    const mark = marks?.get(id.value.node);
    if (marks && (mark === undefined || mark === newMark)) continue;
    nodes.push(id.value.node);
  }
  return nodes;
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
