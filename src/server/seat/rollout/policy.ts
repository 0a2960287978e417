// The seat's `--rollout WAVES[/HALT[/WAIT]]` (DESIGN §12): the rollout a composition without its own
// `rollout` gets, read with the same checks as a composition's.
import { fail, ok, type Parsed } from '../../../shared/base/result.ts';
import { DEFAULT_ROLLOUT_HALT, DEFAULT_ROLLOUT_WAIT_S, wavesProblem, type Rollout } from '../../../shared/contract/rollout-schema.ts';

/** Reads `0.01,0.1,1/1/600`: the waves, comma-separated, then optionally halt and wait; a reason names what is wrong. */
export function parseRolloutFlag(text: string): Parsed<Rollout> {
  const [wavesText = '', haltText, waitText, extra] = text.split('/');
  if (extra !== undefined) return fail(`"${text}" has more than WAVES/HALT/WAIT`);
  const waves = wavesText.split(',').map((w) => w.trim());
  if (waves.some((w) => !/^(\d+(\.\d*)?|\.\d+)$/.test(w))) return fail(`waves "${wavesText}" are not comma-separated fractions`);
  const numbers = waves.map(Number);
  const problem = wavesProblem(numbers);
  if (problem !== undefined) return fail(`waves ${problem}`);
  const halt = haltText === undefined || haltText === '' ? DEFAULT_ROLLOUT_HALT : Number(haltText);
  if (!/^\d*$/.test(haltText ?? '') || !Number.isSafeInteger(halt) || halt < 1) return fail(`halt "${haltText}" is not a whole number of at least 1`);
  const wait = waitText === undefined || waitText === '' ? DEFAULT_ROLLOUT_WAIT_S : Number(waitText);
  if (!/^(\d+(\.\d*)?|\.\d+)?$/.test(waitText ?? '') || !(wait > 0)) return fail(`wait "${waitText}" is not a number of seconds more than 0`);
  return ok({ waves: numbers, halt, wait });
}
