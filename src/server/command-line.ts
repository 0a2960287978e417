// The seat's command line (DESIGN §10): the flag tables, --help, and the parser that fills the
// options of options.ts, rejecting what is wrong naming the flag.
import { BUS_FLAGS, busOptionsFrom } from '../shared/cli/bus-flags.ts';
import { DEFAULT_ARCHIVES } from '../shared/contract/buckets.ts';
import { CONSUMERS_BESIDE_NODES, CONSUMERS_PER_NODE, DEFAULT_MESH_NODES } from '../shared/bus/bucket-spec.ts';
import { describeFlags, openCommand, openFlagsOnly, unexpectedArgument, valueSource, type FlagTable } from '../shared/cli/flags.ts';
import { checkName, isName } from '../shared/contract/keys.ts';
import { commandFirst } from '../shared/cli/command-first.ts';
import { fail, ok, type Parsed } from '../shared/base/result.ts';
import { buildProblem } from '../shared/contract/fields.ts';
import { VERB_WHATS } from '../shared/contract/verb.ts';
import { loginCollision } from './commands/bus-config/users.ts';
import { LEAF_FLAGS, parseLeafFlags } from './commands/bus-config/leaf-flags.ts';
import { ASSIGN_OWN_FLAGS, parseAssign, parseConfig, parseUnassign } from './input-command-line.ts';
import { parseRolloutCommand, ROLLOUT_FLAG, ROLLOUT_OWN_FLAGS, ROLLOUT_USAGE, rolloutHelp } from './commands/rollout/command-line.ts';
import { parseRolloutFlag } from './seat/rollout/policy.ts';
import { BACKUP_USAGE, parseBackupCommand, RESTORE_OWN_FLAGS } from './commands/backup/command-line.ts';
import {
  DEFAULT_CREDENTIALS_DIR,
  DEFAULT_LISTEN,
  DEFAULT_INIT_TIMEOUT_MS,
  DEFAULT_REPLICAS,
  DEFAULT_STATUS_LIMIT,
  DEFAULT_STORE_DIR,
  MAX_MESH_NODES,
  type ServerOptions,
} from './options.ts';

const ARCHIVES_FLAG = {
  name: 'archives',
  env: 'MESH_ARCHIVES_BUCKET',
  type: 'string',
  arg: 'BUCKET',
  help: `object-store bucket of module archives (default ${DEFAULT_ARCHIVES})`,
} as const;

const SERVE_FLAGS = [
  ...BUS_FLAGS,
  ARCHIVES_FLAG,
  { name: 'replicas', env: 'MESH_REPLICAS', type: 'int', arg: 'N', help: `copies each created bucket keeps, 1–5 (default ${DEFAULT_REPLICAS})` },
  { name: 'debug', env: 'MESH_DEBUG', type: 'bool', help: 'log debug lines' },
  ROLLOUT_FLAG,
] as const satisfies FlagTable;

// The subcommands that reach the bus list only their own flags in --help, after the seat's.
const QUERY_OWN_FLAGS = [
  { name: 'node', type: 'string', arg: 'NAME', help: 'only this node' },
  { name: 'module', type: 'string', arg: 'NAME', help: 'only this module' },
  { name: 'collection', type: 'string', arg: 'NAME', help: 'only this collection (collect)' },
  { name: 'contributor', type: 'string', arg: 'NAME', help: 'only this contributor (collect)' },
  { name: 'limit', type: 'int', arg: 'N', help: 'entries per request (default: as many as fit)' },
  { name: 'json', type: 'bool', help: 'print JSON instead of a table' },
] as const satisfies FlagTable;

const STATUS_OWN_FLAGS = [
  { name: 'limit', type: 'int', arg: 'N', help: `reports or health entries per request (default ${DEFAULT_STATUS_LIMIT})` },
  { name: 'json', type: 'bool', help: 'print JSON instead of tables' },
] as const satisfies FlagTable;

const INIT_OWN_FLAGS = [
  { name: 'replicas', env: 'MESH_REPLICAS', type: 'int', arg: 'N', help: `copies each bucket keeps, 1–5 (default ${DEFAULT_REPLICAS})` },
  { name: 'provider', type: 'list', arg: 'NAME', help: 'a provider whose <NAME>_bound bucket to create (repeat)' },
  {
    name: 'nodes',
    type: 'int',
    arg: 'N',
    help: `the nodes the mesh will have; each stream allows ${CONSUMERS_PER_NODE} consumers a node and ${CONSUMERS_BESIDE_NODES} more, fixed when it is created (default ${DEFAULT_MESH_NODES})`,
  },
  {
    name: 'timeout',
    type: 'string',
    arg: 'S',
    help: `give up after S seconds waiting for a bus that does not answer yet (a cluster electing its leader), naming the bucket (default ${DEFAULT_INIT_TIMEOUT_MS / 1000})`,
  },
  ARCHIVES_FLAG,
] as const satisfies FlagTable;

const PUBLISH_OWN_FLAGS = [
  {
    name: 'composition',
    type: 'string',
    arg: 'FILE',
    help: 'the composition: {module, build, published?, provisioning, rollout?} (DESIGN §4 without archive)',
  },
  { name: 'build', type: 'string', arg: 'B', help: "the build, in place of the file's" },
  { name: 'dry-run', type: 'bool', help: 'say what would be written (the archive, the composition) and write nothing' },
  ARCHIVES_FLAG,
] as const satisfies FlagTable;

const BUS_CONFIG_FLAGS = [
  { name: 'node', type: 'list', arg: 'NAME', help: 'a node of the mesh (repeat, or comma-separated)' },
  { name: 'provider', type: 'list', arg: 'NAME', help: 'a provider whose <NAME>_bound bucket nodes read (repeat)' },
  {
    name: 'credentials',
    env: 'MESH_CREDENTIALS_DIR',
    type: 'string',
    arg: 'DIR',
    help: `the users' nkey seeds, one <user>.nk each, mode 0600; missing ones are generated (default ${DEFAULT_CREDENTIALS_DIR})`,
  },
  { name: 'out', type: 'string', arg: 'FILE', help: 'write the configuration to FILE instead of stdout' },
  { name: 'show-credentials', type: 'bool', help: "print each user's seed to stdout instead of the configuration" },
  ARCHIVES_FLAG,
  { name: 'listen', type: 'string', arg: 'HOST:PORT', help: `where nats-server listens (default ${DEFAULT_LISTEN})` },
  { name: 'store-dir', type: 'string', arg: 'DIR', help: `JetStream's store directory (default ${DEFAULT_STORE_DIR})` },
  ...LEAF_FLAGS,
] as const satisfies FlagTable;

/** A command of server.js whose --help is its own: its usage line, what it does, its own flags, and whether it reaches the bus. */
type CommandHelp = { usage: string; about: string[]; flags: FlagTable; bus: boolean };

const COMMAND_HELP = {
  query: {
    usage: 'node server.js query <registry|needs|applied|collect|health> [flags]',
    about: ["query prints the seat's answer to one question of mesh-provisioner.provisioning, with the seat's login or admin's."],
    flags: QUERY_OWN_FLAGS,
    bus: true,
  },
  status: {
    usage: 'node server.js status [<node> [<module>]] [flags]',
    about: [
      'status prints the fleet per node (reports applied, waiting, failed; assignments the seat holds or cannot compose;',
      "the oldest waiting value), or a node's modules in detail (the last report, what the seat says, each waited value",
      'with its owner and key, the files). It exits 0 when every module shown is applied on its newest build; 1 when',
      'one is waiting, failed (or listed failed by its rolling or done rollout and not applied the new build since),',
      'held or cannot be composed, when its rollout is rolling, halted or aborted, when a key is out of shape, when a',
      "node (or module) named has nothing shown, or when the seat's verb cannot be asked; 2 on a usage error or a",
      'request the seat refuses. A removed report (a module just taken off a node) counts toward neither.',
    ],
    flags: STATUS_OWN_FLAGS,
    bus: true,
  },
  'bus-config': {
    usage: 'node server.js bus-config --node NAME [--node NAME …] [--provider NAME …] [flags]',
    about: [
      'bus-config prints the nats-server configuration of a mesh (DESIGN §11): the buckets in account MESH,',
      'each node an account of its own importing exactly its subjects; users log in with nkeys.',
    ],
    flags: BUS_CONFIG_FLAGS,
    bus: false,
  },
  init: {
    usage: 'node server.js init [--replicas N] [--provider NAME …] [--nodes N] [--timeout S] [flags]   (with the admin login)',
    about: [
      "init creates every bucket of the mesh (the seat's six, the inputs, the archives store, each provider's",
      '<NAME>_bound) with exactly its own subject, hardened, and a bounded max_consumers; run it with the admin',
      'login before the seat, and again when a provider is added. It says each bucket as it is done; a bus that does not',
      'answer yet (a cluster electing its leader) is asked again, saying so, until --timeout, then init names the bucket',
      'it waited on and exits 1.',
    ],
    flags: INIT_OWN_FLAGS,
    bus: true,
  },
  publish: {
    usage: 'node server.js publish DIR|ARCHIVE --composition FILE [--build B] [--dry-run] [flags]   (with the admin login)',
    about: [
      'publish puts a module (with the admin login): DIR packed as a tar (sorted, fixed times and owners: the same',
      'DIR gives the same digest) or ARCHIVE as it is, gzipped, in the archives store as <module>-<build>.tar.gz,',
      'and the composition with its archive in mesh-catalog_modules — after checking the composition strictly',
      '(unknown fields, rollout) and linting every template against it; a refusal writes nothing.',
    ],
    flags: PUBLISH_OWN_FLAGS,
    bus: true,
  },
} as const satisfies Record<string, CommandHelp>;

/** The --help of one command: its usage, what it does, its flags and, when it reaches the bus, the connection's. */
function commandHelp(name: keyof typeof COMMAND_HELP): () => string {
  const help: CommandHelp = COMMAND_HELP[name];
  return () =>
    [
      `usage: ${help.usage}`,
      '',
      ...help.about,
      '',
      `${name} flags:`,
      describeFlags(help.flags),
      ...(help.bus ? ['', 'flags:', describeFlags(BUS_FLAGS)] : []),
    ].join('\n');
}

/** The text of --help: the seat's, and a paragraph of each command (`<command> --help` says one). */
export function serverHelp(): string {
  const section = (name: keyof typeof COMMAND_HELP) => [
    '',
    ...COMMAND_HELP[name].about.map((l, i, all) => (i === all.length - 1 ? `${l} ${name} flags:` : l)),
    describeFlags(COMMAND_HELP[name].flags),
  ];
  return [
    'mesh-provisioner — the seat: keeps the registry, composes plans, answers mesh-provisioner.provisioning.',
    '',
    'usage: node server.js [flags]',
    ...(['query', 'status', 'bus-config', 'init'] as const).map((c) => `       ${COMMAND_HELP[c].usage}`),
    '       node server.js assign NODE MODULE [--dir NAME=PATH …] [--port NAME=N …] [--access|--seat|--machine NAME=VALUE …]',
    '       node server.js unassign NODE MODULE',
    '       node server.js config set NODE MODULE KEY VALUE | get NODE MODULE [KEY] | rm NODE MODULE KEY | import FILE',
    `       ${COMMAND_HELP.publish.usage}`,
    ROLLOUT_USAGE,
    ...BACKUP_USAGE,
    '',
    'flags:',
    describeFlags(SERVE_FLAGS),
    ...(['query', 'status', 'bus-config', 'publish', 'init'] as const).flatMap(section),
    '',
    "assign, unassign and config write the inputs (the controller's assignments, mesh-config's values), with the admin",
    'login; `assign --help` and `config --help` say each in full. assign flags:',
    describeFlags(ASSIGN_OWN_FLAGS),
    '',
    "rollout shows each module's rollout (DESIGN §12); resume lifts a halt, abort plans every node back to the last",
    'good build; both are asked of the seat and refused on a rollout that is done. rollout flags:',
    describeFlags(ROLLOUT_OWN_FLAGS),
    '',
    'backup snapshots every stream of the mesh into a directory, a bus serving or not; restore loads one into a bus',
    'without those streams, each entry with its revision (`backup --help` says both). restore flags:',
    describeFlags(RESTORE_OWN_FLAGS),
    '',
    'SIGTERM drains and exits 0. Logs go to stderr, with sd-daemon prefixes under systemd.',
  ].join('\n');
}

/** Parses argv and env; a reason names the flag and what is wrong. */
export function parseServerOptions(argv: readonly string[], env: NodeJS.ProcessEnv): Parsed<ServerOptions> {
  const [command, ...rest] = argv;
  if (command === 'bus-config') return parseBusConfig(rest, env);
  if (command === 'status') return parseStatus(rest, env);
  if (command === 'init') return parseInit(rest, env);
  if (command === 'query') return parseQuery(rest, env);
  if (command === 'assign') return parseAssign(rest, env);
  if (command === 'unassign') return parseUnassign(rest, env);
  if (command === 'config') return parseConfig(rest, env);
  if (command === 'publish') return parsePublish(rest, env);
  if (command === 'rollout') return parseRolloutCommand(rest, env, rolloutHelp);
  if (command === 'backup' || command === 'restore') return parseBackupCommand(command, rest, env);
  const served = parseServe(argv, env);
  // `--nats URL status`: the flags went first, and the seat's parser would refuse the command's word or flags.
  return served.ok ? served : fail(commandFirst(argv, SERVER_COMMANDS, 'server.js') ?? served.reason);
}

/** The commands of server.js besides the seat itself, each the first word of its command line. */
const SERVER_COMMANDS = ['bus-config', 'status', 'init', 'query', 'assign', 'unassign', 'config', 'publish', 'rollout', 'backup', 'restore'];

function parseServe(argv: readonly string[], env: NodeJS.ProcessEnv): Parsed<ServerOptions> {
  const opened = openFlagsOnly(argv, env, SERVE_FLAGS, serverHelp);
  if ('answered' in opened) return opened.answered;
  const { values } = opened;
  const bus = busOptionsFrom(values, 'mesh-provisioner');
  if (!bus.ok) return bus;
  const replicasFrom = valueSource(SERVE_FLAGS, 'replicas', opened.onCommandLine, env);
  const replicas = parseReplicas(values.replicas, replicasFrom);
  if (!replicas.ok) return replicas;
  const archives = parseArchives(values.archives);
  if (!archives.ok) return archives;
  const rollout = values.rollout === undefined ? undefined : parseRolloutFlag(values.rollout);
  if (rollout && !rollout.ok) return { ok: false, reason: `--rollout: ${rollout.reason}` };
  return ok({
    command: 'serve',
    bus: bus.value,
    archives: archives.value,
    replicas: replicas.value,
    replicasFrom,
    debug: values.debug === true,
    ...(rollout ? { rollout: rollout.value } : {}),
  });
}

function parseQuery(argv: readonly string[], env: NodeJS.ProcessEnv): Parsed<ServerOptions> {
  const opened = openCommand(argv, env, [...BUS_FLAGS, ...QUERY_OWN_FLAGS], commandHelp('query'));
  if ('answered' in opened) return opened.answered;
  const {
    values,
    positional: [what, extra],
  } = opened;
  const bus = busOptionsFrom(values, 'mesh-provisioner query');
  if (!bus.ok) return bus;
  const whats: readonly string[] = VERB_WHATS;
  if (!what || !whats.includes(what)) return { ok: false, reason: `query needs one of ${whats.join(', ')}, got ${what ?? 'nothing'}` };
  if (extra !== undefined) return unexpectedArgument(extra);
  const { node, module, collection, contributor, limit, json } = values;
  for (const [flag, name] of [
    ['node', node],
    ['module', module],
    ['contributor', contributor],
  ] as const) {
    if (name !== undefined && !isName(name)) return { ok: false, reason: `--${flag}: "${name}" is not a valid name` };
  }
  if ((collection || contributor) && what !== 'collect') return { ok: false, reason: '--collection and --contributor go with query collect only' };
  if (limit === 0) return { ok: false, reason: '--limit must be at least 1' };
  return ok({
    command: 'query',
    bus: bus.value,
    what,
    ...(node === undefined ? {} : { node }),
    ...(module === undefined ? {} : { module }),
    ...(collection === undefined ? {} : { collection }),
    ...(contributor === undefined ? {} : { contributor }),
    ...(limit === undefined ? {} : { limit }),
    json: json === true,
  });
}

function parseStatus(argv: readonly string[], env: NodeJS.ProcessEnv): Parsed<ServerOptions> {
  const opened = openCommand(argv, env, [...BUS_FLAGS, ...STATUS_OWN_FLAGS], commandHelp('status'));
  if ('answered' in opened) return opened.answered;
  const {
    values,
    positional: [node, module, extra],
  } = opened;
  const bus = busOptionsFrom(values, 'mesh-provisioner status');
  if (!bus.ok) return bus;
  if (extra !== undefined) return { ok: false, reason: `unexpected argument "${extra}" (status takes a node and a module at most)` };
  for (const [what, name] of [
    ['node', node],
    ['module', module],
  ] as const) {
    if (name !== undefined && !isName(name)) return { ok: false, reason: `status: ${what} "${name}" is not a valid name` };
  }
  const { limit } = values;
  if (limit !== undefined && limit < 1) return { ok: false, reason: '--limit must be at least 1' };
  return ok({
    command: 'status',
    bus: bus.value,
    json: values.json === true,
    ...(node === undefined ? {} : { node }),
    ...(module === undefined ? {} : { module }),
    ...(limit === undefined ? {} : { limit }),
  });
}

function parseBusConfig(argv: readonly string[], env: NodeJS.ProcessEnv): Parsed<ServerOptions> {
  const opened = openFlagsOnly(argv, env, BUS_CONFIG_FLAGS, commandHelp('bus-config'));
  if ('answered' in opened) return opened.answered;
  const { values } = opened;
  const { node: nodes = [], provider: providers = [], out } = values;
  if (nodes.length === 0) return { ok: false, reason: 'bus-config needs at least one --node' };
  for (const [flag, names] of [
    ['--node', nodes],
    ['--provider', providers],
  ] as const) {
    const bad = names.find((n) => !isName(n));
    if (bad !== undefined) return { ok: false, reason: checkName(`${flag}:`, bad)! };
  }
  const clash = loginCollision({ nodes, providers });
  if (clash) return { ok: false, reason: `bus-config: ${clash}` };
  const archives = parseArchives(values.archives);
  if (!archives.ok) return archives;
  const listen = values.listen ?? DEFAULT_LISTEN;
  if (!/^[^\s:]+:\d{1,5}$/.test(listen)) return { ok: false, reason: `--listen: "${listen}" is not HOST:PORT` };
  const leaf = parseLeafFlags(values);
  if (!leaf.ok) return leaf;
  return ok({
    command: 'bus-config',
    nodes,
    providers,
    archives: archives.value,
    listen,
    credentials: values.credentials ?? DEFAULT_CREDENTIALS_DIR,
    storeDir: values['store-dir'] ?? DEFAULT_STORE_DIR,
    showCredentials: values['show-credentials'] === true,
    ...(out ? { out } : {}),
    ...leaf.value,
  });
}

function parseInit(argv: readonly string[], env: NodeJS.ProcessEnv): Parsed<ServerOptions> {
  const opened = openFlagsOnly(argv, env, [...BUS_FLAGS, ...INIT_OWN_FLAGS], commandHelp('init'));
  if ('answered' in opened) return opened.answered;
  const { values } = opened;
  const bus = busOptionsFrom(values, 'mesh-provisioner init');
  if (!bus.ok) return bus;
  const replicasFrom = valueSource([...BUS_FLAGS, ...INIT_OWN_FLAGS], 'replicas', opened.onCommandLine, env);
  const replicas = parseReplicas(values.replicas, replicasFrom);
  if (!replicas.ok) return replicas;
  const nodes = values.nodes ?? DEFAULT_MESH_NODES;
  if (nodes < 1 || nodes > MAX_MESH_NODES) return { ok: false, reason: `--nodes must be 1 to ${MAX_MESH_NODES}, got ${nodes}` };
  const providers = values.provider ?? [];
  const bad = providers.find((p) => !isName(p));
  if (bad !== undefined) return { ok: false, reason: checkName('--provider:', bad)! };
  const archives = parseArchives(values.archives);
  if (!archives.ok) return archives;
  const timeoutMs = parseInitTimeout(values.timeout);
  if (!timeoutMs.ok) return timeoutMs;
  return ok({
    command: 'init',
    bus: bus.value,
    replicas: replicas.value,
    replicasFrom,
    nodes,
    providers,
    archives: archives.value,
    timeoutMs: timeoutMs.value,
  });
}

function parsePublish(argv: readonly string[], env: NodeJS.ProcessEnv): Parsed<ServerOptions> {
  const opened = openCommand(argv, env, [...BUS_FLAGS, ...PUBLISH_OWN_FLAGS], commandHelp('publish'));
  if ('answered' in opened) return opened.answered;
  const {
    values,
    positional: [input, extra],
  } = opened;
  if (input === undefined) return { ok: false, reason: 'publish needs a DIR or an ARCHIVE of the module' };
  if (extra !== undefined) return unexpectedArgument(extra);
  const { composition, build } = values;
  if (composition === undefined) return { ok: false, reason: 'publish needs --composition FILE' };
  const buildBad = build === undefined ? undefined : buildProblem(build);
  if (buildBad !== undefined) return { ok: false, reason: `--build ${buildBad}` };
  const bus = busOptionsFrom(values, 'mesh-provisioner publish');
  if (!bus.ok) return bus;
  const archives = parseArchives(values.archives);
  if (!archives.ok) return archives;
  return ok({
    command: 'publish',
    bus: bus.value,
    input,
    composition,
    ...(build === undefined ? {} : { build }),
    dryRun: values['dry-run'] === true,
    archives: archives.value,
  });
}

/** The copies asked, 1 to 5; a reason names `from`, the flag or the variable that gave the number. */
function parseReplicas(given: number | undefined, from: string): Parsed<number> {
  const replicas = given ?? DEFAULT_REPLICAS;
  return replicas < 1 || replicas > 5 ? { ok: false, reason: `${from} must be 1 to 5, got ${replicas}` } : ok(replicas);
}

/** The longest --timeout of init, in seconds: a day is past any cluster's election. */
const MAX_INIT_TIMEOUT_S = 86_400;

/** `--timeout S` of init, in ms: a number of seconds above 0, at most a day. */
function parseInitTimeout(given: string | undefined): Parsed<number> {
  if (given === undefined) return ok(DEFAULT_INIT_TIMEOUT_MS);
  const seconds = /^\d+(\.\d+)?$/.test(given) ? Number(given) : NaN;
  if (!(seconds > 0) || seconds > MAX_INIT_TIMEOUT_S)
    return fail(`--timeout must be a number of seconds above 0 and at most ${MAX_INIT_TIMEOUT_S}, got "${given}"`);
  return ok(Math.round(seconds * 1000));
}

function parseArchives(given: string | undefined): Parsed<string> {
  const archives = given ?? DEFAULT_ARCHIVES;
  return /^[A-Za-z0-9_-]+$/.test(archives) ? ok(archives) : { ok: false, reason: `--archives: "${archives}" is not a valid bucket name` };
}
