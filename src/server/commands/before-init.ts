// What a read command says when the mesh's buckets are not made yet (DESIGN §13): on a bus that asks
// for a login only `init` makes them, and the seat waits for its buckets answering nothing, so
// `rollout`, `status` and `query` say to run `init` first — the line the input commands give
// (input-bucket.ts) — where they said `stream not found` or asked whether the seat runs.
import type { NatsConnection } from '@nats-io/transport-node';
import { bucketManager } from '../../shared/bus/bucket-bind.ts';
import { ASSIGNMENTS, MODULES, SEAT_BUCKETS } from '../../shared/contract/buckets.ts';
import { kvBucket, streamOf } from '../../shared/contract/bucket-spec.ts';
import { isStreamNotFound } from '../../shared/bus/jetstream-errors.ts';
import { busIsolates } from './input-bucket.ts';

/** The key/value buckets a seat waits for at its start, in the order it binds them: while one is missing it answers nothing. */
const SEAT_WAITS_FOR = [...SEAT_BUCKETS, ASSIGNMENTS, MODULES] as const;

/** `bucket X is missing: run init first`, worded for a bus with logins (only init makes it) or without (the seat makes it too). */
export function missingBucketLine(bucket: string, isolated: boolean): string {
  const who = isolated ? 'on a bus with logins only init makes the buckets' : 'or start the seat, which makes its own buckets on a bus without logins';
  return `bucket ${bucket} is missing: run \`server.js init\` with the admin login first (${who})`;
}

/**
 * Whether a key/value bucket's stream is not on the bus: false when it is, or when this login cannot
 * tell (not granted its stream's info, the bus not answering): the command's own error says those.
 */
export async function isBucketMissing(nc: NatsConnection, bucket: string): Promise<boolean> {
  try {
    await (await bucketManager(nc)).streams.info(streamOf(kvBucket(bucket)));
    return false;
  } catch (err) {
    return isStreamNotFound(err);
  }
}

/**
 * Why nothing answers the seat's verb, when the bus tells: on a bus with logins, the first bucket the
 * seat waits for that is missing (`init` not run), as missingBucketLine says it; undefined otherwise
 * (the seat not running, or a bus without logins, where the seat makes its buckets itself).
 */
export async function seatWaitsForInit(nc: NatsConnection): Promise<string | undefined> {
  if (!busIsolates(nc)) return undefined;
  const missing = await Promise.all(SEAT_WAITS_FOR.map((bucket) => isBucketMissing(nc, bucket)));
  const first = missing.indexOf(true);
  if (first < 0) return undefined;
  return `${missingBucketLine(SEAT_WAITS_FOR[first]!, true)}; the seat waits for it and answers nothing until then`;
}
