// The input buckets as the input commands reach them (DESIGN §3, §13): each bound as every program
// binds a bucket — refused when it holds more than its own subject — and created as `init` would
// when it is missing and the login may create streams (a bus without isolation); every failure
// said as one line an operator can act on.
import type { KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { BucketMissingError, BucketRefusedError } from '../../shared/bucket-bind.ts';
import { ensureKv } from '../../shared/bus.ts';
import { describeBusError, errorText, isPermissionViolation } from '../../shared/errors.ts';
import { sameBytes } from '../../shared/bytes.ts';

/** Where an input command writes, and how a bucket it creates is made. */
export type InputBucket = {
  /** The input bucket (`mesh-controller_assignments`, `mesh-config_resolved`). */
  bucket: string;
  /** Copies the bucket keeps when this command creates it. */
  replicas: number;
};

/** A key's value as the bucket holds it now: its bytes and revision, or nothing (never written, or deleted). */
export type Stored = { value: Uint8Array; revision: number } | undefined;

/** Binds the input bucket: checked, created when missing where the login may, opened; `warn` hears what is said but not refused. */
export function openInputBucket(nc: NatsConnection, input: InputBucket, warn: (line: string) => void): Promise<KV> {
  return ensureKv(nc, input.bucket, input.replicas, warn);
}

/** The value stored under `key`, or nothing when the key was never written or its last write deleted it. */
export async function readStored(kv: KV, key: string): Promise<Stored> {
  const entry = await kv.get(key);
  return entry && entry.operation === 'PUT' ? { value: entry.value, revision: entry.revision } : undefined;
}

/** What a write of `value` over `stored` would change: nothing when the bytes are the same (STYLE.md habit 8). */
export function isUnchanged(stored: Stored, value: Uint8Array): boolean {
  return stored !== undefined && sameBytes(stored.value, value);
}

/**
 * One line for a failure on the bus: a refused or missing bucket as bucket-bind says it, and a
 * login the bus refuses (the seat's or a node's, which may not write inputs) told to use admin's.
 */
export function inputFailure(err: unknown, bucket: string): string {
  if (err instanceof BucketRefusedError || err instanceof BucketMissingError) return err.message;
  if (isPermissionViolation(err)) {
    return `this login may not write ${bucket}: the input commands need the admin login (its seed, admin.nk, as --nkey); the bus said: ${errorText(innermost(err))}`;
  }
  return `${bucket}: ${describeBusError(err)}`;
}

/** The error at the end of a cause chain: what the bus itself said. */
function innermost(err: unknown): unknown {
  let e = err;
  for (let depth = 0; e instanceof Error && e.cause !== undefined && depth < 8; depth++) e = e.cause;
  return e;
}
