// The command line of `trace KEY-PATTERN [--json]` (DESIGN §14): its flags, its --help and its
// parser, the pattern checked (pattern.ts) before the bus is reached.
import { BUS_FLAGS, busOptionsFrom } from '../../../shared/cli/bus-flags.ts';
import { openCommand, unexpectedArgument, type Asked, type FlagTable } from '../../../shared/cli/flags.ts';
import { fail, ok, type Parsed } from '../../../shared/base/result.ts';
import type { TraceOptions } from '../../options.ts';
import { commandHelpText, type CommandHelp } from '../command-help.ts';
import { parseKeyPattern } from './pattern.ts';

/** Reports `trace` asks per page when --limit does not say. */
export const DEFAULT_TRACE_LIMIT = 1000;

/** The flags `trace` takes besides the bus's. */
const TRACE_OWN_FLAGS = [
  { name: 'limit', type: 'int', arg: 'N', help: `reports per request (default ${DEFAULT_TRACE_LIMIT})` },
  { name: 'json', type: 'bool', help: 'print JSON instead of lines' },
] as const satisfies FlagTable;

/** What `trace --help` says, and the seat's --help of it. */
export const TRACE_HELP: CommandHelp = {
  name: 'trace',
  usage: 'node server.js trace KEY-PATTERN [flags]   (with the admin login; e.g. mesh-config_resolved:*.web.color)',
  about: [
    'trace follows a change to every node: KEY-PATTERN is a bucket, a colon and a key pattern, * standing for one',
    "whole token. It reads the newest revision of each key matched (headers only, never a value) and the fleet's",
    'reports through the verb, and says over those keys on how many of the nodes whose files use one of them the',
    "newest revision is in place, listing each node behind with its report's state and reason (n17: rev 41 of 42,",
    'waiting: engine not reachable). A report without `from` (a client before provenance) is counted, not judged.',
    'With the admin login (it reads the input buckets). It exits 0 when every node using a matched key holds its',
    'newest revision, 1 when one does not, no key matches, or the bus cannot be read; 2 on a usage error.',
  ],
  flags: TRACE_OWN_FLAGS,
  bus: true,
};

/** Parses `trace …` (argv after the word `trace`); a reason names the argument or the flag. */
export function parseTrace(argv: readonly string[], env: NodeJS.ProcessEnv): Parsed<TraceOptions | Asked> {
  const opened = openCommand(argv, env, [...BUS_FLAGS, ...TRACE_OWN_FLAGS], commandHelpText(TRACE_HELP));
  if ('answered' in opened) return opened.answered;
  const {
    values,
    positional: [text, extra],
  } = opened;
  const bus = busOptionsFrom(values, 'mesh-provisioner trace');
  if (!bus.ok) return bus;
  if (text === undefined) return fail('trace needs a KEY-PATTERN (<bucket>:<key pattern>, e.g. mesh-config_resolved:*.web.color)');
  if (extra !== undefined) return unexpectedArgument(extra);
  const pattern = parseKeyPattern(text);
  if (!pattern.ok) return pattern;
  if (values.limit !== undefined && values.limit < 1) return fail('--limit must be at least 1');
  return ok({ command: 'trace', bus: bus.value, ...pattern.value, json: values.json === true, ...(values.limit === undefined ? {} : { limit: values.limit }) });
}
