// The rollouts `status` shows on each node of their module (DESIGN §12): the verb's `health` entries
// keyed `<module>`, every rollout not done (rolling, halted, aborted), read page by page like the
// reports. A module whose rollout is not done is not applied: its newest build is not on its nodes,
// and `status` exits 1 for it (docs/decisions.md).
import { forEachPage } from '../query.ts';

/** A module's rollout as `status` shows it. */
export type RolloutMark = {
  /** The new build. */
  build: string;
  /** `rolling`, `halted` or `aborted`. */
  state: string;
  /** The wave planned now. */
  wave: number;
  /** The seat's line for it (what happened, and what to do). */
  reason: string;
};

/** The states of a rollout not done that `status` shows. */
const NOT_DONE = new Set(['rolling', 'halted', 'aborted']);

/** Reads the rollouts not done; none when the seat does not say them (an older seat, or no answer). */
export async function readRollouts(nc: Parameters<typeof forEachPage>[0]): Promise<Map<string, RolloutMark>> {
  const marks = new Map<string, RolloutMark>();
  await forEachPage(nc, { what: 'health' }, (page) => {
    for (const { key, value } of page.entries) {
      const v = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
      // A rollout's entry is keyed by its module alone and names no node.
      if (v['node'] !== undefined || v['module'] !== key || typeof v['state'] !== 'string' || !NOT_DONE.has(v['state'])) continue;
      marks.set(key, {
        build: String(v['build'] ?? ''),
        state: v['state'],
        wave: typeof v['wave'] === 'number' ? v['wave'] : 0,
        reason: typeof v['reason'] === 'string' ? v['reason'] : '',
      });
    }
  });
  return marks;
}

/** How a node's module under a rollout reads in a cell: `web (rolling b2, wave 1)`. */
export function rolloutCell(module: string, mark: RolloutMark): string {
  return `${module} (${mark.state} ${mark.build}, wave ${mark.wave})`;
}
