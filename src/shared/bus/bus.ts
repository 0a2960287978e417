// Binding KV buckets (JetStream); connecting is connect.ts, re-exported here for the programs that
// import both from one place. Watching buckets is shared/bus/watch/.
import type { NatsConnection } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import { BUCKET_TIMING, ensureBucket, type BucketTiming } from './bucket-bind.ts';
import { DEFAULT_MESH_NODES, kvBucket, maxConsumersFor } from '../contract/bucket-spec.ts';

export { connectBus, drainBus, watchConnection, type BusOptions } from './connect.ts';

/** Opens a bucket bound only (no stream info asked) with direct get, as a node's grants allow. */
export async function openKv(nc: NatsConnection, bucket: string): Promise<KV> {
  return new Kvm(jetstream(nc)).open(bucket, { allow_direct: true });
}

/**
 * Binds a key/value bucket the caller keeps (the seat its six, a provider its `<provider>_bound`):
 * refused when it holds more than its bucket, created hardened when missing and the login may create
 * streams (a bus without isolation; on one with isolation `init` has made it), and opened.
 */
export async function ensureKv(
  nc: NatsConnection,
  bucket: string,
  replicas: number,
  warn?: (line: string) => void,
  timing: BucketTiming = BUCKET_TIMING,
): Promise<KV> {
  await ensureBucket(nc, kvBucket(bucket), { replicas, maxConsumers: maxConsumersFor(DEFAULT_MESH_NODES) }, warn, timing);
  return openKv(nc, bucket);
}
