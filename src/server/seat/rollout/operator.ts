// An operator's `rollout resume|abort MODULE` taken by the director (DESIGN §12): refused with why, or
// the new state stored; an abort plans every node on the new build back to the last good one.
import type { RolloutContext } from './context.ts';
import { nodesOf } from './context.ts';
import { plannedAhead, restartClocks } from './live.ts';
import { abortRollout, refusal, resumeRollout } from './steps.ts';
import { planWhenStored, takeStep } from './take-step.ts';

/** An operator's request answered: taken, or refused with why. */
export type RolloutAnswer = { ok: true } | { ok: false; reason: string };

/** What an operator asks of a module's rollout. */
export type RolloutOp = 'resume' | 'abort';

/** Takes an operator's `resume` or `abort` of a module's rollout; resolves once the new state is stored. */
export async function answerOperator(ctx: RolloutContext, op: RolloutOp, module: string): Promise<RolloutAnswer> {
  const live = ctx.lives.get(module);
  if (!live) return { ok: false, reason: `there is no rollout of ${module}` };
  const why = refusal(live.state, op);
  if (why !== undefined) return { ok: false, reason: why };
  restartClocks(live);
  if (op === 'resume') await planWhenStored(ctx, live, resumeRollout(live.state, ctx.now()));
  else {
    const back = plannedAhead(live, [...nodesOf(ctx, live.state.module)]);
    const stored = takeStep(ctx, live, abortRollout(live.state, ctx.now()));
    ctx.host()?.recompose(module, back);
    await stored;
  }
  return { ok: true };
}
