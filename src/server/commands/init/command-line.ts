// The command line of `init` (with the admin login): its flags, its --help and its parser, the
// numbers checked against their ranges before the bus is reached.
import { BUS_FLAGS, busOptionsFrom } from '../../../shared/cli/bus-flags.ts';
import { CONSUMERS_BESIDE_NODES, CONSUMERS_PER_NODE, DEFAULT_MESH_NODES } from '../../../shared/contract/bucket-spec.ts';
import { openFlagsOnly, valueSource, type Asked, type FlagTable } from '../../../shared/cli/flags.ts';
import { checkName, isName } from '../../../shared/contract/keys.ts';
import { fail, ok, type Parsed } from '../../../shared/base/result.ts';
import { DEFAULT_REPLICAS, type InitOptions } from '../../options.ts';
import { commandHelpText, type CommandHelp } from '../command-help.ts';
import { ARCHIVES_FLAG, parseArchives, parseReplicas } from '../common-flags.ts';

/** The most nodes `init --nodes` takes. */
export const MAX_MESH_NODES = 100_000;
/** How long init waits for the bus when `--timeout` is not given, in ms. */
export const DEFAULT_INIT_TIMEOUT_MS = 60_000;
/** The longest --timeout of init, in seconds: a day is past any cluster's election. */
const MAX_INIT_TIMEOUT_S = 86_400;

/** The flags `init` takes besides the bus's. */
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

/** What `init --help` says, and the seat's --help of it. */
export const INIT_HELP: CommandHelp = {
  name: 'init',
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
};

/** Parses `init …` (argv after the word `init`); a reason names the flag or the variable. */
export function parseInit(argv: readonly string[], env: NodeJS.ProcessEnv): Parsed<InitOptions | Asked> {
  const opened = openFlagsOnly(argv, env, [...BUS_FLAGS, ...INIT_OWN_FLAGS], commandHelpText(INIT_HELP));
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

/** `--timeout S` of init, in ms: a number of seconds above 0, at most a day. */
function parseInitTimeout(given: string | undefined): Parsed<number> {
  if (given === undefined) return ok(DEFAULT_INIT_TIMEOUT_MS);
  const seconds = /^\d+(\.\d+)?$/.test(given) ? Number(given) : NaN;
  if (!(seconds > 0) || seconds > MAX_INIT_TIMEOUT_S)
    return fail(`--timeout must be a number of seconds above 0 and at most ${MAX_INIT_TIMEOUT_S}, got "${given}"`);
  return ok(Math.round(seconds * 1000));
}
