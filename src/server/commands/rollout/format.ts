// How `rollout` prints the stored states (DESIGN §12): per module its state, build, from, wave and
// counts, then each failed node with its reason; every field through safe text (DESIGN §3).
import { safeCell } from '../../../shared/cli/safe-text.ts';
import type { RolloutState } from '../../../shared/contract/rollout-state.ts';

/** A state as `--json` prints it: everything but the last good build's composition and its digest, which are the seat's. */
export function publicState(state: RolloutState): Omit<RolloutState, 'previous' | 'digest'> {
  const { previous: _p, digest: _d, ...shown } = state;
  return shown;
}

/** The lines of one rollout. */
export function formatRollout(state: RolloutState): string[] {
  const { total, planned, applied, failed } = state.nodes;
  const head = [
    safeCell(state.module),
    safeCell(state.state),
    `build ${safeCell(state.build)} from ${safeCell(state.from)}`,
    `wave ${state.wave}/${state.waves.length} (${state.waves.join(', ')})`,
    `nodes: ${planned} planned of ${total}, ${applied} applied, ${failed} failed`,
    `since ${safeCell(state.since)}`,
  ].join('  ');
  const failedLines = state.failed.map((f) => `  failed ${safeCell(f.node)}: ${safeCell(f.reason)}`);
  // The state lists the first 100 failed nodes (DESIGN §12); the count is of every one.
  if (failed > state.failed.length)
    failedLines.push(`  … and ${failed - state.failed.length} more failed, not listed (the state lists the first ${state.failed.length})`);
  // A rollout whose last good composition the seat never saw (published while it was down) plans no node back.
  if (state.previous || (state.state !== 'halted' && state.state !== 'aborted')) return [head, ...failedLines];
  const back = `  not planned back: the seat never saw ${safeCell(state.from)}'s composition; its nodes on ${safeCell(state.build)} keep it until ${safeCell(state.from)} is published again`;
  return [head, ...failedLines, back];
}
