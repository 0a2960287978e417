// The reference engine's flags (DESIGN §9, §10): one Options type and the parser that rejects what is wrong.
import { describeFlags, parseFlags, type FlagSpec } from '../shared/flags.ts';
import type { Parsed } from '../shared/result.ts';
import { DEFAULT_FILL_SOCKET } from '../shared/fill-protocol.ts';

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
export type EngineCommand = { run: 'help' } | { run: 'version' } | { run: 'engine'; options: EngineOptions };

/** The engine's flags. */
export const ENGINE_FLAGS: readonly FlagSpec[] = [
  { name: 'socket', env: 'MESH_FILL_SOCKET', type: 'string', arg: 'PATH', help: `the fill socket (default ${DEFAULT_FILL_SOCKET})` },
  { name: 'root', env: 'MESH_ENGINE_ROOT', type: 'string', arg: 'DIR', help: 'refuse every path outside this directory (required)' },
  { name: 'secrets', env: 'MESH_ENGINE_SECRETS', type: 'string', arg: 'DIR', help: 'read secret <vault name> from DIR/<vault name>' },
  { name: 'journal', env: 'MESH_ENGINE_JOURNAL', type: 'string', arg: 'FILE', help: 'append one line per restart or reload' },
  { name: 'declare', env: 'MESH_ENGINE_DECLARE', type: 'string', arg: 'FILE', help: 'a JSON list of the paths that may be written; a written path it stops naming is removed' },
  { name: 'state', env: 'MESH_ENGINE_STATE', type: 'string', arg: 'FILE', help: 'where the files written per module are recorded, with --declare (default <journal>.files.json)' },
];

/** The text --help prints. */
export function engineUsage(): string {
  return [
    'usage: node dist/engine.js --root DIR [--socket PATH] [--secrets DIR] [--journal FILE] [--declare FILE] [--state FILE]',
    '',
    'The reference node-engine: serves the fill socket, writes files atomically inside --root.',
    '',
    describeFlags(ENGINE_FLAGS),
  ].join('\n');
}

/** Parses argv (without node and script) and env; a reason names the flag that is wrong. */
export function parseEngineOptions(argv: readonly string[], env: NodeJS.ProcessEnv): Parsed<EngineCommand> {
  const parsed = parseFlags(argv, env, ENGINE_FLAGS);
  if (!parsed.ok) return parsed;
  const { values, positional, help, version } = parsed.value;
  if (help) return { ok: true, value: { run: 'help' } };
  if (version) return { ok: true, value: { run: 'version' } };
  if (positional.length > 0) return { ok: false, reason: `unexpected argument "${positional[0]}" (see --help)` };
  const root = values['root'] as string | undefined;
  if (!root) return { ok: false, reason: '--root is required (see --help)' };
  const options: EngineOptions = {
    socketPath: (values['socket'] as string | undefined) ?? DEFAULT_FILL_SOCKET,
    root,
    secretsDir: values['secrets'] as string | undefined,
    journalFile: values['journal'] as string | undefined,
    declareFile: values['declare'] as string | undefined,
    stateFile: values['state'] as string | undefined,
  };
  return { ok: true, value: { run: 'engine', options } };
}
