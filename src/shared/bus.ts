// Connecting to the bus, opening and creating KV buckets, and watching keys with a caught-up signal.
import { readFileSync } from 'node:fs';
import { connect, credsAuthenticator, type NatsConnection } from '@nats-io/transport-node';
import { jetstream, jetstreamManager, type JetStreamClient, type PushConsumer } from '@nats-io/jetstream';
import { Kvm, type KV, type KvEntry } from '@nats-io/kv';

/** How to reach and authenticate to the bus. */
export type BusOptions = {
  /** Every server of the cluster. */
  servers: string[];
  /** A NATS credentials file (JWT + nkey seed). */
  creds?: string;
  /** A user name (with `pass`). */
  user?: string;
  /** A password. */
  pass?: string;
  /** A token. */
  token?: string;
  /** A CA file to verify the servers' TLS certificates. */
  tlsCa?: string;
  /** The inbox prefix, `_INBOX_<node>` for a node's client (DESIGN §11). */
  inboxPrefix?: string;
  /** The connection's name, seen by the server's monitoring. */
  name: string;
};

/** Connects with reconnects forever: a daemon waits for the bus, it does not give up on it. */
export async function connectBus(opts: BusOptions): Promise<NatsConnection> {
  return connect({
    servers: opts.servers,
    name: opts.name,
    ...(opts.creds ? { authenticator: credsAuthenticator(readFileSync(opts.creds)) } : {}),
    ...(opts.user ? { user: opts.user, pass: opts.pass } : {}),
    ...(opts.token ? { token: opts.token } : {}),
    ...(opts.tlsCa ? { tls: { caFile: opts.tlsCa } } : {}),
    ...(opts.inboxPrefix ? { inboxPrefix: opts.inboxPrefix } : {}),
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
    waitOnFirstConnect: true,
  });
}

/** Opens a bucket bound only (no stream info asked) with direct get, as a node's grants allow. */
export async function openKv(nc: NatsConnection, bucket: string): Promise<KV> {
  return new Kvm(jetstream(nc)).open(bucket, { allow_direct: true });
}

/** Creates a seat bucket hardened (DESIGN §11) when it is missing, and opens it. */
export async function ensureSeatKv(nc: NatsConnection, bucket: string, replicas: number): Promise<KV> {
  const jsm = await jetstreamManager(nc);
  const stream = `KV_${bucket}`;
  try {
    await jsm.streams.info(stream);
  } catch (err) {
    if (!/stream not found/i.test(String((err as Error).message))) throw err;
    await jsm.streams.add({
      name: stream,
      subjects: [`$KV.${bucket}.>`],
      max_msgs_per_subject: 1,
      discard: 'new' as never,
      allow_direct: true,
      allow_rollup_hdrs: false,
      deny_delete: true,
      deny_purge: true,
      num_replicas: replicas,
    });
  }
  return openKv(nc, bucket);
}

/** Whether a bucket exists (needs stream-info rights: the seat's, not a node's). */
export async function bucketExists(nc: NatsConnection, bucket: string): Promise<boolean> {
  const jsm = await jetstreamManager(nc);
  try {
    await jsm.streams.info(`KV_${bucket}`);
    return true;
  } catch (err) {
    if (/stream not found/i.test(String((err as Error).message))) return false;
    throw err;
  }
}

/** One change seen by a watch: a put (with its value) or a delete. */
export type WatchEvent = { key: string; revision: number; value: Uint8Array | null };

/** A running watch. */
export type Watch = {
  /** Resolves once every value present when the watch began has been delivered. */
  caughtUp: Promise<void>;
  /** Stops the watch. */
  stop(): void;
};

/**
 * Watches the keys matching `filter` (a filtered ordered consumer, so a node's per-key grants are
 * enough and the watch is recreated with the same filter after a server restart).
 */
export async function watchKv(kv: KV, filter: string, onEvent: (event: WatchEvent) => void): Promise<Watch> {
  const iter = await kv.watch({ key: filter });
  const consumer = (iter as unknown as { _data: PushConsumer })._data;
  const pending = (await consumer.info(true)).num_pending;
  let seen = 0;
  let markCaughtUp!: () => void;
  const caughtUp = new Promise<void>((resolve) => (markCaughtUp = resolve));
  if (pending === 0) markCaughtUp();
  void (async () => {
    for await (const entry of iter) {
      onEvent(toEvent(entry));
      if (++seen === pending) markCaughtUp();
    }
  })();
  return { caughtUp, stop: () => iter.stop() };
}

function toEvent(entry: KvEntry): WatchEvent {
  const deleted = entry.operation === 'DEL' || entry.operation === 'PURGE';
  return { key: entry.key, revision: entry.revision, value: deleted ? null : entry.value };
}

/** Reads one key's value, or null when it is absent or deleted. */
export async function readKey(kv: KV, key: string): Promise<Uint8Array | null> {
  const entry = await kv.get(key);
  if (!entry || entry.operation !== 'PUT') return null;
  return entry.value;
}

/** Reads every key of a whole bucket (for the seat, which may read it whole), ignoring deletes. */
export async function readAll(kv: KV, filter = '>'): Promise<Map<string, Uint8Array>> {
  const all = new Map<string, Uint8Array>();
  const watch = await watchKv(kv, filter, (event) => {
    if (event.value) all.set(event.key, event.value);
    else all.delete(event.key);
  });
  await watch.caughtUp;
  watch.stop();
  return all;
}

/** The JetStream client of a connection. */
export function js(nc: NatsConnection): JetStreamClient {
  return jetstream(nc);
}

/** Whether two byte arrays hold the same bytes. */
export function sameBytes(a: Uint8Array | null | undefined, b: Uint8Array | null | undefined): boolean {
  if (!a || !b) return a === b;
  return a.length === b.length && Buffer.compare(a, b) === 0;
}

/** Encodes a value as the JSON bytes written to the bus. */
export function jsonBytes(value: unknown): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(value));
}
