// A composition's `rollout` (DESIGN §12): the waves a new build reaches the module's nodes in, how
// many failed nodes halt it, and how long a node has to report the new build applied.
import * as v from 'valibot';
import { strictFields } from './strict-fields.ts';

/** How many distinct failed nodes halt a rollout when `halt` is not said. */
export const DEFAULT_ROLLOUT_HALT = 1;
/** Seconds a node has to report the new build `applied` when `wait` is not said. */
export const DEFAULT_ROLLOUT_WAIT_S = 600;

/**
 * Why a list of waves is not one: each a fraction in (0, 1], strictly increasing (they are
 * cumulative), the last 1 (every node gets the build in the end); nothing when it is.
 */
export function wavesProblem(waves: readonly number[]): string | undefined {
  if (waves.length === 0) return 'is empty: the last wave must be 1';
  for (const [i, wave] of waves.entries()) {
    if (!(wave > 0 && wave <= 1)) return `holds ${wave} (wave ${i + 1}), not a fraction in (0, 1]`;
    const before = waves[i - 1];
    if (before !== undefined && wave <= before) return `holds ${wave} (wave ${i + 1}) after ${before}: the waves must strictly increase`;
  }
  const last = waves[waves.length - 1]!;
  return last === 1 ? undefined : `ends with ${last}, not 1: the last wave must reach every node`;
}

/** A composition's `rollout`: `{waves, halt?, wait?}`, halt and wait given their defaults. */
export const RolloutSchema = strictFields({
  waves: v.pipe(
    v.array(v.number('is not a number'), 'is not a list of fractions'),
    v.check(
      (waves) => wavesProblem(waves) === undefined,
      (issue) => wavesProblem(issue.input) ?? 'is refused',
    ),
  ),
  halt: v.optional(v.pipe(v.number('is not a number'), v.integer('is not a whole number'), v.minValue(1, 'must be at least 1')), DEFAULT_ROLLOUT_HALT),
  wait: v.optional(v.pipe(v.number('is not a number'), v.gtValue(0, 'must be more than 0 seconds')), DEFAULT_ROLLOUT_WAIT_S),
});
/** A composition's `rollout`. */
export type Rollout = v.InferOutput<typeof RolloutSchema>;
