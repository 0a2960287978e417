// The command line of `bus-config` (DESIGN §11): its flags, its --help and its parser, every name
// checked against its grammar and no two logins sharing a name, before anything is generated.
import { openFlagsOnly, type Asked, type FlagTable } from '../../../shared/cli/flags.ts';
import { checkName, isName } from '../../../shared/contract/keys.ts';
import { ok, type Parsed } from '../../../shared/base/result.ts';
import type { BusConfigOptions } from '../../options.ts';
import { commandHelpText, type CommandHelp } from '../command-help.ts';
import { ARCHIVES_FLAG, parseArchives } from '../common-flags.ts';
import { LEAF_FLAGS, parseLeafFlags } from './leaf-flags.ts';
import { loginCollision } from './users.ts';

/** Where bus-config keeps the seeds when --credentials is not given. */
export const DEFAULT_CREDENTIALS_DIR = 'mesh-credentials';
/** Where the generated configuration listens when --listen is not given. */
export const DEFAULT_LISTEN = '0.0.0.0:4222';
/** JetStream's store directory when --store-dir is not given. */
export const DEFAULT_STORE_DIR = '/var/lib/nats/jetstream';

/** The flags of `bus-config`: it reaches no bus. */
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

/** What `bus-config --help` says, and the seat's --help of it. */
export const BUS_CONFIG_HELP: CommandHelp = {
  name: 'bus-config',
  usage: 'node server.js bus-config --node NAME [--node NAME …] [--provider NAME …] [flags]',
  about: [
    'bus-config prints the nats-server configuration of a mesh (DESIGN §11): the buckets in account MESH,',
    'each node an account of its own importing exactly its subjects; users log in with nkeys.',
  ],
  flags: BUS_CONFIG_FLAGS,
  bus: false,
};

/** Parses `bus-config …` (argv after the word `bus-config`); a reason names the flag and the name. */
export function parseBusConfig(argv: readonly string[], env: NodeJS.ProcessEnv): Parsed<BusConfigOptions | Asked> {
  const opened = openFlagsOnly(argv, env, BUS_CONFIG_FLAGS, commandHelpText(BUS_CONFIG_HELP));
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
