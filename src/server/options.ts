// What each of the seat's commands can be asked (DESIGN §10), and the defaults its flags fall back
// on. The commands import their option types from here; the command line that fills them is
// command-line.ts.
import type { BusOptions } from '../shared/bus.ts';
import type { Asked } from '../shared/flags.ts';
import type { Rollout } from '../shared/rollout-schema.ts';
import type { RolloutOptions } from './commands/rollout/command-line.ts';

/** Copies of each created bucket when --replicas is not given. */
export const DEFAULT_REPLICAS = 1;
/** The most nodes `init --nodes` takes. */
export const MAX_MESH_NODES = 100_000;
/** Reports `status` asks per page when --limit does not say: never one request for the whole fleet. */
export const DEFAULT_STATUS_LIMIT = 1000;
/** Where bus-config keeps the seeds when --credentials is not given. */
export const DEFAULT_CREDENTIALS_DIR = 'mesh-credentials';
/** Where the generated configuration listens when --listen is not given. */
export const DEFAULT_LISTEN = '0.0.0.0:4222';
/** JetStream's store directory when --store-dir is not given. */
export const DEFAULT_STORE_DIR = '/var/lib/nats/jetstream';

/** What the seat itself is asked to run with. */
export type ServeOptions = {
  command: 'serve';
  /** How to reach the bus. */
  bus: BusOptions;
  /** The object-store bucket of module archives. */
  archives: string;
  /** Copies each bucket the seat creates keeps. */
  replicas: number;
  /** Whether debug lines are logged. */
  debug: boolean;
  /** The rollout of a composition without its own (`--rollout`, DESIGN §12); absent: every plan at once. */
  rollout?: Rollout;
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

/** What init is asked for. */
export type InitRequest = {
  /** Copies each bucket keeps. */
  replicas: number;
  /** The providers whose `<provider>_bound` buckets to create. */
  providers: string[];
  /** The nodes the mesh will have: each stream's `max_consumers` is made for that many. */
  nodes: number;
  /** The archives object store. */
  archives: string;
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
};

/** `query`, with the bus it asks on. */
export type QueryOptions = { command: 'query'; bus: BusOptions } & QueryArgs;
/** `status`, with the bus it asks on. */
export type StatusOptions = { command: 'status'; bus: BusOptions } & StatusArgs;
/** `init`, with the bus it creates the buckets on. */
export type InitOptions = { command: 'init'; bus: BusOptions } & InitRequest;

/** What the seat was asked to do. */
export type ServerOptions = Asked | ServeOptions | QueryOptions | StatusOptions | BusConfigOptions | InitOptions | RolloutOptions;
