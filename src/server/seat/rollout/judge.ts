// The judgement of a rolling module's planned wave (DESIGN §12), pure: halt at `halt` failed nodes;
// below it the failures are a budget, so the next wave (or done) once each of the wave's nodes
// applied the new build or counts as failed; else wait on with new counts.
import { clockOf, reachedNodes, type Live } from './live.ts';
import { measureWave, type FailedNode } from './progress.ts';
import type { RolloutState } from '../../../shared/contract/rollout-state.ts';
import { haltRollout, nextWave, withFailed } from './steps.ts';

/** What the wave's reports and clocks decide: the state to take, and when to judge again while waiting. */
export type Judgement =
  | { kind: 'halt'; state: RolloutState }
  | { kind: 'next'; state: RolloutState; failed: FailedNode[] }
  | { kind: 'wait'; state: RolloutState; countsMoved: boolean; deadline: number | undefined; failed: FailedNode[] };

/** What judging a wave reads of the seat beyond the rollout's memory. */
export type WaveWorld = {
  /** The module's assigned nodes. */
  nodes: Iterable<string>;
  /** Whether a node is still assigned the module. */
  assigned(node: string): boolean;
  /** Why the seat cannot compose a node's plan of the new build, when it cannot. */
  composeFailure(node: string): string | undefined;
};

/** Judges `live`'s wave (rolling, its wave stored, its target known); `reportsSeen` starts new clocks. */
export function judgeWave(live: Live, now: number, reportsSeen: number, world: WaveWorld): Judgement {
  const { state, target } = live;
  const progress = measureWave({
    build: state.build,
    waitS: state.wait,
    reached: reachedNodes(live, world.nodes),
    assigned: world.assigned,
    clockOf: (node) => clockOf(live, node, now, reportsSeen),
    composeFailure: (node) => {
      const why = world.composeFailure(node);
      // Its plan was never written: once it composes, its `wait` counts from that write.
      if (why !== undefined) live.clocks.delete(node);
      return why;
    },
    reportOf: (node) => live.reports.get(node),
    everyReportSeen: live.everyReportSeen,
    now,
  });
  const { failed } = progress;
  if (failed.length >= state.halt) return { kind: 'halt', state: haltRollout(state, failed, now) };
  const counted = withFailed({ ...state, nodes: { ...state.nodes, applied: progress.applied } }, failed);
  if (progress.applied + failed.length === progress.planned) return { kind: 'next', state: nextWave(counted, target!, now), failed };
  const countsMoved = counted.nodes.applied !== state.nodes.applied || counted.nodes.failed !== state.nodes.failed || !sameNodes(counted.failed, state.failed);
  return { kind: 'wait', state: countsMoved ? counted : state, countsMoved, deadline: progress.deadline, failed };
}

/** Whether two lists of failed nodes name the same nodes, in order. */
function sameNodes(a: readonly FailedNode[], b: readonly FailedNode[]): boolean {
  return a.length === b.length && a.every((f, i) => f.node === b[i]!.node && f.reason === b[i]!.reason);
}
