// A rollout's failed nodes beyond its judgement (DESIGN §12): which of them it still counts failed
// (the verb's `health` lists them, so `status` shows them failed), which a done rollout no longer
// does (they applied the new build since), what it keeps in memory to follow them, and which are
// newly failed and to be said once.
import { nodeModuleKey } from '../../../shared/contract/keys.ts';
import { describeState, FAILED_NODES_SAID, withRecovered, type PlanOf } from './steps.ts';
import type { Live } from './live.ts';
import { isComposeFailure, type FailedNode } from './progress.ts';
import type { RolloutHealth } from '../../../shared/contract/rollout-state.ts';

/** What telling a failed node from a put-right one reads of the seat. */
export type FailureHost = {
  /** Whether `key` has a good assignment. */
  isAssigned(key: string): boolean;
  /** Why the seat cannot compose `key`'s plan of `build`, when it cannot. */
  composeFailure(key: string, build: string): string | undefined;
};

/** Whether a listed failed node has reported the new build applied since it was planned it (or since the seat's start). */
export function appliedSince(live: Live, node: string): boolean {
  const report = live.reports.get(node);
  return report?.build === live.state.build && report.state === 'applied' && report.revision > (live.clocks.get(node)?.after ?? 0);
}

/**
 * The failed nodes a rollout lists that it still counts failed: still assigned and not reported the
 * new build applied since. A node the seat could not compose the new build for is one (its plan
 * stayed on an older build, which the rollout's line says); once it composes, its reason says so.
 */
export function stillFailed(live: Live, host: FailureHost): FailedNode[] {
  const { state } = live;
  return state.failed.flatMap((f) => {
    const key = nodeModuleKey(f.node, state.module);
    if (!host.isAssigned(key) || appliedSince(live, f.node)) return [];
    const composedSince = isComposeFailure(f.reason, state.build) && host.composeFailure(key, state.build) === undefined;
    return [composedSince ? { node: f.node, reason: `${f.reason}; composed since, planned ${state.build}, no applied report of it yet` } : f];
  });
}

/** The build of each node's stored plan as the rollout last saw it, for its line (`describeState`). */
export function planOfLive(live: Live): PlanOf {
  return (node) => {
    const mark = live.marks.get(node);
    const cut = mark === undefined ? -1 : mark.lastIndexOf('\n');
    return cut < 0 ? undefined : mark!.slice(0, cut);
  };
}

/**
 * The verb's `health` entry of a rollout that is not done, or done with failed nodes not applied
 * since; `failed` lists the nodes it counts failed (rolling or done: `status` shows them failed), or
 * those a halted or aborted rollout failed on (`status NODE` says so). Undefined for a rollout done
 * with none.
 */
export function rolloutHealthEntry(live: Live, host: FailureHost): RolloutHealth | undefined {
  const { state } = live;
  const counted = state.state === 'rolling' || state.state === 'done';
  const failed = counted ? stillFailed(live, host) : state.state === 'superseded' ? [] : state.failed;
  if (state.state === 'done' && failed.length === 0) return undefined;
  const reason = describeState(state, planOfLive(live));
  const entry = { module: state.module, build: state.build, state: state.state, wave: state.wave, reason, since: state.since };
  return failed.length > 0 ? { ...entry, failed } : entry;
}

/**
 * Takes a done rollout's listed failed nodes that reported the new build applied since out of its
 * state (`withRecovered`) and its memory; returns the line that says so, or undefined when none did.
 */
export function takeRecovered(live: Live): string | undefined {
  if (live.state.state !== 'done') return undefined;
  const recovered = new Set(live.state.failed.filter((f) => appliedSince(live, f.node)).map((f) => f.node));
  if (recovered.size === 0) return undefined;
  live.state = withRecovered(live.state, recovered);
  for (const node of recovered) {
    live.reports.delete(node);
    live.clocks.delete(node);
  }
  const named = [...recovered].slice(0, FAILED_NODES_SAID).join(', ');
  const more = recovered.size > FAILED_NODES_SAID ? ` and ${recovered.size - FAILED_NODES_SAID} more` : '';
  return `${named}${more} reported ${live.state.build} applied, failed no more: ${describeState(live.state, planOfLive(live))}`;
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
