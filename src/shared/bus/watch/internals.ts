// The one file of src/ that reaches into nats.js's private parts. A watch needs what the public API of
// an ordered push consumer does not give: no consumer made before it subscribes, its first one made
// through the library's own reset (shared/bus/watch/watch.ts says why), its idle heartbeat and a resume
// point it can move (shared/bus/watch/keeper.ts), and its creates taken (shared/bus/watch/remake.ts). The shapes relied on are
// named here as nats.js PINNED_NATS_JS has them, checked on the first watch of the process, and given
// to the rest of the watch as OrderedConsumer; a nats.js that changed them stops the program with one
// line saying so, where it would otherwise retry a TypeError for ever.
import {
  DeliverPolicy,
  type ConsumerConfig,
  type ConsumerInfo,
  type ConsumerMessages,
  type OrderedPushConsumerOptions,
  type PushConsumer,
} from '@nats-io/jetstream';
import { errors, nanos } from '@nats-io/transport-node';

/** The nats.js release whose private shapes this file names: every `@nats-io/*` package is pinned to it. */
export const PINNED_NATS_JS = '3.4.0';

/** The private consumer API an ordered push consumer's reset deletes and creates its consumers through. */
type ConsumerApi = {
  add(stream: string, config: ConsumerConfig): Promise<ConsumerInfo>;
  delete(stream: string, name: string): Promise<boolean>;
  /** The request timeout its calls use, in ms (read as `this.timeout`). */
  timeout: number;
};

/** The private parts of the object `consume()` returns for an ordered push consumer, in nats.js PINNED_NATS_JS. */
type OrderedMessagesInternals = {
  /** Deletes the consumer and makes another after `cursor.stream_seq`, with getConsumerOpts()'s config. */
  reset(): void;
  /** The config of each consumer a reset makes (with a fixed 30 s idle heartbeat). */
  getConsumerOpts(): ConsumerConfig;
  /** The last stream and consumer sequences delivered. */
  cursor: { stream_seq: number; deliver_seq: number };
  /** The consumer whose API a reset goes through. */
  consumer: { api: ConsumerApi };
  /**
   * nats.js's own idle heartbeat monitor: after two silent periods it resets the consumer every period
   * until a message or heartbeat arrives, and a reset is no message. Null: none (every use is `monitor?.`).
   */
  monitor: { cancel(): void } | null;
};

/** Thrown when nats.js lacks a private part the watch relies on: a program stops on it, it is never retried. */
export class NatsInternalsError extends Error {
  override name = 'NatsInternalsError';
}

/** Consumer calls that reach the bus. */
export type ConsumerCalls = {
  /** Creates a consumer, waiting at most `timeoutMs` for the bus's answer (a later one is lost). */
  add(stream: string, config: ConsumerConfig, timeoutMs: number): Promise<ConsumerInfo>;
  /** Deletes a consumer, waiting at most the timeout interceptCreates was given. */
  delete(stream: string, name: string): Promise<boolean>;
};

/** What the watch does to an ordered push consumer beyond the public API, typed. */
export type OrderedConsumer = {
  /** Replaces the consumer with a new one that resumes after the last stream sequence delivered (or from the start, after rewind()). */
  reset(): void;
  /** The last consumer sequence delivered to the watch. */
  deliveredSeq(): number;
  /** Makes the next reset read the stream from its first sequence. */
  rewind(): void;
  /** Makes the next reset begin after stream sequence `seq`, as if the watch had delivered up to it. */
  resumeAfter(seq: number): void;
  /**
   * Makes every reset deliver only what is stored after it (`deliver_policy: new`) until a create is
   * answered; from then on a reset resumes after the larger of the last stream sequence delivered and
   * the one that consumer began after (its ConsumerInfo's `delivered.stream_seq`), never from "new" again.
   */
  beginAtTail(): void;
  /** Gives every consumer a reset makes this idle heartbeat (nats.js takes no such option for an ordered consumer). */
  setIdleHeartbeat(ms: number): void;
  /** Stops nats.js's own heartbeat monitor for good: the caller tells a silent consumer itself. */
  dropHeartbeatMonitor(): void;
  /**
   * Sends every create a reset makes to `add` instead, and returns the calls that reach the bus; every
   * other call of this consumer (its info, the reset's delete) waits at most `timeoutMs`.
   */
  interceptCreates(timeoutMs: number, add: (stream: string, config: ConsumerConfig) => Promise<ConsumerInfo>): ConsumerCalls;
};

/**
 * The private parts `messages` lacks, each named as in nats.js PINNED_NATS_JS; empty when it has them all.
 * A watch never runs on an object this finds wanting.
 */
export function missingInternals(messages: ConsumerMessages): string[] {
  const m = messages as unknown as Partial<Record<keyof OrderedMessagesInternals, unknown>>;
  const cursor = m.cursor as Partial<Record<string, unknown>> | undefined;
  const api = (m.consumer as { api?: Partial<Record<keyof ConsumerApi, unknown>> } | undefined)?.api;
  const wanted: [string, boolean][] = [
    ['reset()', typeof m.reset === 'function'],
    ['getConsumerOpts()', typeof m.getConsumerOpts === 'function'],
    ['cursor.stream_seq', typeof cursor?.stream_seq === 'number'],
    ['cursor.deliver_seq', typeof cursor?.deliver_seq === 'number'],
    ['consumer.api.add()', typeof api?.add === 'function'],
    ['consumer.api.delete()', typeof api?.delete === 'function'],
    ['consumer.api.timeout', typeof api?.timeout === 'number'],
    // Null when the consumer has no idle heartbeat; absent, nats.js no longer keeps it there.
    ['monitor', m.monitor === null || typeof (m.monitor as { cancel?: unknown } | undefined)?.cancel === 'function'],
  ];
  return wanted.filter(([, there]) => !there).map(([name]) => name);
}

/** Throws a NatsInternalsError saying what `messages` lacks, the pinned version, and what to do. */
export function checkInternals(messages: ConsumerMessages): void {
  const missing = missingInternals(messages);
  if (missing.length > 0) throw internalsError('the ordered consumer behind consume()', missing);
}

function internalsError(what: string, missing: string[]): NatsInternalsError {
  return new NatsInternalsError(
    `the installed nats.js is not the one the watch was proven on: ${what} has no ${missing.join(', ')} ` +
      `(private parts of @nats-io/jetstream ${PINNED_NATS_JS}, used by src/shared/bus/watch/internals.ts); ` +
      `install @nats-io/* ${PINNED_NATS_JS} as package.json pins them, or re-prove the watch on the new version (test/watch.test.ts)`,
  );
}

/** The private parts of `jetstream(nc).consumers` that make an ordered push consumer, in nats.js PINNED_NATS_JS. */
type ConsumersInternals = {
  /** The consumer API the ordered consumer is made with and keeps. */
  api: ConsumerApi;
  /** Makes the first consumer through `this.api.add`, then the PushConsumer holding `this.api`. */
  getOrderedPushConsumer(stream: string, opts: Partial<OrderedPushConsumerOptions>): Promise<PushConsumer>;
};

/**
 * An ordered push consumer of `stream` whose first consumer is never made. nats.js makes one before
 * it subscribes to its deliver subject, of no use to a watch (watch.ts says why), and a node may not
 * delete it (it lingers 5 minutes); here a stand-in answers that create with its config, unnamed so
 * the first reset deletes nothing, and the first reset (the watch's begin) makes the consumer the watch
 * reads with: one create a watch, where there were two and a delete. `heartbeatMs`, when given, is the
 * idle heartbeat the stand-in answers with, which nats.js also times its own heartbeat monitor by (its
 * config fixes 30 s).
 */
export async function unmadePushConsumer(
  consumers: unknown,
  stream: string,
  opts: Partial<OrderedPushConsumerOptions>,
  heartbeatMs?: number,
): Promise<PushConsumer> {
  const c = consumers as Partial<ConsumersInternals>;
  const missing = [
    ...(typeof c.getOrderedPushConsumer === 'function' ? [] : ['getOrderedPushConsumer()']),
    ...(typeof c.api?.add === 'function' ? [] : ['api.add()']),
  ];
  if (missing.length > 0) throw internalsError('jetstream(nc).consumers', missing);
  const api = c.api!;
  const add = async (stream_name: string, config: ConsumerConfig) =>
    ({
      stream_name,
      name: '',
      config: { ...config, name: undefined, ...(heartbeatMs === undefined ? {} : { idle_heartbeat: nanos(heartbeatMs) }) },
    }) as unknown as ConsumerInfo;
  const standIn = Object.create(api, { add: { value: add } }) as ConsumerApi;
  const made = await c.getOrderedPushConsumer!.call(Object.create(c, { api: { value: standIn } }) as ConsumersInternals, stream, opts);
  (made as unknown as { api: ConsumerApi }).api = api;
  return made;
}

/** Whether a consume() object of this process has passed checkInternals: every one is of the same nats.js. */
let proven = false;

/** The private parts of `messages` (an ordered push consumer's), checked on the first call of the process. */
export function orderedConsumer(messages: ConsumerMessages): OrderedConsumer {
  if (!proven) {
    checkInternals(messages);
    proven = true;
  }
  const inner = messages as unknown as OrderedMessagesInternals;
  // Every reset's consumer keeps its state in the server's memory. nats.js's ordered push consumer
  // leaves `mem_storage` out, and nats-server 2.9 then keeps each consumer's state in files of its own:
  // a directory and files made with every create, the state written again after every delivery. A
  // watch's consumer is made again after any loss, so the files kept nothing a watch needs; at 300
  // clients started at once nats-server's CPU a start went from 13–18 ms to 6 ms (docs/scale.md).
  const inFiles = inner.getConsumerOpts.bind(inner);
  inner.getConsumerOpts = () => ({ ...inFiles(), mem_storage: true });
  // A tail watch's resets make deliver-new consumers until one is answered (beginAtTail).
  let atTail = false;
  const began = (config: ConsumerConfig, info: ConsumerInfo) => {
    if (!atTail || config.deliver_policy !== DeliverPolicy.New) return;
    atTail = false;
    inner.cursor.stream_seq = Math.max(inner.cursor.stream_seq, info.delivered.stream_seq);
  };
  return {
    reset() {
      try {
        inner.reset();
      } catch (err) {
        // Its resubscribe throws once the connection drains or is closed (a re-make's timer firing while
        // the program stops): there is no consumer to make any more, and a throw from a timer ended the
        // program with a stack and exit 1 instead of its own stop.
        if (err instanceof errors.DrainingConnectionError || err instanceof errors.ClosedConnectionError) return;
        throw err;
      }
    },
    deliveredSeq: () => inner.cursor.deliver_seq,
    rewind: () => void (inner.cursor.stream_seq = 0),
    resumeAfter: (seq) => void (inner.cursor.stream_seq = seq),
    beginAtTail() {
      atTail = true;
      const made = inner.getConsumerOpts.bind(inner);
      inner.getConsumerOpts = () => {
        const config = made();
        if (!atTail) return config;
        // Past the stream's end on 2.9 a create is flat; from sequence 1 it scans every subject of the stream.
        const { opt_start_seq: _, ...rest } = config;
        return { ...rest, deliver_policy: DeliverPolicy.New };
      };
    },
    setIdleHeartbeat(ms) {
      const made = inner.getConsumerOpts.bind(inner);
      inner.getConsumerOpts = () => ({ ...made(), idle_heartbeat: nanos(ms) });
    },
    dropHeartbeatMonitor() {
      inner.monitor?.cancel();
      // Null, not only cancelled: nats.js restarts a monitor it still holds on every reconnect.
      inner.monitor = null;
    },
    interceptCreates(timeoutMs, add) {
      const api = inner.consumer.api;
      // The private calls read their timeout as `this.timeout`: the same API seen through an object
      // with its own timeout is the API with that timeout.
      const direct = Object.create(api, { timeout: { value: timeoutMs } }) as ConsumerApi;
      const adding = (stream: string, config: ConsumerConfig) =>
        add(stream, config).then((info) => {
          began(config, info);
          return info;
        });
      inner.consumer.api = Object.create(direct, { add: { value: adding } }) as ConsumerApi;
      return {
        add: (stream, config, ms) => api.add.call(Object.create(api, { timeout: { value: ms } }) as ConsumerApi, stream, config),
        delete: (stream, name) => direct.delete(stream, name),
      };
    },
  };
}
