// What `init` compares on a stream that is already there (DESIGN §3, §11, §13): every field it would
// create the bucket with — the hardening, the discard policy, one value a key, what it keeps and for
// how long, the copies, the bound on consumers — against the stream's, each difference with the update that would bring the stream
// to it and what the operator can do when nats-server refuses that update. Pure: bucket.ts asks.
import { StorageType, type StreamConfig } from '@nats-io/jetstream';
import { bucketProblems, CONSUMERS_BESIDE_NODES, CONSUMERS_PER_NODE, KV_HARDENING, streamConfigOf, streamOf } from '../../../shared/contract/bucket-spec.ts';
import type { BucketSize, BucketSpec } from '../../../shared/contract/bucket-spec.ts';

/** One way a stream is not what `init` would make. */
export type Drift = {
  /** What is there against what was asked, for the line: `max_consumers is 88, asked 464`. */
  text: string;
  /** What is said once the update brought it: `num_replicas was 1, now 3`. */
  done: string;
  /** The fields an update sets; absent when no update is asked (nats-server would take it and not do it). */
  update?: Partial<StreamConfig>;
  /** Why no update is asked, when none is. */
  stays?: string;
  /** What the operator can do when the stream is not brought to what was asked. */
  fix: string;
  /** Whether the difference is copies the bus cannot hold, for the closing hint of replicas-hint.ts. */
  tooManyReplicas?: boolean;
};

/** What `init` was asked for, as the fixes name it. */
export type Asked = BucketSize & { nodes: number; replicasFrom: string };

/** The fields compared one by one (the hardening of a key/value bucket is compared as a whole). */
const PLAIN_FIELDS = ['discard', 'max_msgs_per_subject', 'allow_direct', 'allow_rollup_hdrs'] as const;

/**
 * Every difference between the stream there (`config`; `clustered` when its server is in a cluster)
 * and what init makes, in the order init updates them: a bound on consumers last, as nats-server
 * 2.9 refuses to change it. Empty when the stream is as asked. Subjects, mirrors and sources are
 * bucketProblems' to refuse, not a difference to update.
 */
export function streamDrifts(spec: BucketSpec, asked: Asked, config: Partial<StreamConfig>, clustered: boolean): Drift[] {
  const want = streamConfigOf(spec, asked) as Record<string, unknown>;
  const has = config as Record<string, unknown>;
  const remove = removeAdvice(spec);
  const drifts: Drift[] = [];
  const hardening = bucketProblems(spec, config).filter((p) => p.fixable);
  if (hardening.length > 0) {
    const text = hardening.map((p) => p.text).join(', ');
    drifts.push({ text: `lacks the hardening: it ${text}`, done: `hardened (it ${text})`, update: { ...KV_HARDENING }, fix: remove });
  }
  for (const field of PLAIN_FIELDS) {
    if (!(field in want) || (spec.kind === 'kv' && field in KV_HARDENING)) continue;
    const there = has[field] ?? (typeof want[field] === 'boolean' ? false : undefined);
    if (there === want[field]) continue;
    const shown = `${String(there)}, asked ${String(want[field])}`;
    drifts.push({
      text: `${field} is ${shown}`,
      done: `${field} was ${String(there)}, now ${String(want[field])}`,
      update: { [field]: want[field] },
      fix: remove,
    });
  }
  drifts.push(...keepingDrifts(spec, config));
  const copies = replicasDrift(spec, config.num_replicas ?? 1, asked, clustered);
  if (copies) drifts.push(copies);
  const bound = config.max_consumers ?? -1;
  if (bound !== asked.maxConsumers) drifts.push(consumersDrift(spec, bound, asked));
  return drifts;
}

/**
 * What a stream keeps, which init makes without a bound: a bucket of the mesh holds each key's latest
 * value for as long as it is not replaced, so a stream made by another tool with an age, a size, a
 * count or a message size would lose values or refuse writes. Brought back to no bound by an update;
 * a stream kept in memory (a server's restart loses it) cannot change its storage, only be made again.
 */
function keepingDrifts(spec: BucketSpec, config: Partial<StreamConfig>): Drift[] {
  const drifts: Drift[] = [];
  const remove = removeAdvice(spec);
  if (config.storage !== undefined && config.storage !== StorageType.File) {
    drifts.push({
      text: `keeps its values in ${config.storage}, asked file (a restart of its server loses them)`,
      done: `storage is file`,
      stays: 'nats-server cannot change the storage of a stream',
      fix: remove,
    });
  }
  const unbounded = (field: 'max_bytes' | 'max_msgs' | 'max_msg_size', what: string, loses: string) => {
    const there = config[field] ?? -1;
    if (there <= 0) return;
    drifts.push({
      text: `${field} is ${there} (${what}), asked no bound: ${loses}`,
      done: `${field} was ${there}, now no bound`,
      update: { [field]: -1 },
      fix: remove,
    });
  };
  const age = config.max_age ?? 0;
  if (age > 0) {
    drifts.push({
      text: `max_age is ${ageText(age)}, asked none: every value older is dropped`,
      done: `max_age was ${ageText(age)}, now none`,
      update: { max_age: 0 },
      fix: remove,
    });
  }
  unbounded('max_bytes', 'bytes', 'once full, every write is refused');
  unbounded('max_msgs', 'values', 'once full, every write is refused');
  unbounded('max_msg_size', 'bytes a value', 'a larger value is refused');
  return drifts;
}

/** A stream's `max_age` (nanoseconds) as a person reads it: `3600 s`. */
function ageText(nanos: number): string {
  return `${Math.round(nanos / 1e9)} s`;
}

/**
 * The copies, or undefined when as asked. A server outside a cluster keeps one copy whatever its
 * stream records — nats-server 2.9 takes an update to 3 replicas there, records 3 and keeps 1 — so
 * more than one is never asked of it. Copies a cluster keeps are never taken away: `--replicas`
 * defaults to 1, and init run again to add a provider without it would.
 */
function replicasDrift(spec: BucketSpec, recorded: number, asked: Asked, clustered: boolean): Drift | undefined {
  const update = { num_replicas: asked.replicas };
  const done = `num_replicas was ${recorded}, now ${asked.replicas}`;
  const setting = (n: number) => (asked.replicasFrom.startsWith('--') ? `--replicas ${n}` : `${asked.replicasFrom}=${n}`);
  if (!clustered && asked.replicas > 1) {
    const record = recorded > 1 ? ` (its stream records ${recorded})` : '';
    const stays = 'its server is not in a cluster, where nats-server would record more copies and keep one';
    return { text: `keeps 1 copy${record}, asked ${asked.replicas}`, done, stays, fix: `run init with ${setting(1)}`, tooManyReplicas: true };
  }
  if (recorded === asked.replicas) return undefined;
  const text = `num_replicas is ${recorded}, asked ${asked.replicas}`;
  if (clustered && recorded > asked.replicas) {
    const fewer = `to have fewer, the NATS CLI's \`nats stream edit ${streamOf(spec)} --replicas ${asked.replicas}\` with the admin login`;
    return { text, done, stays: 'init never takes copies away', fix: `to keep them, run init with ${setting(recorded)}; ${fewer}` };
  }
  return { text, done, update, fix: `run init with ${setting(recorded)}, or ask at most the cluster's number of JetStream servers` };
}

/** The bound on consumers: what is there, what was asked, and the two ways out when it cannot change. */
function consumersDrift(spec: BucketSpec, bound: number, asked: Asked): Drift {
  const wanted = `${asked.maxConsumers} (${asked.nodes} node${asked.nodes === 1 ? '' : 's'})`;
  const update = { max_consumers: asked.maxConsumers };
  const done = `max_consumers was ${bound}, now ${wanted}`;
  if (bound <= 0) return { text: `has no bound on consumers, asked ${wanted}`, done, update, fix: removeAdvice(spec) };
  const madeFor = (bound - CONSUMERS_BESIDE_NODES) / CONSUMERS_PER_NODE;
  const keep = Number.isInteger(madeFor) && madeFor >= 1 ? `to keep it, run init with --nodes ${madeFor} (the size it was made for); ` : '';
  return { text: `max_consumers is ${bound}, asked ${wanted}`, done, update, fix: `${keep}to make it the size asked, ${removeAdvice(spec)}` };
}

/** The way out when a stream cannot be updated: made again, by init. */
function removeAdvice(spec: BucketSpec): string {
  const stream = streamOf(spec);
  return `save what you need, remove the stream with the admin login (the NATS CLI's \`nats stream rm ${stream}\`) and run init again`;
}
