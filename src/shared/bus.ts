// Connecting to the bus, opening and creating KV buckets, and watching keys with a caught-up signal.
import { readFileSync } from 'node:fs';
import { connect, credsAuthenticator, nkeyAuthenticator, type NatsConnection } from '@nats-io/transport-node';
import { DeliverPolicy, jetstream } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import { BucketRefusedError, bucketManager, ensureBucket, refuseBadBucket } from './bucket-bind.ts';
import { DEFAULT_MESH_NODES, kvBucket, maxConsumersFor } from './bucket-spec.ts';
import { retryWithBackoff, timerSleep, type Sleep } from './retry.ts';
import { WatchState } from './watch/state.ts';
import { keepWatch, type KeeperLog, type OrderedConsumerInternals, type WatchKeeper } from './watch/keeper.ts';

/** How to reach and authenticate to the bus. */
export type BusOptions = {
  /** Every server of the cluster. */
  servers: string[];
  /** A NATS credentials file (JWT + nkey seed). */
  creds?: string;
  /** A file holding an nkey user seed (`SU…`), as `bus-config` writes one per user. */
  nkey?: string;
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

/**
 * Connects with reconnects forever: a daemon waits for the bus, it does not give up on it.
 * `once` is for a command a person runs: one try, and an error when the bus is not there.
 */
export async function connectBus(opts: BusOptions, once = false): Promise<NatsConnection> {
  return connect({
    servers: opts.servers,
    name: opts.name,
    ...(opts.creds ? { authenticator: credsAuthenticator(readFileSync(opts.creds)) } : {}),
    ...(opts.nkey ? { authenticator: nkeyAuthenticator(new TextEncoder().encode(readFileSync(opts.nkey, 'utf8').trim())) } : {}),
    ...(opts.user ? { user: opts.user, pass: opts.pass } : {}),
    ...(opts.token ? { token: opts.token } : {}),
    ...(opts.tlsCa ? { tls: { caFile: opts.tlsCa } } : {}),
    ...(opts.inboxPrefix ? { inboxPrefix: opts.inboxPrefix } : {}),
    // No stack trace captured for every request (two Error objects a request, most of a cold
    // start's garbage); an error still says its subject and reason.
    noAsyncTraces: true,
    maxReconnectAttempts: once ? 0 : -1,
    reconnectTimeWait: 250,
    waitOnFirstConnect: !once,
  });
}

/** Logs the connection's disconnects and reconnects; `onBack` runs on each reconnect. */
export function watchConnection(nc: NatsConnection, log: { warn(l: string): void; notice(l: string): void }, onBack?: () => void): void {
  void (async () => {
    for await (const s of nc.status()) {
      const server = 'server' in s ? ` ${s.server}` : '';
      if (s.type === 'disconnect') log.warn(`bus: disconnected from${server}`);
      if (s.type === 'reconnect') {
        log.notice(`bus: reconnected to${server}`);
        onBack?.();
      }
    }
  })();
}

/** Opens a bucket bound only (no stream info asked) with direct get, as a node's grants allow. */
export async function openKv(nc: NatsConnection, bucket: string): Promise<KV> {
  return new Kvm(jetstream(nc)).open(bucket, { allow_direct: true });
}

/**
 * Binds a key/value bucket the caller keeps (the seat its six, a provider its `<provider>_bound`):
 * refused when it holds more than its bucket, created hardened when missing and the login may create
 * streams (a bus without isolation; on one with isolation `init` has made it), and opened.
 */
export async function ensureKv(nc: NatsConnection, bucket: string, replicas: number, warn?: (line: string) => void): Promise<KV> {
  await ensureBucket(nc, kvBucket(bucket), { replicas, maxConsumers: maxConsumersFor(DEFAULT_MESH_NODES) }, warn);
  return openKv(nc, bucket);
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
 * Watches the keys matching `filter` of a bucket with a filtered ordered push consumer, so a
 * node's per-key grants are enough and the watch is recreated with the same filter after a server
 * restart. nats.js creates an ordered consumer before it subscribes to its deliver subject, and on
 * nats-server 2.9 a message stored in that window can be lost until the next one arrives (seen in
 * test/watch.test.ts). So the first consumer delivers nothing (DeliverNew) and is at once replaced
 * through the library's own reset, which subscribes first and replays the filter from sequence 1:
 * every stored revision, then live changes. The seat's buckets keep one revision per key.
 * keepWatch (shared/watch/keeper.ts) keeps the consumer alive: a 1 s heartbeat, re-made when its server
 * is lost (a reconnect, a server leaving the cluster) or it falls silent. A re-made consumer resumes
 * after the last stream sequence delivered; only a stream that came back holding less (a wiped
 * store) is read again from the start, and once that re-read has caught up every key delivered
 * before it and not again is delivered as deleted (shared/watch/state.ts).
 */
export async function watchKv(
  nc: NatsConnection,
  bucket: string,
  filter: string,
  onEvent: (event: WatchEvent) => void,
  log?: KeeperLog,
): Promise<Watch> {
  const prefix = `$KV.${bucket}.`;
  const consumer = await jetstream(nc).consumers.getPushConsumer(`KV_${bucket}`, {
    filter_subjects: prefix + filter,
    deliver_policy: DeliverPolicy.New,
  });
  // Asked of the stream's leader: a cluster replica still catching up looks like a wiped stream to a
  // consumer made on it; a login that may not read the stream's info takes the consumer's word.
  const state = new WatchState(onEvent, async (seen) => {
    const info = await (await bucketManager(nc)).streams.info(`KV_${bucket}`).catch(() => undefined);
    return info === undefined || info.state.last_seq < seen;
  });
  let keeper: WatchKeeper | undefined;
  const messages = await consumer.consume({
    callback: (m) => {
      keeper?.heard();
      const op = m.headers?.get('KV-Operation');
      const deleted = op === 'DEL' || op === 'PURGE';
      state.deliver({ key: m.subject.slice(prefix.length), revision: m.seq, value: deleted ? null : m.data });
      if (m.info.pending === 0) state.drained(m.info.consumer);
    },
  });
  const kept = keepWatch(nc, messages as unknown as OrderedConsumerInternals, `watch ${bucket} (${filter})`, log);
  keeper = kept;
  void messages.closed().then(() => kept.stop());
  void (async () => {
    for await (const s of messages.status()) {
      if (s.type === 'heartbeat') kept.beat(s.lastConsumerSequence);
      if (s.type === 'flow_control') kept.heard();
      // A lost consumer is noticed by missed heartbeats and re-created; a refused re-create would
      // otherwise leave the watch stale without a word.
      if (s.type === 'heartbeats_missed' || s.type === 'consumer_deleted' || s.type === 'consumer_not_found') {
        log?.warn(`watch ${bucket} (${filter}): ${s.type.replaceAll('_', ' ')}; re-creating it`);
      }
      if (s.type !== 'ordered_consumer_recreated') continue;
      const info = await consumer.info(true);
      if (info.name !== s.name) continue;
      if (kept.recreated(info)) state.rereadBegan(info.name);
      // The replacement's pending count at creation: nothing stored means caught up at once.
      else if (info.num_pending === 0) state.createdDrained(info.name, info.delivered.consumer_seq === 0);
    }
  })();
  (messages as unknown as { reset(): void }).reset();
  return { caughtUp: state.caughtUp, stop: () => { kept.stop(); void messages.stop(); } };
}

/** How long a watch of a missing bucket waits between tries, at most. */
export const MAX_WATCH_RETRY_MS = 5000;

/**
 * Watches `filter` of `bucket`, waiting for the bucket while it is missing (or not yet granted), or
 * holds more than its bucket (refused, bucket-bind.ts): a new reason is logged once, and the wait
 * doubles up to MAX_WATCH_RETRY_MS.
 */
export function watchBucket(
  nc: NatsConnection,
  bucket: string,
  filter: string,
  onEvent: (event: WatchEvent) => void,
  log: { notice(line: string): void; debug(line: string): void; warn(line: string): void; error(line: string): void },
): Watch {
  return waitForWatch(`bucket ${bucket} (${filter})`, log, {
    // Checked at each bind: a stream that holds more than its bucket is never watched.
    open: async () => {
      await refuseBadBucket(nc, kvBucket(bucket), (line) => log.warn(line));
      return watchKv(nc, bucket, filter, onEvent, log);
    },
    closed: () => nc.isClosed(),
    sleep: timerSleep,
  });
}

/** What waiting for a watch is made of besides the bus, handed in so tests drive it without time or a server. */
export type WatchWait = {
  /** Opens the watch; a throw means its bucket is missing or not granted yet. */
  open(): Promise<Watch>;
  /** Whether the connection is closed, which ends the wait for good. */
  closed(): boolean;
  /** Waits between tries. */
  sleep: Sleep;
};

/**
 * Opens a watch of `what` (`bucket B (F)`), trying again while it fails with a wait doubling up to
 * MAX_WATCH_RETRY_MS; a new reason is logged once at notice, its repeats at debug.
 */
export function waitForWatch(what: string, log: { notice(line: string): void; debug(line: string): void; error?(line: string): void }, wait: WatchWait): Watch {
  let stopped = false;
  let watch: Watch | undefined;
  let said = '';
  const caughtUp = (async () => {
    const opened = await retryWithBackoff({
      attempt: wait.open,
      sleep: wait.sleep,
      stopped: () => stopped,
      maxMs: MAX_WATCH_RETRY_MS,
      onFailure: (err) => {
        if (wait.closed()) return false;
        // A bucket not created yet, or no responders under a node's grants, looks the same: wait,
        // saying it once per reason and the retries only at debug.
        const refused = err instanceof BucketRefusedError;
        const line = `waiting for ${what}: ${refused ? err.message : describeBusError(err instanceof Error ? err : new Error(String(err)))}`;
        if (line !== said) (refused && log.error ? log.error : log.notice)(line);
        else log.debug(`${line} (retrying)`);
        said = line;
        return true;
      },
    });
    if (!opened) return;
    watch = opened;
    if (stopped) opened.stop();
    if (said) log.notice(`${what} is there now`);
    return opened.caughtUp;
  })();
  return { caughtUp, stop: () => { stopped = true; watch?.stop(); } };
}

/**
 * Says a bus error the way an operator can act on it. Across accounts a call that is not granted
 * comes back as no responders, which nats.js words "jetstream is not enabled"; quoted names
 * (a consumer's random name) are left out so that one reason reads the same on every retry.
 */
export function describeBusError(err: Error): string {
  if (/jetstream is not enabled|no responders|503/i.test(err.message)) return 'no responders: the bucket is missing or not granted to this account';
  return err.message.replace(/"[^"]*"/g, '"…"');
}

/** Reads every key of a whole bucket (for the seat, which may read it whole), ignoring deletes. */
export async function readAll(nc: NatsConnection, bucket: string, filter = '>'): Promise<Map<string, Uint8Array>> {
  const all = new Map<string, Uint8Array>();
  const watch = await watchKv(nc, bucket, filter, (event) => {
    if (event.value) all.set(event.key, event.value);
    else all.delete(event.key);
  });
  await watch.caughtUp;
  watch.stop();
  return all;
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
