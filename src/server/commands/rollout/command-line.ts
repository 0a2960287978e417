// The command line of `rollout` (DESIGN §12) and the seat's `--rollout`: `rollout [MODULE] [--json]`,
// `rollout resume MODULE`, `rollout abort MODULE`, run with the admin login.
import { BUS_FLAGS, busOptionsFrom } from '../../../shared/cli/bus-flags.ts';
import { describeFlags, openCommand, unexpectedArgument, type Asked, type FlagTable } from '../../../shared/cli/flags.ts';
import { isName } from '../../../shared/contract/keys.ts';
import { didYouMean } from '../../../shared/base/nearest.ts';
import { fail, ok, type Parsed } from '../../../shared/base/result.ts';
import type { RolloutOptions } from '../../options.ts';

/** The seat's `--rollout`. */
export const ROLLOUT_FLAG = {
  name: 'rollout',
  env: 'MESH_ROLLOUT',
  type: 'string',
  arg: 'WAVES[/HALT[/WAIT]]',
  help: 'roll each new build out in waves, e.g. 0.01,0.1,1/1/600, unless its composition says its own rollout (default: every plan at once)',
} as const;

/** The flags `rollout` takes besides the bus's. */
export const ROLLOUT_OWN_FLAGS = [{ name: 'json', type: 'bool', help: 'print JSON instead of a table (rollout [MODULE] only)' }] as const satisfies FlagTable;

/** The usage line of `rollout` in the seat's --help. */
export const ROLLOUT_USAGE = '       node server.js rollout [MODULE] [--json] | rollout resume MODULE | rollout abort MODULE   (with the admin login)';

/** The text of `rollout --help`: the command alone, not the whole seat's. */
export function rolloutHelp(): string {
  return [
    'mesh-provisioner rollout — the progressive rollouts of builds (DESIGN §12), with the admin login.',
    '',
    'usage: node server.js rollout [MODULE] [--json]     every rollout (or one): state, build, from, wave, counts, failed nodes',
    '       node server.js rollout resume MODULE        lift a halt: the failed nodes get the build again with the next wave',
    '       node server.js rollout abort MODULE         plan every node on the new build back to the last good build',
    '',
    'resume and abort are asked of the seat (mesh-provisioner.rollout) and refused, exit 1, on a rollout that is done.',
    '',
    'flags:',
    describeFlags([...BUS_FLAGS, ...ROLLOUT_OWN_FLAGS]),
  ].join('\n');
}

/** Parses `rollout …` (argv after the word `rollout`); a reason names what is wrong. */
export function parseRolloutCommand(argv: readonly string[], env: NodeJS.ProcessEnv, help: () => string): Parsed<RolloutOptions | Asked> {
  const opened = openCommand(argv, env, [...BUS_FLAGS, ...ROLLOUT_OWN_FLAGS], help);
  if ('answered' in opened) return opened.answered;
  const { values, positional } = opened;
  const bus = busOptionsFrom(values, 'mesh-provisioner rollout');
  if (!bus.ok) return bus;
  const [first, second, extra] = positional;
  const op = first === 'resume' || first === 'abort' ? first : 'show';
  const module = op === 'show' ? first : second;
  const beyond = op === 'show' ? second : extra;
  // `rollout resum web`: a word in the action's place with a module after it was meant as the action.
  if (op === 'show' && beyond !== undefined) return fail(`rollout: "${first}" is neither resume nor abort${actionHint(first!)}`);
  if (beyond !== undefined) return unexpectedArgument(beyond);
  if (op !== 'show' && module === undefined) return fail(`rollout ${op} needs a MODULE`);
  if (module !== undefined && !isName(module)) return fail(`rollout: module "${module}" is not a valid name`);
  if (op !== 'show' && values.json) return fail(`--json goes with rollout [MODULE] only, not rollout ${op}`);
  return ok({ command: 'rollout', bus: bus.value, op, json: values.json === true, ...(module === undefined ? {} : { module }) });
}

/** `; did you mean "resume"?` for a misspelt action, or nothing. */
function actionHint(word: string): string {
  const hint = didYouMean(word, ['resume', 'abort']);
  return hint === undefined ? '' : `; ${hint}`;
}
