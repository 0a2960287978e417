// The command line of `query <what>` (DESIGN §10): its flags, its --help and its parser, every name
// checked against its grammar before the seat is asked.
import { BUS_FLAGS, busOptionsFrom } from '../../../shared/cli/bus-flags.ts';
import { openCommand, unexpectedArgument, type Asked, type FlagTable } from '../../../shared/cli/flags.ts';
import { isName } from '../../../shared/contract/keys.ts';
import { ok, type Parsed } from '../../../shared/base/result.ts';
import { VERB_WHATS } from '../../../shared/contract/verb.ts';
import type { QueryOptions } from '../../options.ts';
import { commandHelpText, type CommandHelp } from '../command-help.ts';

/** The flags `query` takes besides the bus's. */
const QUERY_OWN_FLAGS = [
  { name: 'node', type: 'string', arg: 'NAME', help: 'only this node' },
  { name: 'module', type: 'string', arg: 'NAME', help: 'only this module' },
  { name: 'collection', type: 'string', arg: 'NAME', help: 'only this collection (collect)' },
  { name: 'contributor', type: 'string', arg: 'NAME', help: 'only this contributor (collect)' },
  { name: 'limit', type: 'int', arg: 'N', help: 'entries per request (default: as many as fit)' },
  { name: 'json', type: 'bool', help: 'print JSON instead of a table' },
] as const satisfies FlagTable;

/** What `query --help` says, and the seat's --help of it. */
export const QUERY_HELP: CommandHelp = {
  name: 'query',
  usage: 'node server.js query <registry|needs|applied|collect|health|alive|drift> [flags]',
  about: [
    "query prints the seat's answer to one question of mesh-provisioner.provisioning, with the seat's login or admin's.",
    'query drift lists every file the engines put back (DESIGN §14), newest first: node, module, path, restores since',
    "its client started and the last one's time, read from the reports' drift.",
  ],
  flags: QUERY_OWN_FLAGS,
  bus: true,
};

/** Parses `query …` (argv after the word `query`); a reason names the flag or the word. */
export function parseQuery(argv: readonly string[], env: NodeJS.ProcessEnv): Parsed<QueryOptions | Asked> {
  const opened = openCommand(argv, env, [...BUS_FLAGS, ...QUERY_OWN_FLAGS], commandHelpText(QUERY_HELP));
  if ('answered' in opened) return opened.answered;
  const {
    values,
    positional: [what, extra],
  } = opened;
  const bus = busOptionsFrom(values, 'mesh-provisioner query');
  if (!bus.ok) return bus;
  // `drift` is the query's own, read from the verb's `applied` (DESIGN §14).
  const whats: readonly string[] = [...VERB_WHATS, 'drift'];
  if (!what || !whats.includes(what)) return { ok: false, reason: `query needs one of ${whats.join(', ')}, got ${what ?? 'nothing'}` };
  if (extra !== undefined) return unexpectedArgument(extra);
  const { node, module, collection, contributor, limit, json } = values;
  for (const [flag, name] of [
    ['node', node],
    ['module', module],
    ['contributor', contributor],
  ] as const) {
    if (name !== undefined && !isName(name)) return { ok: false, reason: `--${flag}: "${name}" is not a valid name` };
  }
  if ((collection || contributor) && what !== 'collect') return { ok: false, reason: '--collection and --contributor go with query collect only' };
  if (limit === 0) return { ok: false, reason: '--limit must be at least 1' };
  return ok({
    command: 'query',
    bus: bus.value,
    what,
    ...(node === undefined ? {} : { node }),
    ...(module === undefined ? {} : { module }),
    ...(collection === undefined ? {} : { collection }),
    ...(contributor === undefined ? {} : { contributor }),
    ...(limit === undefined ? {} : { limit }),
    json: json === true,
  });
}
