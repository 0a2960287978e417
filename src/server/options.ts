// What each of the seat's commands can be asked (DESIGN §10). The commands import their option
// types from here; each command's command-line.ts (in its folder) fills them, with its own defaults.
import type { BusOptions } from '../shared/bus/bus.ts';
import type { Asked } from '../shared/cli/flags.ts';
import type { Assignment } from '../shared/contract/assignment.ts';
import type { Rollout } from '../shared/contract/rollout-schema.ts';
import type { ListenAddress } from './metrics/listen-address.ts';

/** Copies of each created bucket when --replicas is not given (the seat, init, the input commands, publish). */
export const DEFAULT_REPLICAS = 1;

/** What the seat itself is asked to run with. */
export type ServeOptions = {
  command: 'serve';
  /** How to reach the bus. */
  bus: BusOptions;
  /** The object-store bucket of module archives. */
  archives: string;
  /** Copies each bucket the seat creates keeps. */
  replicas: number;
  /** Where `replicas` came from, as an error names it: `--replicas` or `MESH_REPLICAS`. */
  replicasFrom: string;
  /** Whether debug lines are logged. */
  debug: boolean;
  /** The rollout of a composition without its own (`--rollout`, DESIGN §12); absent: every plan at once. */
  rollout?: Rollout;
  /** Where the seat serves its figures for Prometheus (`--metrics HOST:PORT`); absent: nowhere. */
  metrics?: {
    address: ListenAddress;
    /** Where the address came from, as an error names it: `--metrics` or `MESH_METRICS`. */
    from: string;
  };
};

/** What `query` asks. */
export type QueryArgs = {
  /** registry, needs, applied, collect or health (the verb judges it). */
  what: string;
  /** Only this node's keys. */
  node?: string;
  /** Only this module's keys. */
  module?: string;
  /** Only this collection's items (collect). */
  collection?: string;
  /** Only this contributor's items (collect). */
  contributor?: string;
  /** Print one JSON object instead of a table. */
  json: boolean;
  /** Entries per page asked of the verb. */
  limit?: number;
};

/** What `status` is asked. */
export type StatusArgs = {
  /** Only this node, in detail. */
  node?: string;
  /** Only this module of the node. */
  module?: string;
  /** Reports per page asked of the verb (DEFAULT_STATUS_LIMIT when absent). */
  limit?: number;
  /** Print one JSON object instead of tables. */
  json: boolean;
};

/** What `why` is asked (DESIGN §14). */
export type WhyArgs = {
  /** The node whose report is read. */
  node: string;
  /** The module of that node. */
  module: string;
  /** Only this file of the module's report. */
  path?: string;
  /** Print one JSON object instead of a table. */
  json: boolean;
};

/** What `trace` is asked (DESIGN §14). */
export type TraceArgs = {
  /** The bucket whose keys are matched. */
  bucket: string;
  /** The key pattern, `*` for one whole token. */
  pattern: string;
  /** Reports per page asked of the verb (DEFAULT_TRACE_LIMIT when absent). */
  limit?: number;
  /** Print one JSON object instead of lines. */
  json: boolean;
};

/** What init is asked for. */
export type InitRequest = {
  /** Copies each bucket keeps. */
  replicas: number;
  /** Where `replicas` came from, as an error names it: `--replicas` or `MESH_REPLICAS`. */
  replicasFrom: string;
  /** The providers whose `<provider>_bound` buckets to create. */
  providers: string[];
  /** The nodes the mesh will have: each stream's `max_consumers` is made for that many. */
  nodes: number;
  /** The archives object store. */
  archives: string;
  /** How long init waits for a bus that does not answer yet before it gives up, in ms (`--timeout`). */
  timeoutMs: number;
};

/** What bus-config was asked for. */
export type BusConfigOptions = {
  command: 'bus-config';
  /** The mesh's nodes, each an account of its own. */
  nodes: string[];
  /** The providers whose `<provider>_bound` buckets nodes read. */
  providers: string[];
  /** The directory of the users' nkey seeds. */
  credentials: string;
  /** The file the configuration is written to; absent: stdout. */
  out?: string;
  /** Print each user's seed instead of the configuration. */
  showCredentials: boolean;
  /** The object-store bucket of module archives. */
  archives: string;
  /** `host:port` nats-server listens on. */
  listen: string;
  /** JetStream's store directory. */
  storeDir: string;
  /** `host:port` the hub takes sites' leaf connections on (--leaf-listen); absent: none. */
  leafListen?: string;
  /** `host:port` the hub tells sites to reach its leaf port at (--leaf-advertise); absent: its listen address. */
  leafAdvertise?: string;
  /** The hub's JetStream domain, named when it takes leaf connections or a site's leaf file is rendered. */
  jsDomain: string;
  /** The certificate and key the hub's leaf port serves TLS with (--leaf-tls-cert, --leaf-tls-key). */
  leafTls?: { cert: string; key: string };
  /** Renders a site's leaf server instead of the hub (--leaf SITE, --hub URL…, --hub-ca FILE). */
  leaf?: { site: string; hubs: string[]; hubCa?: string };
};

/** What `publish` is asked (DESIGN §13). */
export type PublishRequest = {
  /** The module's templates: a directory (packed here) or a tar or tar.gz archive (taken as it is). */
  input: string;
  /** The composition file: DESIGN §4's composition without `archive`. */
  composition: string;
  /** The build, in place of the file's. */
  build?: string;
  /** Say what would be written, write nothing (and reach no bus). */
  dryRun: boolean;
  /** The object-store bucket the archive goes to. */
  archives: string;
};

/** `publish`, with the bus it writes to. */
export type PublishOptions = { command: 'publish'; bus: BusOptions } & PublishRequest;

/** `query`, with the bus it asks on. */
export type QueryOptions = { command: 'query'; bus: BusOptions } & QueryArgs;
/** `status`, with the bus it asks on. */
export type StatusOptions = { command: 'status'; bus: BusOptions } & StatusArgs;
/** `why`, with the bus it reads. */
export type WhyOptions = { command: 'why'; bus: BusOptions } & WhyArgs;
/** `trace`, with the bus it reads. */
export type TraceOptions = { command: 'trace'; bus: BusOptions } & TraceArgs;
/** `init`, with the bus it creates the buckets on. */
export type InitOptions = { command: 'init'; bus: BusOptions } & InitRequest;

/** What every input command (`assign`, `unassign`, `config`) runs with: the bus, as the admin login, and how a bucket it creates is made. */
export type InputCommandBase = {
  /** How to reach the bus. */
  bus: BusOptions;
  /** Copies an input bucket keeps when the command creates it (a bus without isolation; with isolation `init` has). */
  replicas: number;
};

/** `assign NODE MODULE [--dir NAME=PATH …] …`: the assignment to write, its placement checked against the grammars. */
export type AssignOptions = { command: 'assign'; assignment: Assignment } & InputCommandBase;
/** `unassign NODE MODULE`: the assignment to delete. */
export type UnassignOptions = { command: 'unassign'; node: string; module: string } & InputCommandBase;

/** Where `config set` takes its value: the argument, or stdin read whole (`-`). */
export type ValueSource = { text: string } | { stdin: true };

/** What a `config` action is asked, every name checked against its grammar. */
export type ConfigArgs =
  | { action: 'set'; node: string; module: string; key: string; value: ValueSource }
  | { action: 'get'; node: string; module: string; key?: string }
  | { action: 'rm'; node: string; module: string; key: string }
  /** `file` is a path, or `-` for stdin. */
  | { action: 'import'; file: string };
/** `config set|get|rm|import`. */
export type ConfigOptions = { command: 'config'; args: ConfigArgs } & InputCommandBase;

/** The input commands of DESIGN §13 that write the controller's and mesh-config's buckets. */
export type InputCommandOptions = AssignOptions | UnassignOptions | ConfigOptions;

/** What `rollout` was asked. */
export type RolloutOptions = {
  command: 'rollout';
  /** How to reach the bus. */
  bus: BusOptions;
  /** Show the rollouts, or ask the seat to resume or abort one. */
  op: 'show' | 'resume' | 'abort';
  /** The module: the one to show (all when absent), or the one to resume or abort. */
  module?: string;
  /** Print one JSON object instead of a table. */
  json: boolean;
};

/** What `backup` was asked. */
export type BackupOptions = { command: 'backup'; bus: BusOptions; dir: string };

/** What `restore` was asked. */
export type RestoreOptions = {
  command: 'restore';
  bus: BusOptions;
  /** The backup's directory. */
  dir: string;
  /** Copies each restored stream keeps; absent: as many as it had. */
  replicas?: number;
  /** Where `replicas` came from, as an error names it: `--replicas` or `MESH_REPLICAS`. */
  replicasFrom: string;
};

/** What the seat was asked to do. */
export type ServerOptions =
  | Asked
  | ServeOptions
  | QueryOptions
  | StatusOptions
  | WhyOptions
  | TraceOptions
  | BusConfigOptions
  | InitOptions
  | InputCommandOptions
  | PublishOptions
  | RolloutOptions
  | BackupOptions
  | RestoreOptions;

/** The name of each thing server.js can be asked to do: `serve` (the seat), a command, help or version. */
export type ServerCommand = ServerOptions['command'];

/** The options of one of them. */
export type OptionsOf<C extends ServerCommand> = Extract<ServerOptions, { command: C }>;
