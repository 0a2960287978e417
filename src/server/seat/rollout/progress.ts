// How far the planned wave of a rollout has come (DESIGN §12): which of its nodes reported the new
// build applied, which failed (a `failed` report, a plan of the new build the seat cannot compose,
// or no applied report within `wait` of the plan), and when the next node runs out of time. Pure:
// the clock, reports, assignments and the seat's compose failures are handed in.
import type { Report } from '../../../shared/contract/report.ts';

/** A planned node's clock: when its new plan was asked, the report revision seen by then, and whether it applied the build since. */
export type NodeClock = {
  /** When the node was planned the new build, in ms. */
  since: number;
  /** The highest revision of `mesh-provisioner_applied` seen when it was planned: a report must be newer to count. */
  after: number;
  /** Whether it has reported the new build applied since (a later `waiting` does not undo it). */
  applied: boolean;
};

/** A node's latest report as the seat keeps it: its state, build and reason, the first values it waits for, and its revision in the bucket. */
export type SeenReport = Pick<Report, 'state' | 'build' | 'reason'> & { revision: number; waited?: string[] };

/** One failed node and why. */
export type FailedNode = { node: string; reason: string };

/** Where the wave stands. */
export type Progress = {
  /** The wave's nodes still assigned: planned the new build. */
  planned: number;
  /** Of those, the ones that reported it applied. */
  applied: number;
  /** Of those, the ones failed, in wave order (with the earlier waves' nodes still failed: `halt` counts over the rollout). */
  failed: FailedNode[];
  /** When the first node still waited for runs out of time, in ms; undefined when none is waited for. */
  deadline: number | undefined;
};

/** What measuring a wave reads. */
export type WaveInput = {
  /** The new build. */
  build: string;
  /** Seconds a node has to report it applied. */
  waitS: number;
  /** The nodes the waves so far reach, in wave order. */
  reached: readonly string[];
  /** Whether a node is still assigned the module (an unassigned one has left the rollout). */
  assigned(node: string): boolean;
  /** A reached node's clock. */
  clockOf(node: string): NodeClock;
  /** Why the seat cannot compose a node's plan of the new build, when it cannot: the node fails at once, not after `wait`. */
  composeFailure(node: string): string | undefined;
  /** A node's latest report, when one was seen. */
  reportOf(node: string): SeenReport | undefined;
  /**
   * Whether every report of the module was seen (a rollout read back at the seat's start, the
   * reports read after it): then a node with none sent none. A rollout started while the seat ran
   * saw only the reports written since.
   */
  everyReportSeen: boolean;
  /** Now, in ms. */
  now: number;
};

/** The reason of a node that did not report the build applied in time (DESIGN §12's words first). */
export function timeoutReason(build: string, waitS: number): string {
  return `no applied report of ${build} within ${waitS} s`;
}

/** The reason of a node whose plan of the new build the seat cannot compose (DESIGN §12's words first). */
export function cannotComposeReason(build: string, why: string): string {
  return `cannot compose ${build}: ${why}`;
}

/** Whether a failed node's reason is the seat's own `cannotComposeReason` of `build`: the node was never planned it. */
export function isComposeFailure(reason: string, build: string): boolean {
  return reason.startsWith(cannotComposeReason(build, ''));
}

/** How much of a report's own reason a timeout's reason carries. */
const REPORT_REASON_CHARS = 200;

/**
 * What a timed-out node's latest report of the build said, for its reason: the values it waits
 * for or its own reason (`its report: waiting for config:color`), so a halt names the node's own
 * cause; or, with none of the build, what its last report was.
 */
export function lastWord(report: SeenReport | undefined, build: string, everyReportSeen = true): string {
  // None of the build: its last report says whether the node is silent or still on the old one.
  if (report === undefined) return everyReportSeen ? ` (no report of ${build}, nor any other)` : ` (no report since the rollout began)`;
  if (report.build !== build) return ` (no report of ${build}; its last: ${report.state} on ${report.build})`;
  const waited = report.waited && report.waited.length > 0 ? ` for ${report.waited.join(', ')}` : '';
  const why =
    report.reason === undefined ? '' : `: ${report.reason.length > REPORT_REASON_CHARS ? `${report.reason.slice(0, REPORT_REASON_CHARS)}…` : report.reason}`;
  return ` (its report: ${report.state}${waited}${why})`;
}

/** Measures the wave: marks each clock applied once its node reports the build applied after being planned. */
export function measureWave(input: WaveInput): Progress {
  const progress: Progress = { planned: 0, applied: 0, failed: [], deadline: undefined };
  const waitMs = input.waitS * 1000;
  for (const node of input.reached) {
    if (!input.assigned(node)) continue;
    progress.planned++;
    const uncomposed = input.composeFailure(node);
    if (uncomposed !== undefined) {
      progress.failed.push({ node, reason: cannotComposeReason(input.build, uncomposed) });
      continue;
    }
    const clock = input.clockOf(node);
    const report = input.reportOf(node);
    const fresh = report !== undefined && report.build === input.build && report.revision > clock.after;
    // The latest report decides a failure; an applied build stays applied through a later `waiting`.
    if (fresh && report.state === 'failed') {
      progress.failed.push({ node, reason: `failed: ${report.reason ?? 'no reason given'}` });
      continue;
    }
    if (fresh && report.state === 'applied') clock.applied = true;
    if (clock.applied) {
      progress.applied++;
      continue;
    }
    const end = clock.since + waitMs;
    if (input.now >= end)
      progress.failed.push({ node, reason: timeoutReason(input.build, input.waitS) + lastWord(report, input.build, input.everyReportSeen) });
    else progress.deadline = Math.min(progress.deadline ?? end, end);
  }
  return progress;
}

/**
 * The failed reports of the new build from the nodes a halted rollout had reached, not yet among its
 * failed nodes: reports that came after the halt, so `rollout` names every node the build failed on.
 */
export function lateFailures(
  reached: readonly string[],
  build: string,
  known: ReadonlySet<string>,
  reportOf: (node: string) => SeenReport | undefined,
): FailedNode[] {
  const late: FailedNode[] = [];
  for (const node of reached) {
    const report = reportOf(node);
    if (known.has(node) || report?.build !== build || report.state !== 'failed') continue;
    late.push({ node, reason: `failed: ${report.reason ?? 'no reason given'}` });
  }
  return late;
}
