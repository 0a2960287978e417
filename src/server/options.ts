// The seat's flags (DESIGN §10): parsed once, validated, defaults named.
import type { BusOptions } from '../shared/bus.ts';
import { BUS_FLAGS, busOptionsFrom } from '../shared/bus-flags.ts';
import { DEFAULT_ARCHIVES } from '../shared/buckets.ts';
import { CONSUMERS_BESIDE_NODES, CONSUMERS_PER_NODE, DEFAULT_MESH_NODES } from '../shared/bucket-spec.ts';
import type { InitRequest } from './commands/init.ts';
import { VERB_WHATS } from '../shared/schemas.ts';
import { describeFlags, parseFlags, type FlagSpec } from '../shared/flags.ts';
import { DEFAULT_STATUS_LIMIT } from './commands/status/command.ts';
import { isName } from '../shared/keys.ts';
import { loginCollision } from './commands/bus-config/config.ts';
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

const STATUS_FLAGS: readonly FlagSpec[] = [
  ...BUS_FLAGS,
  { name: 'limit', type: 'int', arg: 'N', help: `reports per request (default ${DEFAULT_STATUS_LIMIT})` },
  { name: 'json', type: 'bool', help: 'print JSON instead of tables' },
];

const INIT_FLAGS: readonly FlagSpec[] = [
  ...BUS_FLAGS,
  { name: 'replicas', env: 'MESH_REPLICAS', type: 'int', arg: 'N', help: `copies each bucket keeps, 1–5 (default ${DEFAULT_REPLICAS})` },
  { name: 'provider', type: 'list', arg: 'NAME', help: 'a provider whose <NAME>_bound bucket to create (repeat)' },
  { name: 'nodes', type: 'int', arg: 'N', help: `the nodes the mesh will have; each stream allows ${CONSUMERS_PER_NODE} consumers a node and ${CONSUMERS_BESIDE_NODES} more, fixed when it is created (default ${DEFAULT_MESH_NODES})` },
  { name: 'archives', env: 'MESH_ARCHIVES_BUCKET', type: 'string', arg: 'BUCKET', help: `object-store bucket of module archives (default ${DEFAULT_ARCHIVES})` },
];

/** Where bus-config keeps the seeds when --credentials is not given. */
export const DEFAULT_CREDENTIALS_DIR = 'mesh-credentials';
/** Where the generated configuration listens when --listen is not given. */
export const DEFAULT_LISTEN = '0.0.0.0:4222';
/** JetStream's store directory when --store-dir is not given. */
export const DEFAULT_STORE_DIR = '/var/lib/nats/jetstream';

const BUS_CONFIG_FLAGS: readonly FlagSpec[] = [
  { name: 'node', type: 'list', arg: 'NAME', help: 'a node of the mesh (repeat, or comma-separated)' },
  { name: 'provider', type: 'list', arg: 'NAME', help: 'a provider whose <NAME>_bound bucket nodes read (repeat)' },
  { name: 'credentials', env: 'MESH_CREDENTIALS_DIR', type: 'string', arg: 'DIR', help: `the users' nkey seeds, one <user>.nk each, mode 0600; missing ones are generated (default ${DEFAULT_CREDENTIALS_DIR})` },
  { name: 'out', type: 'string', arg: 'FILE', help: 'write the configuration to FILE instead of stdout' },
  { name: 'show-credentials', type: 'bool', help: "print each user's seed to stdout instead of the configuration" },
  { name: 'archives', env: 'MESH_ARCHIVES_BUCKET', type: 'string', arg: 'BUCKET', help: `object-store bucket of module archives (default ${DEFAULT_ARCHIVES})` },
  { name: 'listen', type: 'string', arg: 'HOST:PORT', help: `where nats-server listens (default ${DEFAULT_LISTEN})` },
  { name: 'store-dir', type: 'string', arg: 'DIR', help: `JetStream's store directory (default ${DEFAULT_STORE_DIR})` },
];

/** What bus-config was asked for. */
export type BusConfigOptions = {
  command: 'bus-config';
  nodes: string[];
  providers: string[];
  credentials: string;
  out?: string;
  showCredentials: boolean;
  archives: string;
  listen: string;
  storeDir: string;
};

/** What init was asked for. */
export type InitOptions = { command: 'init'; bus: BusOptions } & InitRequest;

/** What the seat was asked to do. */
export type ServerOptions =
  | { command: 'help'; text: string }
  | { command: 'version' }
  | { command: 'serve'; bus: BusOptions; archives: string; replicas: number; debug: boolean }
  | { command: 'query'; bus: BusOptions; what: string; node?: string; module?: string; collection?: string; contributor?: string; limit?: number; json: boolean }
  | { command: 'status'; bus: BusOptions; node?: string; module?: string; limit?: number; json: boolean }
  | BusConfigOptions
  | InitOptions;

/** The text of --help. */
export function serverHelp(): string {
  return [
    'mesh-provisioner — the seat: keeps the registry, composes plans, answers mesh-provisioner.provisioning.',
    '',
    'usage: node dist/server.js [flags]',
    '       node dist/server.js query <registry|needs|applied|collect|health> [flags]',
    '       node dist/server.js status [<node> [<module>]] [flags]',
    '       node dist/server.js bus-config --node NAME [--node NAME …] [--provider NAME …] [flags]',
    '       node dist/server.js init [--replicas N] [--provider NAME …] [--nodes N] [flags]   (with the admin login)',
    '',
    'flags:',
    describeFlags(SERVE_FLAGS),
    '',
    'query flags:',
    describeFlags(QUERY_FLAGS.filter((f) => !BUS_FLAGS.includes(f))),
    '',
    'status prints the fleet per node (applied, waiting, failed, the oldest waiting value, modules held unpublished),',
    "or a node's modules in detail (each waited value and its owner, the last report, the files). status flags:",
    describeFlags(STATUS_FLAGS.filter((f) => !BUS_FLAGS.includes(f))),
    '',
    'bus-config prints the nats-server configuration of a mesh (DESIGN §11): the buckets in account MESH,',
    'each node an account of its own importing exactly its subjects; users log in with nkeys.',
    'bus-config flags:',
    describeFlags(BUS_CONFIG_FLAGS),
    '',
    'init creates every bucket of the mesh (the seat\'s six, the inputs, the archives store, each provider\'s',
    '<NAME>_bound) with exactly its own subject, hardened, and a bounded max_consumers; run it with the admin',
    'login before the seat, and again when a provider is added. init flags:',
    describeFlags(INIT_FLAGS.filter((f) => !BUS_FLAGS.includes(f))),
    '',
    'SIGTERM drains and exits 0. Logs go to stderr, with sd-daemon prefixes under systemd.',
  ].join('\n');
}

/** Parses argv and env; a reason names the flag and what is wrong. */
export function parseServerOptions(argv: readonly string[], env: NodeJS.ProcessEnv): Parsed<ServerOptions> {
  if (argv[0] === 'bus-config') return parseBusConfig(argv.slice(1), env);
  if (argv[0] === 'status') return parseStatus(argv.slice(1), env);
  if (argv[0] === 'init') return parseInit(argv.slice(1), env);
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

function parseStatus(argv: readonly string[], env: NodeJS.ProcessEnv): Parsed<ServerOptions> {
  const parsed = parseFlags(argv, env, STATUS_FLAGS);
  if (!parsed.ok) return parsed;
  const { values, positional, help, version } = parsed.value;
  if (help) return { ok: true, value: { command: 'help', text: serverHelp() } };
  if (version) return { ok: true, value: { command: 'version' } };
  const bus = busOptionsFrom(values, 'mesh-provisioner status');
  if (!bus.ok) return bus;
  const [node, module, ...extra] = positional;
  if (extra.length > 0) return { ok: false, reason: `unexpected argument "${extra[0]}" (status takes a node and a module at most)` };
  for (const [what, name] of [['node', node], ['module', module]] as const) {
    if (name !== undefined && !isName(name)) return { ok: false, reason: `status: ${what} "${name}" is not a valid name` };
  }
  const limit = values['limit'] as number | undefined;
  if (limit !== undefined && limit < 1) return { ok: false, reason: '--limit must be at least 1' };
  return {
    ok: true,
    value: {
      command: 'status', bus: bus.value, json: values['json'] === true,
      ...(node === undefined ? {} : { node }), ...(module === undefined ? {} : { module }), ...(limit === undefined ? {} : { limit }),
    },
  };
}

function parseBusConfig(argv: readonly string[], env: NodeJS.ProcessEnv): Parsed<ServerOptions> {
  const parsed = parseFlags(argv, env, BUS_CONFIG_FLAGS);
  if (!parsed.ok) return parsed;
  const { values, positional, help, version } = parsed.value;
  if (help) return { ok: true, value: { command: 'help', text: serverHelp() } };
  if (version) return { ok: true, value: { command: 'version' } };
  if (positional.length > 0) return { ok: false, reason: `unexpected argument "${positional[0]}" (see --help)` };
  const nodes = (values['node'] as string[] | undefined) ?? [];
  const providers = (values['provider'] as string[] | undefined) ?? [];
  if (nodes.length === 0) return { ok: false, reason: 'bus-config needs at least one --node' };
  for (const [flag, names] of [['--node', nodes], ['--provider', providers]] as const) {
    const bad = names.find((n) => !isName(n));
    if (bad !== undefined) return { ok: false, reason: `${flag}: "${bad}" is not a valid name (a-z, 0-9 and -, at most 63)` };
  }
  const clash = loginCollision({ nodes, providers });
  if (clash) return { ok: false, reason: `bus-config: ${clash}` };
  const archives = (values['archives'] as string | undefined) ?? DEFAULT_ARCHIVES;
  if (!/^[A-Za-z0-9_-]+$/.test(archives)) return { ok: false, reason: `--archives: "${archives}" is not a valid bucket name` };
  const listen = (values['listen'] as string | undefined) ?? DEFAULT_LISTEN;
  if (!/^[^\s:]+:\d{1,5}$/.test(listen)) return { ok: false, reason: `--listen: "${listen}" is not HOST:PORT` };
  const out = values['out'] as string | undefined;
  return {
    ok: true,
    value: {
      command: 'bus-config', nodes, providers, archives, listen,
      credentials: (values['credentials'] as string | undefined) ?? DEFAULT_CREDENTIALS_DIR,
      storeDir: (values['store-dir'] as string | undefined) ?? DEFAULT_STORE_DIR,
      showCredentials: values['show-credentials'] === true,
      ...(out ? { out } : {}),
    },
  };
}

function parseInit(argv: readonly string[], env: NodeJS.ProcessEnv): Parsed<ServerOptions> {
  const parsed = parseFlags(argv, env, INIT_FLAGS);
  if (!parsed.ok) return parsed;
  const { values, positional, help, version } = parsed.value;
  if (help) return { ok: true, value: { command: 'help', text: serverHelp() } };
  if (version) return { ok: true, value: { command: 'version' } };
  if (positional.length > 0) return { ok: false, reason: `unexpected argument "${positional[0]}" (see --help)` };
  const bus = busOptionsFrom(values, 'mesh-provisioner init');
  if (!bus.ok) return bus;
  const replicas = (values['replicas'] as number | undefined) ?? DEFAULT_REPLICAS;
  if (replicas < 1 || replicas > 5) return { ok: false, reason: `--replicas must be 1 to 5, got ${replicas}` };
  const nodes = (values['nodes'] as number | undefined) ?? DEFAULT_MESH_NODES;
  if (nodes < 1 || nodes > MAX_MESH_NODES) return { ok: false, reason: `--nodes must be 1 to ${MAX_MESH_NODES}, got ${nodes}` };
  const providers = (values['provider'] as string[] | undefined) ?? [];
  const bad = providers.find((p) => !isName(p));
  if (bad !== undefined) return { ok: false, reason: `--provider: "${bad}" is not a valid name (a-z, 0-9 and -, at most 63)` };
  const archives = (values['archives'] as string | undefined) ?? DEFAULT_ARCHIVES;
  if (!/^[A-Za-z0-9_-]+$/.test(archives)) return { ok: false, reason: `--archives: "${archives}" is not a valid bucket name` };
  return { ok: true, value: { command: 'init', bus: bus.value, replicas, nodes, providers, archives } };
}

/** The most nodes `init --nodes` takes. */
export const MAX_MESH_NODES = 100_000;
