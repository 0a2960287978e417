// The command lines of the input commands (DESIGN §13): `assign`, `unassign` and `config`, each with
// its flag table, its --help and its parser, every word checked against its grammar (names §2,
// placement, config keys) before the bus is reached; a reason names the flag or the word.
import { BUS_FLAGS, busOptionsFrom } from '../shared/cli/bus-flags.ts';
import { describeFlags, openCommand, unexpectedArgument, type FlagTable } from '../shared/cli/flags.ts';
import { ok, fail, type Parsed } from '../shared/base/result.ts';
import { assignmentSizeProblem, placementFromFlags, targetProblem } from './commands/assign/command.ts';
import { configTargetProblem } from './commands/config/key.ts';
import { DEFAULT_REPLICAS, type ConfigArgs, type InputCommandBase, type ServerOptions } from './options.ts';

const INPUT_FLAGS = [
  ...BUS_FLAGS,
  {
    name: 'replicas',
    env: 'MESH_REPLICAS',
    type: 'int',
    arg: 'N',
    help: `copies the input bucket keeps if this command creates it (a bus without isolation), 1–5 (default ${DEFAULT_REPLICAS})`,
  },
] as const satisfies FlagTable;

/** The placement flags of `assign`: each a namespace of `${<kind>:<name>}`, repeated once a name. */
export const ASSIGN_OWN_FLAGS = [
  { name: 'dir', type: 'repeat', arg: 'NAME=PATH', help: '${dir:NAME}: an absolute path (repeat, once a name)' },
  { name: 'port', type: 'repeat', arg: 'NAME=N', help: '${port:NAME}: a port number, 1–65535 (repeat)' },
  { name: 'access', type: 'repeat', arg: 'NAME=VALUE', help: '${access:NAME}: text without control characters (repeat)' },
  { name: 'seat', type: 'repeat', arg: 'NAME=VALUE', help: '${seat:NAME} (repeat)' },
  { name: 'machine', type: 'repeat', arg: 'NAME=VALUE', help: '${machine:NAME} (repeat)' },
] as const satisfies FlagTable;

const INPUT_NOTE = [
  'Run with the admin login (its seed, admin.nk, as --nkey): no other login may write the inputs. Names are',
  'checked against their grammars only, never against the catalogue: what the seat cannot compose, `status` shows.',
];

/** The text of `assign --help` and `unassign --help`. */
export function assignHelp(): string {
  return [
    'usage: node server.js assign NODE MODULE [--dir NAME=PATH …] [--port NAME=N …] [--access|--seat|--machine NAME=VALUE …] [flags]',
    '       node server.js unassign NODE MODULE [flags]',
    '',
    'assign writes mesh-controller_assignments key NODE.MODULE: {node, module, placement}, the placement whole as given',
    '(an assignment already there is replaced; the same bytes are not written again). unassign deletes it, and the seat',
    'retires its plan; a module not assigned there exits 1.',
    ...INPUT_NOTE,
    '',
    'assign flags:',
    describeFlags(ASSIGN_OWN_FLAGS),
    '',
    'flags:',
    describeFlags(INPUT_FLAGS),
  ].join('\n');
}

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

/** Parses `assign NODE MODULE [placement flags]`. */
export function parseAssign(argv: readonly string[], env: NodeJS.ProcessEnv): Parsed<ServerOptions> {
  const opened = openCommand(argv, env, [...INPUT_FLAGS, ...ASSIGN_OWN_FLAGS], assignHelp);
  if ('answered' in opened) return opened.answered;
  const { values, positional } = opened;
  const base = inputBase(values, 'assign');
  if (!base.ok) return base;
  const target = nodeAndModule('assign', positional);
  if (!target.ok) return target;
  const placement = placementFromFlags(values);
  if (!placement.ok) return placement;
  const assignment = { ...target.value, placement: placement.value };
  const tooBig = assignmentSizeProblem(assignment);
  return tooBig === undefined ? ok({ command: 'assign', assignment, ...base.value }) : fail(`assign: ${tooBig}`);
}

/** Parses `unassign NODE MODULE`. */
export function parseUnassign(argv: readonly string[], env: NodeJS.ProcessEnv): Parsed<ServerOptions> {
  const opened = openCommand(argv, env, INPUT_FLAGS, assignHelp);
  if ('answered' in opened) return opened.answered;
  const base = inputBase(opened.values, 'unassign');
  if (!base.ok) return base;
  const target = nodeAndModule('unassign', opened.positional);
  return target.ok ? ok({ command: 'unassign', ...target.value, ...base.value }) : target;
}

/** Parses `config set|get|rm|import …`. */
export function parseConfig(argv: readonly string[], env: NodeJS.ProcessEnv): Parsed<ServerOptions> {
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

function nodeAndModule(command: string, words: readonly string[]): Parsed<{ node: string; module: string }> {
  const [node, module, extra] = words;
  if (node === undefined || module === undefined) return fail(`${command} needs NODE and MODULE (see ${command} --help)`);
  if (extra !== undefined) return unexpectedArgument(extra);
  const problem = targetProblem(node, module);
  return problem === undefined ? ok({ node, module }) : fail(`${command}: ${problem}`);
}

function inputBase(values: Parameters<typeof busOptionsFrom>[0] & { replicas?: number }, command: string): Parsed<InputCommandBase> {
  const bus = busOptionsFrom(values, `mesh-provisioner ${command}`);
  if (!bus.ok) return bus;
  const replicas = values.replicas ?? DEFAULT_REPLICAS;
  if (replicas < 1 || replicas > 5) return fail(`--replicas must be 1 to 5, got ${replicas}`);
  return ok({ bus: bus.value, replicas });
}
