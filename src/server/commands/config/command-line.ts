// The command line of `config set|get|rm|import` (DESIGN §13): its --help and its parser, every
// name and config key checked against its grammar before the bus is reached; a reason names the word.
import { describeFlags, openCommand, unexpectedArgument, type Asked } from '../../../shared/cli/flags.ts';
import { ok, fail, type Parsed } from '../../../shared/base/result.ts';
import type { ConfigArgs, ConfigOptions } from '../../options.ts';
import { targetProblem } from '../assign/command.ts';
import { INPUT_FLAGS, INPUT_NOTE, inputBase } from '../input-flags.ts';
import { configTargetProblem } from './key.ts';

/** The text of `config --help`. */
export function configHelp(): string {
  return [
    'usage: node server.js config set NODE MODULE KEY VALUE   (VALUE - reads stdin whole)',
    '       node server.js config get NODE MODULE [KEY]',
    '       node server.js config rm NODE MODULE KEY',
    '       node server.js config import FILE                 (FILE - reads stdin)',
    '',
    'mesh-config_resolved keys NODE.MODULE.KEY (KEY may hold dots), each value UTF-8 text. get KEY prints the bytes as',
    'they are, nothing added (to a terminal: control characters written as \\x1b…, and a newline after); get without',
    'KEY prints key=value lines, control characters written as \\x0a, \\x1b… so each key is one line. import takes',
    '{"node": {"module": {"key": "value"}}}, a regular file of at most 64 MiB, checked whole first, and writes it in one',
    'burst (keys not in FILE are left as they are). A missing key (get, rm) exits 1. A VALUE starting with - follows --,',
    'every flag before it: config set --nkey admin.nk n1 web opts -- "-x 1".',
    ...INPUT_NOTE,
    '',
    'flags:',
    describeFlags(INPUT_FLAGS),
  ].join('\n');
}

/** Parses `config set|get|rm|import …`. */
export function parseConfig(argv: readonly string[], env: NodeJS.ProcessEnv): Parsed<ConfigOptions | Asked> {
  const opened = openCommand(argv, env, INPUT_FLAGS, configHelp);
  if ('answered' in opened) return opened.answered;
  const base = inputBase(opened.values, 'config');
  if (!base.ok) return base;
  const args = configArgs(opened.positional);
  return args.ok ? ok({ command: 'config', args: args.value, ...base.value }) : args;
}

/** The words of a config action, by action. */
const CONFIG_USAGE = {
  set: 'config set NODE MODULE KEY VALUE',
  get: 'config get NODE MODULE [KEY]',
  rm: 'config rm NODE MODULE KEY',
  import: 'config import FILE',
} as const;

function configArgs(words: readonly string[]): Parsed<ConfigArgs> {
  const [action, ...rest] = words;
  if (action === undefined || !Object.hasOwn(CONFIG_USAGE, action)) {
    return fail(`config needs set, get, rm or import, got ${action === undefined ? 'nothing' : JSON.stringify(action)} (see config --help)`);
  }
  const usage = CONFIG_USAGE[action as keyof typeof CONFIG_USAGE];
  const wants = action === 'set' ? 4 : action === 'import' ? 1 : 3;
  const least = action === 'get' ? 2 : wants;
  if (rest.length > wants) return unexpectedArgument(rest[wants]!);
  if (rest.length < least) return fail(`${usage}: ${rest.length === 0 ? 'nothing' : `only ${rest.map((w) => JSON.stringify(w)).join(' ')}`} given`);
  if (action === 'import') return ok({ action, file: rest[0]! });
  const [node, module, key, value] = rest as [string, string, string?, string?];
  const problem = key === undefined ? targetProblem(node, module) : configTargetProblem(node, module, key);
  if (problem !== undefined) return fail(`config ${action}: ${problem}`);
  if (action === 'get') return ok({ action, node, module, ...(key === undefined ? {} : { key }) });
  if (action === 'rm') return ok({ action, node, module, key: key! });
  return ok({ action: 'set', node, module, key: key!, value: value === '-' ? { stdin: true } : { text: value! } });
}
