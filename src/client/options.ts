// The node client's flags (DESIGN §10): parsed once, validated, defaults named.
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { BusOptions } from '../shared/bus.ts';
import { BUS_FLAGS, busOptionsFrom } from '../shared/bus-flags.ts';
import { DEFAULT_FILL_SOCKET } from '../shared/fill-protocol.ts';
import { describeFlags, parseFlags, type FlagSpec } from '../shared/flags.ts';
import { isName, type Parsed } from '../shared/keys.ts';

/** The settle window when --settle is not given, in ms. */
export const DEFAULT_SETTLE_MS = 20;
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
  { name: 'debug', env: 'MESH_DEBUG', type: 'bool', help: 'log debug lines' },
];

/** What the client was asked to do. */
export type ClientOptions =
  | { command: 'help'; text: string }
  | { command: 'version' }
  | { command: 'run'; node: string; bus: BusOptions; socket: string; cache: string; settleMs: number; debug: boolean };

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
  return {
    ok: true,
    value: {
      command: 'run',
      node,
      bus: bus.value,
      socket: (values['socket'] as string | undefined) ?? DEFAULT_FILL_SOCKET,
      cache: (values['cache'] as string | undefined) ?? defaultCacheDir(env),
      settleMs: (values['settle'] as number | undefined) ?? DEFAULT_SETTLE_MS,
      debug: values['debug'] === true,
    },
  };
}
