// The seat's flags (DESIGN §10): parsed once, validated, defaults named.
import type { BusOptions } from '../shared/bus.ts';
import { BUS_FLAGS, busOptionsFrom } from '../shared/bus-flags.ts';
import { DEFAULT_ARCHIVES } from '../shared/buckets.ts';
import { VERB_WHATS } from '../shared/schemas.ts';
import { describeFlags, parseFlags, type FlagSpec } from '../shared/flags.ts';
import { isName } from '../shared/keys.ts';
import type { Parsed } from '../shared/result.ts';

const VERB_WHATS_LIST: readonly string[] = VERB_WHATS;

/** Copies of each created bucket when --replicas is not given. */
export const DEFAULT_REPLICAS = 1;

const SERVE_FLAGS: readonly FlagSpec[] = [
  ...BUS_FLAGS,
  { name: 'archives', env: 'MESH_ARCHIVES_BUCKET', type: 'string', arg: 'BUCKET', help: `object-store bucket of module archives (default ${DEFAULT_ARCHIVES})` },
  { name: 'replicas', env: 'MESH_REPLICAS', type: 'int', arg: 'N', help: `copies each created bucket keeps, 1–5 (default ${DEFAULT_REPLICAS})` },
  { name: 'debug', env: 'MESH_DEBUG', type: 'bool', help: 'log debug lines' },
];

const QUERY_FLAGS: readonly FlagSpec[] = [
  ...BUS_FLAGS,
  { name: 'node', type: 'string', arg: 'NAME', help: 'only this node' },
  { name: 'module', type: 'string', arg: 'NAME', help: 'only this module' },
  { name: 'collection', type: 'string', arg: 'NAME', help: 'only this collection (collect)' },
  { name: 'contributor', type: 'string', arg: 'NAME', help: 'only this contributor (collect)' },
  { name: 'limit', type: 'int', arg: 'N', help: 'entries per request (default: as many as fit)' },
  { name: 'json', type: 'bool', help: 'print JSON instead of a table' },
];

/** What the seat was asked to do. */
export type ServerOptions =
  | { command: 'help'; text: string }
  | { command: 'version' }
  | { command: 'serve'; bus: BusOptions; archives: string; replicas: number; debug: boolean }
  | { command: 'query'; bus: BusOptions; what: string; node?: string; module?: string; collection?: string; contributor?: string; limit?: number; json: boolean };

/** The text of --help. */
export function serverHelp(): string {
  return [
    'mesh-provisioner — the seat: keeps the registry, composes plans, answers mesh-provisioner.provisioning.',
    '',
    'usage: node dist/server.js [flags]',
    '       node dist/server.js query <registry|needs|applied|collect> [flags]',
    '',
    'flags:',
    describeFlags(SERVE_FLAGS),
    '',
    'query flags:',
    describeFlags(QUERY_FLAGS.filter((f) => !BUS_FLAGS.includes(f))),
    '',
    'SIGTERM drains and exits 0. Logs go to stderr, with sd-daemon prefixes under systemd.',
  ].join('\n');
}

/** Parses argv and env; a reason names the flag and what is wrong. */
export function parseServerOptions(argv: readonly string[], env: NodeJS.ProcessEnv): Parsed<ServerOptions> {
  const query = argv[0] === 'query';
  const parsed = parseFlags(query ? argv.slice(1) : argv, env, query ? QUERY_FLAGS : SERVE_FLAGS);
  if (!parsed.ok) return parsed;
  const { values, positional, help, version } = parsed.value;
  if (help) return { ok: true, value: { command: 'help', text: serverHelp() } };
  if (version) return { ok: true, value: { command: 'version' } };
  const bus = busOptionsFrom(values, query ? 'mesh-provisioner query' : 'mesh-provisioner');
  if (!bus.ok) return bus;
  if (!query) {
    if (positional.length > 0) return { ok: false, reason: `unexpected argument "${positional[0]}" (see --help)` };
    const replicas = (values['replicas'] as number | undefined) ?? DEFAULT_REPLICAS;
    if (replicas < 1 || replicas > 5) return { ok: false, reason: `--replicas must be 1 to 5, got ${replicas}` };
    const archives = (values['archives'] as string | undefined) ?? DEFAULT_ARCHIVES;
    if (!/^[A-Za-z0-9_-]+$/.test(archives)) return { ok: false, reason: `--archives: "${archives}" is not a valid bucket name` };
    return { ok: true, value: { command: 'serve', bus: bus.value, archives, replicas, debug: values['debug'] === true } };
  }
  const [what, ...extra] = positional;
  if (!what || !VERB_WHATS_LIST.includes(what)) return { ok: false, reason: `query needs one of ${VERB_WHATS_LIST.join(', ')}, got ${what ?? 'nothing'}` };
  if (extra.length > 0) return { ok: false, reason: `unexpected argument "${extra[0]}" (see --help)` };
  for (const flag of ['node', 'module', 'contributor'] as const) {
    const v = values[flag] as string | undefined;
    if (v !== undefined && !isName(v)) return { ok: false, reason: `--${flag}: "${v}" is not a valid name` };
  }
  if ((values['collection'] || values['contributor']) && what !== 'collect') return { ok: false, reason: '--collection and --contributor go with query collect only' };
  if (values['limit'] === 0) return { ok: false, reason: '--limit must be at least 1' };
  const pick = (k: string) => (values[k] === undefined ? {} : { [k]: values[k] });
  return { ok: true, value: { command: 'query', bus: bus.value, what, ...pick('node'), ...pick('module'), ...pick('collection'), ...pick('contributor'), ...pick('limit'), json: values['json'] === true } };
}
