// The reference engine's flags (DESIGN §9, §10): one Options type and the parser that rejects what is wrong.
import { describeFlags, openCommand, unexpectedArgument, valueSource, type Asked, type FlagTable } from '../shared/cli/flags.ts';
import { fail, ok, type Parsed } from '../shared/base/result.ts';
import { DEFAULT_FILL_SOCKET } from '../shared/contract/fill-protocol.ts';
import { limitText, presentFileProblem } from '../shared/base/regular-file.ts';
import { MAX_DECLARATION_BYTES } from './declaration.ts';
import { MAX_STATE_BYTES } from './record.ts';

/** What the reference engine is told to do. */
export type EngineOptions = {
  /** The unix socket it listens on. */
  socketPath: string;
  /** Every written path must lie inside this directory after resolving links. */
  root: string;
  /** Where secrets live: vault name `module/web/api-key` is the file `<secrets>/module/web/api-key`. */
  secretsDir?: string;
  /** Where restarts and reloads are recorded, one line each. */
  journalFile?: string;
  /** A JSON list of the paths it may write; when absent every path inside the root may be written. */
  declareFile?: string;
  /**
   * Where the files written per module are recorded (with --declare only), so that those no
   * declaration names any more are removed even after a restart; defaultStateFile() when absent.
   */
  stateFile?: string;
};

/** What the command line asks for: run, or print help or the version. */
export type EngineCommand = Asked | { command: 'engine'; options: EngineOptions };

/** The engine's flags. */
export const ENGINE_FLAGS = [
  { name: 'socket', env: 'MESH_FILL_SOCKET', type: 'string', arg: 'PATH', help: `the fill socket (default ${DEFAULT_FILL_SOCKET})` },
  { name: 'root', env: 'MESH_ENGINE_ROOT', type: 'string', arg: 'DIR', help: 'refuse every path outside this directory (required)' },
  { name: 'secrets', env: 'MESH_ENGINE_SECRETS', type: 'string', arg: 'DIR', help: 'read secret <vault name> from DIR/<vault name>' },
  { name: 'journal', env: 'MESH_ENGINE_JOURNAL', type: 'string', arg: 'FILE', help: 'append one line per restart or reload' },
  {
    name: 'declare',
    env: 'MESH_ENGINE_DECLARE',
    type: 'string',
    arg: 'FILE',
    help: `a JSON list of the paths that may be written; a written path it stops naming is removed (a regular file of at most ${limitText(MAX_DECLARATION_BYTES)})`,
  },
  {
    name: 'state',
    env: 'MESH_ENGINE_STATE',
    type: 'string',
    arg: 'FILE',
    help: `where the files written per module are recorded, with --declare (default <journal>.files.json; a regular file of at most ${limitText(MAX_STATE_BYTES)})`,
  },
] as const satisfies FlagTable;

/** The text --help prints. */
function engineUsage(): string {
  return [
    'usage: node engine.js --root DIR [--socket PATH] [--secrets DIR] [--journal FILE] [--declare FILE] [--state FILE]',
    '',
    'The reference node-engine: serves the fill socket, writes files atomically inside --root.',
    '',
    describeFlags(ENGINE_FLAGS),
  ].join('\n');
}

/** Parses argv (without node and script) and env; a reason names the flag that is wrong. */
export function parseEngineOptions(argv: readonly string[], env: NodeJS.ProcessEnv): Parsed<EngineCommand> {
  const opened = openCommand(argv, env, ENGINE_FLAGS, engineUsage);
  if ('answered' in opened) return opened.answered;
  const { values, positional, onCommandLine } = opened;
  const [extra] = positional;
  if (extra !== undefined) return unexpectedArgument(extra);
  if (!values.root) return { ok: false, reason: '--root is required (see --help)' };
  // Read at start and on every request: a FIFO there would hang the engine, a device fill its memory. Not there yet is fine.
  for (const [name, file, limit] of [
    ['declare', values.declare, MAX_DECLARATION_BYTES],
    ['state', values.state, MAX_STATE_BYTES],
  ] as const) {
    const problem = file === undefined ? undefined : presentFileProblem(file, limit);
    if (problem !== undefined) return fail(`${valueSource(ENGINE_FLAGS, name, onCommandLine, env)}: ${problem}`);
  }
  const options: EngineOptions = {
    socketPath: values.socket ?? DEFAULT_FILL_SOCKET,
    root: values.root,
    secretsDir: values.secrets,
    journalFile: values.journal,
    declareFile: values.declare,
    stateFile: values.state,
  };
  return ok({ command: 'engine', options });
}
