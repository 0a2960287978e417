// Deciding a module's rollout (DESIGN §12): its planned wave judged from the nodes' reports and clocks,
// and what the judgement asks taken: a halt planning the nodes back, the next wave, done, or a wait
// on, with the next deadline set. A halted rollout records its late failures; a done one, the failed
// nodes that applied since.
import { nodeModuleKey } from '../../../shared/contract/keys.ts';
import { MAX_FAILED_LISTED, type RolloutState } from '../../../shared/contract/rollout-state.ts';
import { nodesOf, type RolloutContext } from './context.ts';
import { keepFailedOnly, planOfLive, sayOnce, takeRecovered } from './failed-nodes.ts';
import { judgeWave } from './judge.ts';
import { plannedAhead, reachedNodes, restartClocks, type Live } from './live.ts';
import { lateFailures } from './progress.ts';
import { describeState, withFailed } from './steps.ts';
import { planWhenStored, takeStep } from './take-step.ts';

/** How often changed counts of a rollout are stored at most (a step is stored at once). */
export const COUNTS_WRITE_MS = 1000;

/** Judges the planned wave of `module` and takes what it decides. */
export function judgeModule(ctx: RolloutContext, module: string): void {
  const live = ctx.lives.get(module);
  if (live?.state.state === 'halted' && !ctx.closed()) return recordLateFailures(ctx, live);
  if (live?.state.state === 'done' && !ctx.closed()) return recordRecovered(ctx, live);
  const host = ctx.host();
  if (!live || ctx.closed() || !ctx.judging() || !host || !live.target || live.state.state !== 'rolling') return;
  // A wave not stored yet is not planned yet: judged once it is.
  if (live.storedWave !== live.state.wave) return;
  live.deadline?.cancel();
  live.deadline = undefined;
  const build = live.state.build;
  const judged = judgeWave(live, ctx.now(), ctx.reportsSeen(), {
    nodes: nodesOf(ctx, module),
    assigned: (node) => host.isAssigned(nodeModuleKey(node, module)),
    composeFailure: (node) => host.composeFailure(nodeModuleKey(node, module), build),
  });
  if (judged.kind === 'halt') {
    restartClocks(live);
    const back = plannedAhead(live, [...nodesOf(ctx, live.state.module)]);
    void takeStep(ctx, live, judged.state);
    return host.recompose(module, back);
  }
  const failedAnew = sayOnce(live, judged.failed);
  // The step's line names a node failed below `halt` anew: at warning, as a halt is.
  const level = failedAnew ? 'warn' : undefined;
  if (judged.kind === 'next' && judged.state.state === 'rolling') return void planWhenStored(ctx, live, judged.state, level);
  if (judged.kind === 'next') {
    ctx.settled.set(module, live.target);
    void takeStep(ctx, live, judged.state, level);
    return keepFailedOnly(live);
  }
  waitOn(ctx, live, judged, failedAnew);
}

/** Takes a wave that waits on: a node failed in it anew said, changed counts stored within a second, the next deadline set. */
function waitOn(
  ctx: RolloutContext,
  live: Live,
  judged: { state: RolloutState; countsMoved: boolean; deadline: number | undefined },
  failedAnew: boolean,
): void {
  const { module } = judged.state;
  live.state = judged.state;
  if (failedAnew) {
    const reason = describeState(judged.state, planOfLive(live));
    ctx.log.warn(reason);
    ctx.say({ module, build: judged.state.build, reason, passes: judged.state.wave });
  }
  // Counts change with every report: stored at most once a second, never said (a step is said once).
  if (judged.countsMoved)
    live.counts ??= ctx.timer(() => {
      live.counts = undefined;
      if (!ctx.closed()) void ctx.writer.write(live.state);
    }, COUNTS_WRITE_MS);
  if (judged.deadline !== undefined) live.deadline = ctx.timer(() => ctx.judgeSoon(module), Math.max(0, judged.deadline - ctx.now()) + 1);
}

/**
 * A halted rollout records the failed reports of its wave that came after the halt, while its list
 * has room (under it, every failed node is listed, so none is counted twice); nothing moves for
 * them, and they are not said (the halt was).
 */
function recordLateFailures(ctx: RolloutContext, live: Live): void {
  const { state } = live;
  if (state.failed.length >= MAX_FAILED_LISTED || !ctx.host()) return;
  const reached = reachedNodes(live, nodesOf(ctx, state.module));
  const late = lateFailures(reached, state.build, new Set(state.failed.map((f) => f.node)), (node) => live.reports.get(node));
  if (late.length === 0) return;
  live.state = withFailed(state, [...state.failed, ...late]);
  void ctx.writer.write(live.state);
}

/**
 * A done rollout's failed nodes that reported the new build applied since are failed no more: the
 * state is written again without them (counted applied), so `rollout` says what `status` does, and
 * said at notice, a failure that ended. A rollout left with none is done as any other.
 */
function recordRecovered(ctx: RolloutContext, live: Live): void {
  const reason = takeRecovered(live);
  if (reason === undefined) return;
  ctx.log.notice(reason);
  ctx.say({ module: live.state.module, build: live.state.build, reason, passes: live.state.wave });
  void ctx.writer.write(live.state);
}
