// The input buckets as the input commands reach them (DESIGN §3, §13): each bound as every program
// binds a bucket — refused when it holds more than its own subject — and, when missing, created as
// `init` would on a bus without isolation, or refused on one with isolation, where only `init` makes
// buckets (each sized for the fleet, which nats-server cannot change later); every failure said as
// one line an operator can act on.
import type { KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { askedAgain, BUCKET_TIMING, BucketMissingError, BucketRefusedError, ensureBucket, inspectBucket } from '../../shared/bus/bucket-bind.ts';
import { DEFAULT_MESH_NODES, kvBucket, maxConsumersFor, type BucketSpec } from '../../shared/contract/bucket-spec.ts';
import { openKv } from '../../shared/bus/bus.ts';
import { describeBusError, errorText, isPermissionViolation, isTimeout } from '../../shared/base/errors.ts';
import { sameBytes } from '../../shared/base/bytes.ts';

/** Where an input command writes, and how a bucket it creates is made. */
export type InputBucket = {
  /** The input bucket (`mesh-controller_assignments`, `mesh-config_resolved`). */
  bucket: string;
  /** Copies the bucket keeps when this command creates it. */
  replicas: number;
};

/** A key's value as the bucket holds it now: its bytes and revision, or nothing (never written, or deleted). */
export type Stored = { value: Uint8Array; revision: number } | undefined;

/** Binds the input bucket (bindInputBucket) and opens it; `warn` hears what is said but not refused. */
export async function openInputBucket(nc: NatsConnection, input: InputBucket, warn: (line: string) => void): Promise<KV> {
  await bindInputBucket(nc, kvBucket(input.bucket), input.replicas, warn);
  return openKv(nc, input.bucket);
}

/**
 * Whether the bus isolates its logins (DESIGN §11), as a command can tell: the bus asks for a login.
 * Isolation gives every program a login of its own, so a bus that asks for none has none; one that
 * asks but holds one shared account is taken as isolated too, which costs a run of `init`, the
 * documented first step on any bus (docs/decisions.md).
 */
export function busIsolates(nc: NatsConnection): boolean {
  return nc.info?.auth_required === true;
}

/**
 * Checks an input bucket (or the archives store): refused when it holds more than its bucket;
 * when missing, made as `init` makes it on a bus without isolation (`replicas` copies, the default
 * mesh's bound on consumers), and a BucketMissingError saying to run `init` first on one with it.
 */
export async function bindInputBucket(nc: NatsConnection, spec: BucketSpec, replicas: number, warn: (line: string) => void): Promise<void> {
  if (!busIsolates(nc)) {
    await ensureBucket(nc, spec, { replicas, maxConsumers: maxConsumersFor(DEFAULT_MESH_NODES) }, warn);
    return;
  }
  // A read left unanswered (a stream choosing its leader past the read's own asks) is asked again, as a bucket a program keeps is.
  const found = await askedAgain(spec.name, BUCKET_TIMING, warn, async () => {
    const state = await inspectBucket(nc, spec);
    if (state.state === 'unchecked' && isTimeout(state.cause)) throw state.cause;
    return state;
  });
  if (found.state === 'unchecked') throw new Error(`bucket ${spec.name}: its stream could not be read: ${found.reason}`, { cause: found.cause });
  if (found.state === 'missing') {
    throw new BucketMissingError(
      `bucket ${spec.name} is missing: run \`server.js init\` with the admin login first — on a bus with logins only init makes the buckets, ` +
        'each sized by its --nodes and --replicas, which nats-server cannot change once a bucket is made',
    );
  }
  for (const w of found.warnings) warn(`bucket ${spec.name}: ${w}`);
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
