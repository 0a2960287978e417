// The node client's flags (DESIGN §10): parsed once, validated, defaults named.
import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import type { BusOptions } from '../shared/bus.ts';
import { BUS_FLAGS, busOptionsFrom } from '../shared/bus-flags.ts';
import { DEFAULT_FILL_SOCKET } from '../shared/fill-protocol.ts';
import { describeFlags, parseFlags, type FlagSpec } from '../shared/flags.ts';
import { isName } from '../shared/keys.ts';
import type { Parsed } from '../shared/result.ts';
import { DEFAULT_ENGINE_TIMEOUT_MS } from './engine.ts';

/** The settle window when --settle is not given, in ms. */
export const DEFAULT_SETTLE_MS = 20;
/** The longest --engine-timeout, in seconds: a timer past 2^31-1 ms would fire at once. */
export const MAX_ENGINE_TIMEOUT_S = Math.floor((2 ** 31 - 1) / 1000);
/** The archive cache when --cache is not given: the systemd cache dir, else ~/.cache. */
export function defaultCacheDir(env: NodeJS.ProcessEnv): string {
  return env['CACHE_DIRECTORY'] ?? join(homedir(), '.cache', 'mesh-provisioner');
}

const FLAGS: readonly FlagSpec[] = [
  { name: 'node', env: 'MESH_NODE', type: 'string', arg: 'NAME', help: 'this node’s name (required)' },
  ...BUS_FLAGS,
  { name: 'socket', env: 'MESH_FILL_SOCKET', type: 'string', arg: 'PATH', help: `the engine’s fill socket (default ${DEFAULT_FILL_SOCKET})` },
  { name: 'cache', env: 'MESH_CACHE_DIR', type: 'string', arg: 'DIR', help: 'where archives are kept by digest (default $CACHE_DIRECTORY or ~/.cache/mesh-provisioner)' },
  { name: 'settle', env: 'MESH_SETTLE_MS', type: 'int', arg: 'MS', help: `wait for more changes before filling (default ${DEFAULT_SETTLE_MS})` },
  { name: 'engine-timeout', env: 'MESH_ENGINE_TIMEOUT', type: 'string', arg: 'S', help: `give up a fill the engine has not answered after S seconds (default ${DEFAULT_ENGINE_TIMEOUT_MS / 1000})` },
  { name: 'archive-dir', env: 'MESH_ARCHIVE_DIR', type: 'string', arg: 'DIR', help: 'read file:// archive refs only under this absolute path (default none: file:// refused)' },
  { name: 'debug', env: 'MESH_DEBUG', type: 'bool', help: 'log debug lines' },
];

/** What the client was asked to do. */
export type ClientOptions =
  | { command: 'help'; text: string }
  | { command: 'version' }
  | {
    command: 'run';
    /** This node's name. */
    node: string;
    /** How to reach the bus. */
    bus: BusOptions;
    /** The engine's fill socket. */
    socket: string;
    /** Where archives are kept by digest. */
    cache: string;
    /** The settle window, in ms. */
    settleMs: number;
    /** How long a fill may go unanswered by the engine, in ms. */
    engineTimeoutMs: number;
    /** The only directory file:// archive refs are read under; absent: file:// refused. */
    archiveDir?: string;
    /** Whether debug lines are logged. */
    debug: boolean;
  };

/** The text of --help. */
export function clientHelp(): string {
  return [
    'node-provisioner — fills this node’s module templates from the bus and hands them to the engine.',
    '',
    'usage: node dist/client.js --node NAME [flags]',
    '',
    'flags:',
    describeFlags(FLAGS),
    '',
    'SIGTERM drains and exits 0. Logs go to stderr, with sd-daemon prefixes under systemd.',
  ].join('\n');
}

/** Parses argv and env; a reason names the flag and what is wrong. */
export function parseClientOptions(argv: readonly string[], env: NodeJS.ProcessEnv): Parsed<ClientOptions> {
  const parsed = parseFlags(argv, env, FLAGS);
  if (!parsed.ok) return parsed;
  const { values, positional, help, version } = parsed.value;
  if (help) return { ok: true, value: { command: 'help', text: clientHelp() } };
  if (version) return { ok: true, value: { command: 'version' } };
  if (positional.length > 0) return { ok: false, reason: `unexpected argument "${positional[0]}" (see --help)` };
  const node = values['node'] as string | undefined;
  if (!node) return { ok: false, reason: '--node is required (or MESH_NODE)' };
  if (!isName(node)) return { ok: false, reason: `--node: "${node}" is not a valid node name` };
  const bus = busOptionsFrom(values, `node-provisioner ${node}`, `_INBOX_${node}`);
  if (!bus.ok) return bus;
  const engineTimeoutMs = parseEngineTimeout(values['engine-timeout'] as string | undefined);
  if (!engineTimeoutMs.ok) return engineTimeoutMs;
  const archiveDir = values['archive-dir'] as string | undefined;
  if (archiveDir !== undefined && !isAbsolute(archiveDir)) return { ok: false, reason: `--archive-dir: "${archiveDir}" is not an absolute path` };
  return {
    ok: true,
    value: {
      command: 'run',
      node,
      bus: bus.value,
      socket: (values['socket'] as string | undefined) ?? DEFAULT_FILL_SOCKET,
      cache: (values['cache'] as string | undefined) ?? defaultCacheDir(env),
      settleMs: (values['settle'] as number | undefined) ?? DEFAULT_SETTLE_MS,
      engineTimeoutMs: engineTimeoutMs.value,
      ...(archiveDir !== undefined ? { archiveDir } : {}),
      debug: values['debug'] === true,
    },
  };
}

// Seconds, fractions allowed (a test engine may be given 0.5), above zero and below what a timer holds.
function parseEngineTimeout(given: string | undefined): Parsed<number> {
  if (given === undefined) return { ok: true, value: DEFAULT_ENGINE_TIMEOUT_MS };
  const seconds = /^\d+(\.\d+)?$/.test(given) ? Number(given) : NaN;
  if (!(seconds > 0) || seconds > MAX_ENGINE_TIMEOUT_S) {
    return { ok: false, reason: `--engine-timeout must be a number of seconds above 0 and at most ${MAX_ENGINE_TIMEOUT_S}, got "${given}"` };
  }
  return { ok: true, value: Math.max(1, Math.round(seconds * 1000)) };
}
