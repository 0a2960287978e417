// The command line of `status [<node> [<module>]]`: its flags, its --help and its parser.
import { BUS_FLAGS, busOptionsFrom } from '../../../shared/cli/bus-flags.ts';
import { openCommand, type Asked, type FlagTable } from '../../../shared/cli/flags.ts';
import { isName } from '../../../shared/contract/keys.ts';
import { ok, type Parsed } from '../../../shared/base/result.ts';
import type { StatusOptions } from '../../options.ts';
import { commandHelpText, type CommandHelp } from '../command-help.ts';

/** Reports `status` asks per page when --limit does not say: never one request for the whole fleet. */
export const DEFAULT_STATUS_LIMIT = 1000;

/** The flags `status` takes besides the bus's. */
const STATUS_OWN_FLAGS = [
  { name: 'limit', type: 'int', arg: 'N', help: `reports or health entries per request (default ${DEFAULT_STATUS_LIMIT})` },
  { name: 'json', type: 'bool', help: 'print JSON instead of tables' },
] as const satisfies FlagTable;

/** What `status --help` says, and the seat's --help of it. */
export const STATUS_HELP: CommandHelp = {
  name: 'status',
  usage: 'node server.js status [<node> [<module>]] [flags]',
  about: [
    'status prints the fleet per node (reports applied, waiting, failed; assignments the seat holds or cannot compose;',
    "the oldest waiting value), or a node's modules in detail (the last report, what the seat says, each waited value",
    'with its owner and key, the files). It exits 0 when every module shown is applied on its newest build; 1 when',
    'one is waiting, failed (or listed failed by its rolling or done rollout and not applied the new build since),',
    'held or cannot be composed, when its rollout is rolling, halted or aborted, when a key is out of shape, when a',
    "node (or module) named has nothing shown, or when the seat's verb cannot be asked; 2 on a usage error or a",
    'request the seat refuses. A removed report (a module just taken off a node) counts toward neither. Each node',
    "shows its client's version and last word; a node silent (its client gone 5 s, or no word for two periods + 15 s)",
    'or whose engine is down shows that in place of its modules, and status exits 1 for it.',
  ],
  flags: STATUS_OWN_FLAGS,
  bus: true,
};

/** Parses `status …` (argv after the word `status`); a reason names the flag or the word. */
export function parseStatus(argv: readonly string[], env: NodeJS.ProcessEnv): Parsed<StatusOptions | Asked> {
  const opened = openCommand(argv, env, [...BUS_FLAGS, ...STATUS_OWN_FLAGS], commandHelpText(STATUS_HELP));
  if ('answered' in opened) return opened.answered;
  const {
    values,
    positional: [node, module, extra],
  } = opened;
  const bus = busOptionsFrom(values, 'mesh-provisioner status');
  if (!bus.ok) return bus;
  if (extra !== undefined) return { ok: false, reason: `unexpected argument "${extra}" (status takes a node and a module at most)` };
  for (const [what, name] of [
    ['node', node],
    ['module', module],
  ] as const) {
    if (name !== undefined && !isName(name)) return { ok: false, reason: `status: ${what} "${name}" is not a valid name` };
  }
  const { limit } = values;
  if (limit !== undefined && limit < 1) return { ok: false, reason: '--limit must be at least 1' };
  return ok({
    command: 'status',
    bus: bus.value,
    json: values.json === true,
    ...(node === undefined ? {} : { node }),
    ...(module === undefined ? {} : { module }),
    ...(limit === undefined ? {} : { limit }),
  });
}
