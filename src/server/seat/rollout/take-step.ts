// A rollout's step taken (DESIGN §12): stored, said and logged; a rolling state's wave planned only
// once it is stored, so a seat killed in between never finds a node planned past the wave it reads.
import type { Level } from '../../../shared/cli/log.ts';
import type { RolloutState } from '../../../shared/contract/rollout-state.ts';
import { nodesOf, type RolloutContext } from './context.ts';
import { planOfLive } from './failed-nodes.ts';
import { reachedNodes, stopTimers, type Live } from './live.ts';
import { describeState, levelOf } from './steps.ts';

/** Takes a new state: stored, said, and logged at the level an operator watches it by. */
export function takeStep(ctx: RolloutContext, live: Live, state: RolloutState, level: Level = levelOf(state)): Promise<void> {
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
  ctx.log[level](reason);
  ctx.say({ module: state.module, build: state.build, reason, passes: state.wave });
  return ctx.writer.write(state);
}

/** Takes a rolling state whose wave moved: its nodes are planned once it is stored, then the wave is judged. */
export function planWhenStored(ctx: RolloutContext, live: Live, state: RolloutState, level?: Level): Promise<void> {
  live.storedWave = 0;
  return takeStep(ctx, live, state, level).then(() => {
    if (ctx.closed() || ctx.lives.get(state.module) !== live || live.state.state !== 'rolling' || live.state.wave !== state.wave) return;
    live.storedWave = state.wave;
    // Only the nodes the waves reach now change plan: at 50,000 nodes a pass over every key took seconds.
    ctx.host()?.recompose(state.module, reachedNodes(live, nodesOf(ctx, state.module)));
    ctx.judgeSoon(state.module);
  });
}
