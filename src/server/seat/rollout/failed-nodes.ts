// A rollout's failed nodes beyond its judgement (DESIGN §12): which of them still keep the new build
// failed (the verb's `health` lists them, so `status` shows them failed), what a done rollout keeps
// in memory to follow them, and which are newly failed and to be said once.
import { nodeModuleKey } from '../../../shared/keys.ts';
import { describeState } from './steps.ts';
import type { Live } from './live.ts';
import type { FailedNode } from './progress.ts';
import type { RolloutHealth } from './state.ts';

/** What telling a failed node from a put-right one reads of the seat. */
export type FailureHost = {
  /** Whether `key` has a good assignment. */
  isAssigned(key: string): boolean;
  /** Why the seat cannot compose `key`'s plan of `build`, when it cannot. */
  composeFailure(key: string, build: string): string | undefined;
};

/**
 * The failed nodes a rollout lists that keep the new build failed: still assigned, not reported the
 * new build applied since, and composed (one the seat cannot compose has its own health entry).
 */
export function stillFailed(live: Live, host: FailureHost): FailedNode[] {
  const { state } = live;
  return state.failed.filter((f) => {
    const key = nodeModuleKey(f.node, state.module);
    if (!host.isAssigned(key) || host.composeFailure(key, state.build) !== undefined) return false;
    const report = live.reports.get(f.node);
    const fixed = report?.build === state.build && report.state === 'applied' && report.revision > (live.clocks.get(f.node)?.after ?? 0);
    return !fixed;
  });
}

/**
 * The verb's `health` entry of a rollout that is not done, or done with failed nodes not applied
 * since; `failed` lists the nodes that keep the new build failed (rolling or done), so `status`
 * shows them failed. Undefined for a rollout done with none.
 */
export function rolloutHealthEntry(live: Live, host: FailureHost): RolloutHealth | undefined {
  const { state } = live;
  const failed = state.state === 'rolling' || state.state === 'done' ? stillFailed(live, host) : [];
  if (state.state === 'done' && failed.length === 0) return undefined;
  const entry = { module: state.module, build: state.build, state: state.state, wave: state.wave, reason: describeState(state), since: state.since };
  return failed.length > 0 ? { ...entry, failed } : entry;
}

/** A done rollout keeps, of its nodes' reports and clocks, only its failed nodes': its health entry follows them. */
export function keepFailedOnly(live: Live): void {
  const failed = failedListed(live);
  for (const node of live.reports.keys()) if (!failed.has(node)) live.reports.delete(node);
  for (const node of live.clocks.keys()) if (!failed.has(node)) live.clocks.delete(node);
  live.hashes.clear();
  live.reached = undefined;
  // Its other nodes' reports are no longer followed: a rollout superseding it cannot say they sent none.
  live.everyReportSeen = false;
}

/** The nodes a rollout's state lists failed, as a set (made again only when the list changes). */
export function failedListed(live: Live): ReadonlySet<string> {
  if (live.failedSet?.list !== live.state.failed) live.failedSet = { list: live.state.failed, nodes: new Set(live.state.failed.map((f) => f.node)) };
  return live.failedSet.nodes;
}

/**
 * Whether a node failed below `halt` that was not said yet: a budget spent (DESIGN §12), the rollout
 * goes on and the node keeps the new build; each is said once, at warning, with the rollout's line.
 */
export function sayOnce(live: Live, failed: readonly FailedNode[]): boolean {
  const fresh = failed.filter((f) => !live.saidFailed.has(f.node));
  for (const f of fresh) live.saidFailed.add(f.node);
  return fresh.length > 0;
}
