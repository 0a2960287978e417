// What a bucket of the mesh is made of (DESIGN §3, §11): its stream, the configuration `init` (or,
// on a bus without isolation, the seat) creates it with, and what about a stream makes a program
// refuse to bind it. Pure: the bus-facing half is bucket-bind.ts.
import { DiscardPolicy, type StreamConfig } from '@nats-io/jetstream';

/** A key/value bucket, or an object store. */
export type BucketKind = 'kv' | 'obj';

/** One bucket of the mesh. */
export type BucketSpec = {
  /** The bucket's name (`mesh-provisioner_plans`). */
  name: string;
  /** What the bucket is: a key/value bucket or an object store. */
  kind: BucketKind;
};

/** A key/value bucket. */
export function kvBucket(name: string): BucketSpec {
  return { name, kind: 'kv' };
}

/** An object store. */
export function objBucket(name: string): BucketSpec {
  return { name, kind: 'obj' };
}

/** The stream holding a bucket: `KV_<name>` or `OBJ_<name>`. */
export function streamOf(spec: BucketSpec): string {
  return `${spec.kind === 'kv' ? 'KV' : 'OBJ'}_${spec.name}`;
}

/** The one subject a bucket's stream holds: `$KV.<name>.>` or `$O.<name>.>`. */
export function ownSubject(spec: BucketSpec): string {
  return `${spec.kind === 'kv' ? '$KV' : '$O'}.${spec.name}.>`;
}

/** Consumers a stream allows for each node (its watches, and those a lost connection leaves for 5 minutes). */
export const CONSUMERS_PER_NODE = 8;
/** Consumers a stream allows beyond the nodes': the seat, the vault, providers and an operator's tools. */
export const CONSUMERS_BESIDE_NODES = 64;
/** The nodes `init` makes room for without `--nodes`, and a bucket the seat creates on a bus without isolation. */
export const DEFAULT_MESH_NODES = 100;

/** The `max_consumers` of every stream of a mesh of `nodes` nodes. */
export function maxConsumersFor(nodes: number): number {
  return CONSUMERS_PER_NODE * nodes + CONSUMERS_BESIDE_NODES;
}

/** How a bucket is created: its copies and its bound on consumers. */
export type BucketSize = { replicas: number; maxConsumers: number };

/**
 * The stream configuration a bucket is created with: exactly its own subject, a bounded
 * `max_consumers`, and for a key/value bucket the hardening of DESIGN §11 (no rollups, purges or
 * deletes, direct get). The archives store keeps rollups (an object's meta is rolled up on a put).
 */
export function streamConfigOf(spec: BucketSpec, size: BucketSize): Partial<StreamConfig> & { name: string } {
  const common = {
    name: streamOf(spec),
    subjects: [ownSubject(spec)],
    discard: DiscardPolicy.New,
    allow_direct: true,
    num_replicas: size.replicas,
    max_consumers: size.maxConsumers,
  };
  if (spec.kind === 'obj') return { ...common, allow_rollup_hdrs: true };
  return { ...common, max_msgs_per_subject: 1, ...KV_HARDENING };
}

/** The flags every key/value bucket of the mesh holds (DESIGN §11). */
export const KV_HARDENING = { allow_rollup_hdrs: false, deny_delete: true, deny_purge: true, allow_direct: true } as const;

/** Why a program refuses a stream: `fixable` when the admin login can set it right by an update. */
export type BucketProblem = { text: string; fixable: boolean };

/**
 * What about a stream makes it more than its bucket: a subject besides its own, a mirror, a
 * source, a republish or a transform (none fixable by `init`: the stream may hold what it
 * captured), and a key/value bucket without the hardening (fixable). Empty when it is as it should be.
 */
export function bucketProblems(spec: BucketSpec, config: Partial<StreamConfig>): BucketProblem[] {
  const problems: BucketProblem[] = [];
  const refuse = (text: string) => problems.push({ text, fixable: false });
  const subjects = config.subjects ?? [];
  const own = ownSubject(spec);
  const within = (s: string) => s === own || (spec.kind === 'obj' && s.startsWith(own.slice(0, -1)) && s !== own.slice(0, -1));
  const foreign = subjects.filter((s) => !within(s));
  if (foreign.length > 0) refuse(`holds ${foreign.map((s) => JSON.stringify(s)).join(', ')} besides its own subject ${own}`);
  if (subjects.length === 0 || (spec.kind === 'kv' && !subjects.includes(own))) refuse(`does not hold its own subject ${own}`);
  if (config.mirror) refuse(`mirrors stream ${JSON.stringify(config.mirror.name)}`);
  if (config.sources && config.sources.length > 0) refuse(`sources ${config.sources.map((s) => JSON.stringify(s.name)).join(', ')}`);
  if (config.republish) refuse(`republishes ${JSON.stringify(config.republish.src)} to ${JSON.stringify(config.republish.dest)}`);
  const transform = (config as { subject_transform?: { src?: string; dest?: string } }).subject_transform;
  if (transform) refuse(`transforms ${JSON.stringify(transform.src)} to ${JSON.stringify(transform.dest)}`);
  if (spec.kind === 'kv') {
    for (const [flag, want] of Object.entries(KV_HARDENING)) {
      const has = (config as Record<string, unknown>)[flag] === true;
      if (has !== want) problems.push({ text: `has ${flag} ${has} (wants ${want})`, fixable: true });
    }
  }
  return problems;
}

/** What is said about a stream without refusing it: an unbounded `max_consumers` (nats-server cannot change it on an existing stream). */
export function bucketWarnings(config: Partial<StreamConfig>): string[] {
  const max = config.max_consumers ?? -1;
  return max > 0
    ? []
    : ['has no bound on consumers (max_consumers unlimited): a login may fill the server with consumers; `init` creates it bounded, re-create it'];
}

/** One line saying every problem of a bucket, for a log or an exit line. */
export function describeProblems(spec: BucketSpec, problems: readonly BucketProblem[]): string {
  return `bucket ${spec.name} (stream ${streamOf(spec)}) ${problems.map((p) => p.text).join('; ')}: refused`;
}
