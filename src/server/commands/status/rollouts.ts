// The rollouts `status` shows on each node of their module (DESIGN §12): the verb's `health` entries
// keyed `<module>`, every rollout not done (rolling, halted, aborted) and every one done with nodes
// still failed, read page by page like the reports. A module whose rollout is not done is not
// applied: its newest build is not on its nodes, and `status` exits 1 for it (DESIGN §13). A node a
// rolling or done rollout lists failed is counted failed until it reports the new build applied
// (it keeps that build, or its older plan when the seat cannot compose the new one); a node a halted
// or aborted rollout failed on is said in its detail, not counted (it is planned back).
import { forEachPage } from '../query/command.ts';

/** A failed node a rollout lists, with the seat's reason. */
export type RolloutFailure = { node: string; reason: string };

/** A module's rollout as `status` shows it. */
export type RolloutMark = {
  /** The new build. */
  build: string;
  /** `rolling`, `halted`, `aborted`, or `done` (with failed nodes). */
  state: string;
  /** The wave planned now. */
  wave: number;
  /** The seat's line for it (what happened, and what to do). */
  reason: string;
  /**
   * Rolling or done: the nodes it counts failed (not applied the new build since); halted or
   * aborted: the nodes it failed on, planned back with the rest.
   */
  failed: RolloutFailure[];
};

/** The states of a rollout `status` shows: not done, or done with failed nodes. */
const SHOWN = new Set(['rolling', 'halted', 'aborted', 'done']);

/** Reads the rollouts not done, or done with failed nodes; none when the seat does not say them (an older seat, or no answer). */
export async function readRollouts(nc: Parameters<typeof forEachPage>[0]): Promise<Map<string, RolloutMark>> {
  const marks = new Map<string, RolloutMark>();
  await forEachPage(nc, { what: 'health' }, (page) => {
    for (const { key, value } of page.entries) {
      const v = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
      // A rollout's entry is keyed by its module alone and names no node.
      if (v['node'] !== undefined || v['module'] !== key || typeof v['state'] !== 'string' || !SHOWN.has(v['state'])) continue;
      const failed = failuresOf(v['failed']);
      if (v['state'] === 'done' && failed.length === 0) continue;
      marks.set(key, {
        build: String(v['build'] ?? ''),
        state: v['state'],
        wave: typeof v['wave'] === 'number' ? v['wave'] : 0,
        reason: typeof v['reason'] === 'string' ? v['reason'] : '',
        failed,
      });
    }
  });
  return marks;
}

/** The failed nodes of an entry, those in shape (a node and a reason, both text). */
function failuresOf(value: unknown): RolloutFailure[] {
  if (!Array.isArray(value)) return [];
  return value.flatMap((f: unknown) => {
    const { node, reason } = (typeof f === 'object' && f !== null ? f : {}) as Record<string, unknown>;
    return typeof node === 'string' && typeof reason === 'string' ? [{ node, reason }] : [];
  });
}

/** Whether a rollout is not done: its module is not applied on its newest build, whatever its nodes report. */
export function isNotDone(mark: RolloutMark): boolean {
  return mark.state !== 'done';
}

/** Whether a rollout's failed nodes count failed (rolling or done: they are left on its build), not only said (halted, aborted). */
export function countsFailed(mark: RolloutMark): boolean {
  return mark.state === 'rolling' || mark.state === 'done';
}

/**
 * Why a node counts failed in its module's rollout: listed failed by a rolling or done rollout, and
 * its report (if any) not the new build applied; undefined when it does not.
 */
export function failedIn(mark: RolloutMark, node: string, report?: { state?: string; build?: string }): string | undefined {
  if (!countsFailed(mark) || (report?.state === 'applied' && report.build === mark.build)) return undefined;
  return failedNodeIn(mark, node);
}

/** The seat's reason when its rollout lists `node` failed, whatever the rollout's state. */
export function failedNodeIn(mark: RolloutMark, node: string): string | undefined {
  return mark.failed.find((f) => f.node === node)?.reason;
}

/** How a node's module under a rollout reads in a cell: `web (rolling b2, wave 1)`, `web (done b2, wave 2, failed)`. */
export function rolloutCell(module: string, mark: RolloutMark, failed = false): string {
  return `${module} (${mark.state} ${mark.build}, wave ${mark.wave}${failed ? ', failed' : ''})`;
}
