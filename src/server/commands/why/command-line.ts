// The command line of `why NODE MODULE [PATH] [--json]` (DESIGN §14): its flags, its --help and its
// parser, each name checked against its grammar before the bus is reached.
import { isAbsolute } from 'node:path';
import { BUS_FLAGS, busOptionsFrom } from '../../../shared/cli/bus-flags.ts';
import { openCommand, unexpectedArgument, type Asked, type FlagTable } from '../../../shared/cli/flags.ts';
import { isName } from '../../../shared/contract/keys.ts';
import { fail, ok, type Parsed } from '../../../shared/base/result.ts';
import type { WhyOptions } from '../../options.ts';
import { commandHelpText, type CommandHelp } from '../command-help.ts';

/** The flags `why` takes besides the bus's. */
const WHY_OWN_FLAGS = [{ name: 'json', type: 'bool', help: 'print JSON instead of a table' }] as const satisfies FlagTable;

/** What `why --help` says, and the seat's --help of it. */
export const WHY_HELP: CommandHelp = {
  name: 'why',
  usage: 'node server.js why NODE MODULE [PATH] [flags]   (with the admin login)',
  about: [
    "why shows where each file of MODULE on NODE came from (or the file PATH alone), from its report's `from`: each",
    'input — a config, plan, collect or bound key, the archive, a vault name — with the revision the file holds, the',
    "revision the bus holds now and that entry's time: current, behind (rev 41 of 42: the revision held and the",
    'newest), or gone (the key deleted, or no longer bound by the plan). A vault name has no revision on the bus:',
    'shown, not judged. Never a value: keys, revisions, digests and times only. With the admin login (it reads the',
    'input buckets). It exits 0 when every input is current, 1 when one is behind or gone, the node has no report',
    'of the module, or PATH is not one of its files; 2 on a usage error.',
  ],
  flags: WHY_OWN_FLAGS,
  bus: true,
};

/** Parses `why …` (argv after the word `why`); a reason names the argument or the flag. */
export function parseWhy(argv: readonly string[], env: NodeJS.ProcessEnv): Parsed<WhyOptions | Asked> {
  const opened = openCommand(argv, env, [...BUS_FLAGS, ...WHY_OWN_FLAGS], commandHelpText(WHY_HELP));
  if ('answered' in opened) return opened.answered;
  const {
    values,
    positional: [node, module, path, extra],
  } = opened;
  const bus = busOptionsFrom(values, 'mesh-provisioner why');
  if (!bus.ok) return bus;
  if (node === undefined || module === undefined) return fail(`why needs a NODE and a MODULE (why NODE MODULE [PATH])`);
  if (extra !== undefined) return unexpectedArgument(extra);
  if (!isName(node)) return fail(`why: NODE "${node}" is not a valid name`);
  if (!isName(module)) return fail(`why: MODULE "${module}" is not a valid name`);
  // A plan's paths are absolute: a relative PATH could match no file.
  if (path !== undefined && !isAbsolute(path)) return fail(`why: PATH "${path}" is not absolute (a file's path as its plan names it)`);
  return ok({ command: 'why', bus: bus.value, node, module, ...(path === undefined ? {} : { path }), json: values.json === true });
}
