// server.js's command line (DESIGN §10): the first word picks the command, whose parser (in its
// folder under commands/) reads the rest; no command word is the seat itself (seat/command-line.ts).
import type { Asked } from '../shared/cli/flags.ts';
import { commandFirst } from '../shared/cli/command-first.ts';
import { fail, type Parsed } from '../shared/base/result.ts';
import { parseAssign, parseUnassign } from './commands/assign/command-line.ts';
import { parseBackupCommand } from './commands/backup/command-line.ts';
import { parseBusConfig } from './commands/bus-config/command-line.ts';
import { parseConfig } from './commands/config/command-line.ts';
import { parseInit } from './commands/init/command-line.ts';
import { parsePublish } from './commands/publish/command-line.ts';
import { parseQuery } from './commands/query/command-line.ts';
import { parseRolloutCommand, rolloutHelp } from './commands/rollout/command-line.ts';
import { parseStatus } from './commands/status/command-line.ts';
import { parseTrace } from './commands/trace/command-line.ts';
import { parseWhy } from './commands/why/command-line.ts';
import { serverHelp } from './help.ts';
import type { ServerOptions } from './options.ts';
import { parseServe } from './seat/command-line.ts';

/** A command's parser: argv after its word, the environment, what it was asked or why not. */
type CommandParser = (argv: readonly string[], env: NodeJS.ProcessEnv) => Parsed<ServerOptions | Asked>;

/** Each command of server.js besides the seat itself, by the first word of its command line. */
const PARSERS: Readonly<Record<string, CommandParser>> = {
  'bus-config': parseBusConfig,
  status: parseStatus,
  why: parseWhy,
  trace: parseTrace,
  init: parseInit,
  query: parseQuery,
  assign: parseAssign,
  unassign: parseUnassign,
  config: parseConfig,
  publish: parsePublish,
  rollout: (argv, env) => parseRolloutCommand(argv, env, rolloutHelp),
  backup: (argv, env) => parseBackupCommand('backup', argv, env),
  restore: (argv, env) => parseBackupCommand('restore', argv, env),
};

/** Parses argv and env; a reason names the flag and what is wrong. */
export function parseServerOptions(argv: readonly string[], env: NodeJS.ProcessEnv): Parsed<ServerOptions> {
  const [command, ...rest] = argv;
  const parser = command === undefined || !Object.hasOwn(PARSERS, command) ? undefined : PARSERS[command];
  if (parser) return parser(rest, env);
  const served = parseServe(argv, env, serverHelp);
  // `--nats URL status`: the flags went first, and the seat's parser would refuse the command's word or flags.
  return served.ok ? served : fail(commandFirst(argv, Object.keys(PARSERS), 'server.js') ?? served.reason);
}
