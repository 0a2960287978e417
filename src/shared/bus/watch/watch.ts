// Watching the keys of a bucket with a caught-up signal (DESIGN §11): one filtered ordered push
// consumer, kept alive by shared/bus/watch/keeper.ts, its deliveries tracked by shared/bus/watch/state.ts.
import type { NatsConnection } from '@nats-io/transport-node';
import { jetstream, type ConsumerMessages, type PushConsumer } from '@nats-io/jetstream';
import { bucketManager } from '../bucket-bind.ts';
import { orderedConsumer, unmadePushConsumer, type OrderedConsumer } from './internals.ts';
import { keepWatch, WATCH_HEARTBEAT_MS, type KeeperLog, type WatchKeeper } from './keeper.ts';
import { PendingRecount } from './recount.ts';
import { WatchState } from './state.ts';
import type { Watch, WatchEvent } from './types.ts';

/** How a watch is kept. */
export type WatchOptions = {
  /** The consumer's idle heartbeat (default WATCH_HEARTBEAT_MS, 30 s): a test of a silently lost consumer asks for less. */
  heartbeatMs?: number;
  /**
   * Where the watch begins: `start` (default) replays the filter from sequence 1; `tail` delivers only
   * what is stored after its first consumer is made (`deliver_policy: new`, flat in the stream's size
   * on nats-server 2.9, where a wildcard-filtered create from sequence 1 scans every subject of the
   * stream) and is caught up once that consumer is made. Either way a re-made consumer resumes after
   * the last sequence delivered, or after the one the tail began after.
   */
  from?: 'start' | 'tail';
  /**
   * Told when a re-read from the start begins (the stream came back holding less, a wiped store): the
   * new stream numbers its revisions from 1 again, so a caller keeping the highest revision of each
   * key must forget them or it would drop every value the re-read delivers.
   */
  onReread?: () => void;
  /**
   * Where a read from the start may resume instead, from what the caller kept of an earlier run: asked
   * once, with the stream's creation time, before the watch begins (not asked when the stream's info
   * cannot be read). Its `events` are delivered first, as read, and the consumer begins after stream
   * sequence `after`; undefined reads from the start. Resumed, a watch whose stream holds less than
   * `after` reads it again from the start, as after a wiped store.
   */
  resume?: (created: string) => Resumed | undefined;
  /** The stream's creation time as the caller just read it (watchBucket's check): `resume` is then asked with it, no info read again. */
  created?: string;
  /**
   * Told, at each idle heartbeat of a caught-up watch, the stream sequence up to which every message
   * of its filter has been delivered.
   */
  onProgress?: (seq: number) => void;
};

/** What a watch resumes from: the events kept, and the stream sequence they were read up to. */
export type Resumed = { after: number; events: readonly WatchEvent[] };

/**
 * Watches the keys matching `filter` of a bucket with a filtered ordered push consumer, so a
 * node's per-key grants are enough and the watch is recreated with the same filter after a server
 * restart. nats.js creates an ordered consumer before it subscribes to its deliver subject, and on
 * nats-server 2.9 a message stored in that window can be lost until the next one arrives (seen in
 * test/watch.test.ts). So that first consumer is never made (internals.ts' unmadePushConsumer) and
 * the watch begins with the library's own reset, which subscribes first and replays the filter from
 * sequence 1: every stored revision, then live changes. The seat's buckets keep one revision per key.
 * keepWatch (shared/bus/watch/keeper.ts) keeps the consumer alive: re-made when its server may be lost (a
 * reconnect, a server leaving the cluster) or it falls silent past two 30 s heartbeats. A re-made consumer resumes
 * after the last stream sequence delivered; only a stream that came back holding less (a wiped
 * store) is read again from the start, and once that re-read has caught up every key delivered
 * before it and not again is delivered as deleted (shared/bus/watch/state.ts). The first watch of the
 * process checks the nats.js private parts this relies on (shared/bus/watch/internals.ts): a
 * NatsInternalsError is thrown when one is missing.
 */
export async function watchKv(
  nc: NatsConnection,
  bucket: string,
  filter: string,
  onEvent: (event: WatchEvent) => void,
  log?: KeeperLog,
  opts: WatchOptions = {},
): Promise<Watch> {
  const prefix = `$KV.${bucket}.`;
  const heartbeatMs = opts.heartbeatMs ?? WATCH_HEARTBEAT_MS;
  const consumer = await unmadePushConsumer(jetstream(nc).consumers, `KV_${bucket}`, { filter_subjects: prefix + filter }, heartbeatMs);
  // Asked of the stream's leader: a cluster replica still catching up looks like a wiped stream to a
  // consumer made on it; a login that may not read the stream's info takes the consumer's word.
  const state = new WatchState(onEvent, async (seen) => {
    const info = await (await bucketManager(nc)).streams.info(`KV_${bucket}`).catch(() => undefined);
    return info === undefined || info.state.last_seq < seen;
  });
  let keeper: WatchKeeper | undefined;
  // Only a read waits on the count (recount.ts says why it can be wrong); a live watch never does.
  const recount = new PendingRecount(() => {
    if (state.reading) keeper?.recount();
  });
  const messages = await consumer.consume({
    callback: (m) => {
      keeper?.heard();
      const op = m.headers?.get('KV-Operation');
      const deleted = op === 'DEL' || op === 'PURGE';
      state.deliver({ key: m.subject.slice(prefix.length), revision: m.seq, value: deleted ? null : m.data, at: m.info.timestampNanos / 1e6 });
      if (m.info.pending === 0) state.drained(m.info.consumer);
      recount.heard(m.info.pending);
    },
  });
  let ordered: OrderedConsumer;
  try {
    ordered = orderedConsumer(messages);
  } catch (err) {
    messages.stop();
    throw err;
  }
  const what = `watch ${bucket} (${filter})`;
  const tail = opts.from === 'tail';
  if (tail) ordered.beginAtTail();
  else if (opts.resume) {
    const resumed = await resumeFrom(nc, bucket, opts.resume, opts.created);
    if (resumed) {
      for (const event of resumed.events) state.deliver(event);
      ordered.resumeAfter(resumed.after);
    }
  }
  const kept = keepWatch(nc, ordered, what, log, heartbeatMs);
  keeper = kept;
  void messages.closed().then(() => {
    kept.stop();
    recount.stop();
  });
  void followStatus(messages, consumer, kept, state, what, tail, log, opts);
  try {
    await kept.begin();
  } catch (err) {
    kept.stop();
    recount.stop();
    void messages.stop();
    throw err;
  }
  return {
    caughtUp: state.caughtUp,
    hold: (key, revision) => state.hold(key, revision),
    stop: () => {
      kept.stop();
      recount.stop();
      void messages.stop();
    },
  };
}

/** Hands the consumer's heartbeats and re-makes to its keeper, and a re-make's first word to the state. */
async function followStatus(
  messages: ConsumerMessages,
  consumer: PushConsumer,
  kept: WatchKeeper,
  state: WatchState,
  what: string,
  tail: boolean,
  log: KeeperLog | undefined,
  { onReread, onProgress }: Pick<WatchOptions, 'onReread' | 'onProgress'>,
): Promise<void> {
  for await (const s of messages.status()) {
    // Sent after every message before it on the same subscription: when it names the last one the
    // watch got, every message of the filter up to its stream sequence was delivered.
    if (s.type === 'heartbeat' && kept.beat(s.lastConsumerSequence) && !state.reading) onProgress?.(s.lastStreamSequence);
    if (s.type === 'flow_control') kept.heard();
    // A consumer deleted is re-created; a refused re-create would otherwise leave the watch stale
    // without a word. (Missed heartbeats are the keeper's to tell: nats.js's monitor is dropped.)
    if (s.type === 'consumer_deleted' || s.type === 'consumer_not_found') {
      log?.warn(`${what}: ${s.type.replaceAll('_', ' ')}; re-creating it`);
    }
    if (s.type !== 'ordered_consumer_recreated') continue;
    const info = await consumer.info(true);
    if (info.name !== s.name) continue;
    if (kept.recreated(info)) {
      state.rereadBegan(info.name);
      onReread?.();
    }
    // The replacement's pending count at creation: nothing stored means caught up at once.
    else if (info.num_pending === 0) state.createdDrained(info.name, info.delivered.consumer_seq === 0);
    // A tail watch has nothing stored to catch up with: its first consumer made, it is caught up.
    else if (tail) state.createdDrained(info.name, false);
  }
}

/** What `resume` says of the stream made at `created` (read here when not given); undefined when that cannot be read (then the read is from the start). */
async function resumeFrom(nc: NatsConnection, bucket: string, resume: NonNullable<WatchOptions['resume']>, created?: string): Promise<Resumed | undefined> {
  created ??= (await (await bucketManager(nc)).streams.info(`KV_${bucket}`).catch(() => undefined))?.created;
  return created ? resume(created) : undefined;
}
