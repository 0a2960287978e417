// The node client's command line (DESIGN §10): the flag tables, --help, and the parser that fills
// the options of options.ts, rejecting what is wrong naming the flag.
import { isAbsolute, resolve } from 'node:path';
import { BUS_FLAGS, busOptionsFrom } from '../shared/cli/bus-flags.ts';
import { DEFAULT_FILL_SOCKET } from '../shared/contract/fill-protocol.ts';
import { DEFAULT_ALIVE_SECONDS } from '../shared/contract/alive.ts';
import { describeFlags, openCommand, openFlagsOnly, unexpectedArgument, type FlagName, type FlagTable, type FlagValues } from '../shared/cli/flags.ts';
import { INBOX_PREFIXES } from '../shared/bus/inbox.ts';
import { isName } from '../shared/contract/keys.ts';
import { commandFirst } from '../shared/cli/command-first.ts';
import { fail, ok, type Parsed } from '../shared/base/result.ts';
import { DEFAULT_ENGINE_TIMEOUT_MS } from './handoff/fill-socket.ts';
import { DEFAULT_ONCE_TIMEOUT_MS, DEFAULT_SETTLE_MS, defaultCacheDir, MAX_ENGINE_TIMEOUT_S, type ClientOptions, type RunOptions } from './options.ts';

const RUN_FLAGS = [
  { name: 'node', env: 'MESH_NODE', type: 'string', arg: 'NAME', help: 'this node’s name (required)' },
  ...BUS_FLAGS,
  { name: 'socket', env: 'MESH_FILL_SOCKET', type: 'string', arg: 'PATH', help: `the engine’s fill socket (default ${DEFAULT_FILL_SOCKET})` },
  {
    name: 'cache',
    env: 'MESH_CACHE_DIR',
    type: 'string',
    arg: 'DIR',
    help: 'where archives are kept by digest, with the records of the keys written and of the plans read (default $CACHE_DIRECTORY or ~/.cache/mesh-provisioner)',
  },
  { name: 'settle', env: 'MESH_SETTLE_MS', type: 'int', arg: 'MS', help: `wait for more changes before filling (default ${DEFAULT_SETTLE_MS})` },
  {
    name: 'engine-timeout',
    env: 'MESH_ENGINE_TIMEOUT',
    type: 'string',
    arg: 'S',
    help: `give up a fill the engine has not answered after S seconds (default ${DEFAULT_ENGINE_TIMEOUT_MS / 1000})`,
  },
  {
    name: 'alive',
    env: 'MESH_ALIVE',
    type: 'string',
    arg: 'S',
    help: `say this node is alive on prov.alive.<node> at start and every S seconds, with its engine's state (default ${DEFAULT_ALIVE_SECONDS})`,
  },
  {
    name: 'archive-dir',
    env: 'MESH_ARCHIVE_DIR',
    type: 'string',
    arg: 'DIR',
    help: 'read file:// archive refs only under this absolute path (default none: file:// refused)',
  },
  {
    name: 'once',
    env: 'MESH_ONCE',
    type: 'bool',
    help: 'fill every module once and exit: 0 when all are applied, 1 when any failed or still waits after --timeout',
  },
  {
    name: 'dry-run',
    env: 'MESH_DRY_RUN',
    type: 'string',
    arg: 'DIR',
    help: 'render every module into DIR (a new or empty dir) as it would be handed, with DIR/mesh-dry-run.json; never touches the engine or writes to the bus; implies --once',
  },
  {
    name: 'timeout',
    env: 'MESH_TIMEOUT',
    type: 'string',
    arg: 'S',
    help: `with --once or --dry-run: give up after S seconds (default ${DEFAULT_ONCE_TIMEOUT_MS / 1000})`,
  },
  { name: 'debug', env: 'MESH_DEBUG', type: 'bool', help: 'log debug lines' },
] as const satisfies FlagTable;

const LINT_FLAGS = [
  { name: 'plan', type: 'string', arg: 'FILE', help: 'a plan or a composition (JSON, DESIGN §4; the file publish takes too) to check the templates against' },
  { name: 'json', type: 'bool', help: 'print one JSON object instead of lines' },
] as const satisfies FlagTable;

/** The text of --help. */
export function clientHelp(): string {
  return [
    'node-provisioner — fills this node’s module templates from the bus and hands them to the engine.',
    '',
    'usage: node client.js --node NAME [flags]',
    '       node client.js --node NAME --once [--timeout S] [flags]',
    '       node client.js --node NAME --dry-run DIR [--timeout S] [flags]',
    '       node client.js lint ARCHIVE|DIR|FILE [--plan FILE] [--json]',
    '',
    'flags:',
    describeFlags(RUN_FLAGS),
    '',
    '--once reads the plans, then runs until every module is applied or failed (a module waiting for a',
    'value keeps it running until --timeout); it writes needs, items and reports as usual and prints one',
    'line per module not applied, to stderr. SIGTERM ends it with 0, as it ends the daemon.',
    '--dry-run DIR writes each file at DIR + its path, secrets as the text ${secret:<name>}, and a summary;',
    'it never connects to the engine (so --socket is refused with it) and never writes to the bus.',
    '',
    "lint checks a module's templates without a bus or an engine: every placeholder with its line, then",
    'unknown kinds, unclosed ${kind:name, names past the limits, files not UTF-8, $${ escapes, and with --plan',
    'the secrets, items and templates the plan (or composition: a file without "node") names. Exit 1 on',
    'anything that would fail the module or that publish refuses, 2 when it cannot read.',
    'lint flags:',
    describeFlags(LINT_FLAGS),
    '',
    'SIGTERM drains and exits 0. Logs go to stderr, with sd-daemon prefixes under systemd.',
  ].join('\n');
}

/** Parses argv and env; a reason names the flag and what is wrong. */
export function parseClientOptions(argv: readonly string[], env: NodeJS.ProcessEnv): Parsed<ClientOptions> {
  const [command, ...rest] = argv;
  if (command === 'lint') return parseLint(rest, env);
  const run = parseRun(argv, env);
  // `--plan F lint DIR`: the flags went first.
  return run.ok ? run : fail(commandFirst(argv, ['lint'], 'client.js') ?? run.reason);
}

function parseRun(argv: readonly string[], env: NodeJS.ProcessEnv): Parsed<ClientOptions> {
  const opened = openFlagsOnly(argv, env, RUN_FLAGS, clientHelp);
  if ('answered' in opened) return opened.answered;
  const { values, onCommandLine } = opened;
  const { node } = values;
  if (!node) return { ok: false, reason: '--node is required (or MESH_NODE)' };
  if (!isName(node)) return { ok: false, reason: `--node: "${node}" is not a valid node name` };
  const bus = busOptionsFrom(values, `node-provisioner ${node}`, INBOX_PREFIXES.node(node));
  if (!bus.ok) return bus;
  const engineTimeoutMs = parseSeconds('--engine-timeout', values['engine-timeout'], DEFAULT_ENGINE_TIMEOUT_MS);
  if (!engineTimeoutMs.ok) return engineTimeoutMs;
  const timeoutMs = parseSeconds('--timeout', values.timeout, DEFAULT_ONCE_TIMEOUT_MS);
  if (!timeoutMs.ok) return timeoutMs;
  const aliveMs = parseSeconds('--alive', values.alive, DEFAULT_ALIVE_SECONDS * 1000);
  if (!aliveMs.ok) return aliveMs;
  const oneShot = parseOneShot(values, onCommandLine);
  if (!oneShot.ok) return oneShot;
  const archiveDir = values['archive-dir'];
  if (archiveDir !== undefined && !isAbsolute(archiveDir)) return { ok: false, reason: `--archive-dir: "${archiveDir}" is not an absolute path` };
  return ok({
    command: 'run',
    node,
    bus: bus.value,
    socket: values.socket ?? DEFAULT_FILL_SOCKET,
    cache: values.cache ?? defaultCacheDir(env),
    settleMs: values.settle ?? DEFAULT_SETTLE_MS,
    engineTimeoutMs: engineTimeoutMs.value,
    aliveMs: aliveMs.value,
    ...(archiveDir !== undefined ? { archiveDir } : {}),
    debug: values.debug === true,
    ...oneShot.value,
    timeoutMs: timeoutMs.value,
  });
}

/**
 * --once and --dry-run. Only what the command line says is judged a contradiction: a unit's
 * environment may carry MESH_FILL_SOCKET or MESH_TIMEOUT for every run.
 */
function parseOneShot(
  values: FlagValues<typeof RUN_FLAGS>,
  onCommandLine: ReadonlySet<FlagName<typeof RUN_FLAGS>>,
): Parsed<Pick<RunOptions, 'once' | 'dryRun'>> {
  const dryRun = values['dry-run'];
  const once = values.once === true || dryRun !== undefined;
  if (dryRun !== undefined && onCommandLine.has('socket')) return { ok: false, reason: '--dry-run never connects to the engine: leave out --socket' };
  if (!once && onCommandLine.has('timeout')) return { ok: false, reason: '--timeout goes with --once or --dry-run' };
  if (dryRun === undefined) return ok({ once });
  const dir = resolve(dryRun);
  if (dir === '/') return { ok: false, reason: '--dry-run: "/" would put the files where the engine writes them; give a dir of their own' };
  return ok({ once, dryRun: dir });
}

/** `lint ARCHIVE|DIR|FILE [--plan FILE] [--json]`. */
function parseLint(argv: readonly string[], env: NodeJS.ProcessEnv): Parsed<ClientOptions> {
  const opened = openCommand(argv, env, LINT_FLAGS, clientHelp);
  if ('answered' in opened) return opened.answered;
  const {
    values: { plan, json },
    positional: [input, extra],
  } = opened;
  if (input === undefined) return { ok: false, reason: 'lint needs an archive, a directory or a template file (see --help)' };
  if (extra !== undefined) return unexpectedArgument(extra);
  return ok({ command: 'lint', input, ...(plan !== undefined ? { plan } : {}), json: json === true });
}

// Seconds, fractions allowed (a test engine may be given 0.5), above zero and below what a timer holds.
function parseSeconds(flag: string, given: string | undefined, defaultMs: number): Parsed<number> {
  if (given === undefined) return ok(defaultMs);
  const seconds = /^\d+(\.\d+)?$/.test(given) ? Number(given) : NaN;
  if (!(seconds > 0) || seconds > MAX_ENGINE_TIMEOUT_S) {
    return { ok: false, reason: `${flag} must be a number of seconds above 0 and at most ${MAX_ENGINE_TIMEOUT_S}, got "${given}"` };
  }
  return ok(Math.max(1, Math.round(seconds * 1000)));
}
