// The judgement of a rolling module's planned wave (DESIGN §12), pure: halt at `halt` failed nodes,
// the next wave (or done) when each of its nodes applied the new build, else wait on with new counts.
import { clockOf, reachedNodes, type Live } from './live.ts';
import { measureWave } from './progress.ts';
import type { RolloutState } from './state.ts';
import { haltRollout, nextWave } from './steps.ts';

/** What the wave's reports and clocks decide: the state to take, and when to judge again while waiting. */
export type Judgement =
  | { kind: 'halt'; state: RolloutState }
  | { kind: 'next'; state: RolloutState }
  | { kind: 'wait'; state: RolloutState; countsMoved: boolean; deadline: number | undefined };

/** Judges `live`'s wave (rolling, its wave stored, its target known); `reportsSeen` starts new clocks. */
export function judgeWave(live: Live, now: number, reportsSeen: number, assigned: (node: string) => boolean): Judgement {
  const { state, target } = live;
  const progress = measureWave({
    build: state.build,
    waitS: state.wait,
    reached: reachedNodes(live),
    assigned,
    clockOf: (node) => clockOf(live, node, now, reportsSeen),
    reportOf: (node) => live.reports.get(node),
    now,
  });
  if (progress.failed.length >= state.halt) return { kind: 'halt', state: haltRollout(state, progress.failed, now) };
  if (progress.applied === progress.planned)
    return { kind: 'next', state: nextWave({ ...state, nodes: { ...state.nodes, applied: progress.applied } }, target!, now) };
  const nodes = { ...state.nodes, applied: progress.applied, failed: progress.failed.length };
  const countsMoved = nodes.applied !== state.nodes.applied || nodes.failed !== state.nodes.failed;
  return { kind: 'wait', state: countsMoved ? { ...state, nodes, failed: progress.failed } : state, countsMoved, deadline: progress.deadline };
}
