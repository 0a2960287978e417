// Keeps a watch's ordered push consumer alive (DESIGN §11: watches recover under a node's grants):
// a short idle heartbeat, the consumer made again at once when the connection comes back or when the
// heartbeats stop, and the stream read again from the start when it came back holding less than the
// watch saw (a server restarted on a wiped store).
import { nanos, type NatsConnection } from '@nats-io/transport-node';
import type { ConsumerConfig, ConsumerInfo } from '@nats-io/jetstream';

/**
 * The idle heartbeat of a watch's consumer. nats.js makes every ordered push consumer with 30 s and
 * notices a lost one after two missed (a minute); at 2 s a lost consumer is made again in 4–6 s. The
 * cost: the server sends each idle watch one empty message (a few dozen bytes) every 2 s.
 */
export const WATCH_HEARTBEAT_MS = 2000;

/** How many heartbeat periods in a row without a message or heartbeat make a watch re-make its consumer. */
export const WATCH_MISSED_HEARTBEATS = 2;

/**
 * The private parts of the object nats.js 3.4.0's `consume()` returns for an ordered push consumer
 * that the keeper relies on: `reset()` makes a new consumer from after the last stream sequence
 * delivered (`cursor.stream_seq`), with the config `getConsumerOpts()` builds (a fixed 30 s heartbeat).
 */
export type OrderedConsumerInternals = {
  reset(): void;
  getConsumerOpts(): ConsumerConfig;
  cursor: { stream_seq: number; deliver_seq: number };
};

/** What a watch tells its keeper. */
export type WatchKeeper = {
  /** A message, heartbeat or flow-control request arrived: the consumer is alive. */
  heard(): void;
  /**
   * The consumer was made again (`info`: the new one). Returns true when the stream holds less than
   * the watch saw and the watch reads it again from the start (the new consumer is already replaced).
   */
  recreated(info: ConsumerInfo): boolean;
  /** Stops the keeper's timer and its listening to the connection. */
  stop(): void;
};

/**
 * Keeps the consumer behind `internals` alive: every consumer it is re-made as has a
 * WATCH_HEARTBEAT_MS heartbeat, and it is re-made on each reconnect of `nc` and after
 * WATCH_MISSED_HEARTBEATS silent periods. `what` names the watch in log lines.
 */
export function keepWatch(nc: NatsConnection, internals: OrderedConsumerInternals, what: string, log?: { warn(line: string): void }): WatchKeeper {
  // nats.js takes no heartbeat option for an ordered push consumer: it writes 30 s into the config of
  // every consumer a reset makes, so the config is amended here (the first one is replaced at once).
  const consumerOpts = internals.getConsumerOpts.bind(internals);
  internals.getConsumerOpts = () => ({ ...consumerOpts(), idle_heartbeat: nanos(WATCH_HEARTBEAT_MS) });

  let heard = true;
  let silent = 0;
  let paused = false;
  // A re-make this keeper asked for and not yet seen done: nats.js retries a failed one itself, with a
  // backoff, so asking again every period would only pile up retries.
  let remaking = false;
  let stopped = false;
  const remake = () => {
    if (stopped) return;
    remaking = true;
    internals.reset();
  };

  const timer = setInterval(() => {
    if (heard || paused) {
      heard = false;
      silent = 0;
      return;
    }
    if (++silent < WATCH_MISSED_HEARTBEATS || remaking) return;
    log?.warn(`${what}: no heartbeat for ${(silent * WATCH_HEARTBEAT_MS) / 1000} s; making its consumer again`);
    remake();
  }, WATCH_HEARTBEAT_MS);
  timer.unref();

  const status = nc.status() as AsyncIterable<{ type: string }> & { stop(): void };
  void (async () => {
    for await (const s of status) {
      if (s.type === 'disconnect') paused = true;
      if (s.type !== 'reconnect') continue;
      // The server may have lost the consumer (restarted on another store, a member gone): made again
      // from where it was, it costs one consumer create and loses nothing either way.
      paused = false;
      heard = true;
      remake();
    }
  })();

  return {
    heard: () => void (heard = true),
    recreated(info) {
      heard = true;
      remaking = false;
      // The server starts a consumer asked to begin past the stream's end at the end; a KV stream's
      // last sequence never goes back, so this stream is not the one the watch read.
      if (info.delivered.stream_seq >= (info.config.opt_start_seq ?? 1) - 1) return false;
      log?.warn(`${what}: the stream holds less than the watch saw (made again on a wiped store?); reading it again from the start`);
      internals.cursor.stream_seq = 0;
      remake();
      return true;
    },
    stop() {
      stopped = true;
      clearInterval(timer);
      status.stop();
    },
  };
}
