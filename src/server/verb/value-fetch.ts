// A page's values (DESIGN §6): direct gets of the keys a page may take, pipelined in a bounded
// window on one inbox of the connection, answered back in key order whatever order they arrive in.
import { createInbox, Empty, type Msg, type NatsConnection } from '@nats-io/transport-node';
import { MAX_SUBJECT_BYTES } from '../../shared/contract/limits.ts';
import { jsonBytes } from '../../shared/base/bytes.ts';
import { READ_TIMEOUT_MS } from '../../shared/contract/verb.ts';
import { BucketReadError, directGetSubject, keyPrefix, storedValue } from './direct-get.ts';

/** Direct gets one page has in flight at once, at most. */
export const MAX_IN_FLIGHT = 1024;
/** Bytes of values a page may have in flight or waiting, judged by the largest value it has seen. */
export const PREFETCH_BYTES = 2 * 1024 * 1024;

/** A key and its stored value. */
export type Stored = { key: string; data: Uint8Array };

/** How one page's values are fetched. */
export type FetchOptions = {
  /** The inbox prefix the connection was made with: the answers come to an inbox under it. */
  inboxPrefix: string;
  /** The connection's max payload: the size assumed of a value before the first is seen. */
  maxPayload: number;
  /** How many more values the caller might take: fetched that far ahead and no further. */
  room: () => number;
  /** Called once per value asked of the server. */
  onFetch?: (bucket: string, key: string) => void;
};

/**
 * Yields the values of keys[from…] that have one, in order, a run of those arrived at a time:
 * direct gets `last_by_subj` on an inbox under `inboxPrefix`, at most MAX_IN_FLIGHT and
 * PREFETCH_BYTES (by the largest value seen, assumed max payload before the first) ahead of the
 * next one read, and no further than `room()` asks.
 */
export async function* fetchValues(nc: NatsConnection, bucket: string, keys: readonly string[], from: number, opts: FetchOptions): AsyncGenerator<Stored[]> {
  const inbox = createInbox(opts.inboxPrefix);
  const ask = asker(nc, bucket);
  // What each answer says (its value, null when gone, or why it failed), not the message: a page's
  // window of messages outlived young-generation collections one after another.
  const arrived = new Map<number, Uint8Array | null | Error>();
  let largest = 0;
  let wake: ((err?: Error) => void) | undefined;
  let heard = Date.now();
  const sub = nc.subscribe(`${inbox}.*`, {
    callback: (err, msg) => {
      if (!err) {
        const answer = readAnswer(msg);
        if (answer instanceof Uint8Array) largest = Math.max(largest, answer.length);
        arrived.set(Number(msg.subject.slice(inbox.length + 1)), answer);
      }
      heard = Date.now();
      wake?.(err ?? undefined);
    },
  });
  // One timer for the page rather than one per value: a read that hears nothing for READ_TIMEOUT_MS fails.
  const watchdog = setInterval(() => {
    if (Date.now() - heard > READ_TIMEOUT_MS) wake?.(new BucketReadError(`no answer to a direct get within ${READ_TIMEOUT_MS} ms`));
  }, READ_TIMEOUT_MS / 5);
  let issued = from;
  try {
    for (let next = from; next < keys.length;) {
      const byBytes = Math.max(1, Math.floor(PREFETCH_BYTES / (largest || opts.maxPayload)));
      const ahead = Math.min(MAX_IN_FLIGHT, byBytes, Math.max(1, opts.room()));
      // Topped up once half the window is answered, not at each answer: one write to the socket per
      // half window rather than one per few answers.
      const topUp = issued - next <= ahead / 2;
      for (; topUp && issued < keys.length && issued < next + ahead; issued++) {
        ask(keys[issued]!, `${inbox}.${issued}`);
        opts.onFetch?.(bucket, keys[issued]!);
      }
      if (!arrived.has(next)) {
        heard = Date.now();
        await new Promise<void>((resolve, reject) => (wake = (err) => (err ? reject(err) : arrived.has(next) && resolve())));
        wake = undefined;
      }
      const run: Stored[] = [];
      for (; arrived.has(next); next++) {
        const data = arrived.get(next);
        arrived.delete(next);
        if (data instanceof Error) throw data;
        if (data) run.push({ key: keys[next]!, data });
      }
      if (run.length > 0) yield run;
    }
  } finally {
    clearInterval(watchdog);
    sub.unsubscribe();
  }
}

/**
 * Asks for the last value of a key: named in the request subject (no body to encode), or in the
 * body when that subject might pass MAX_SUBJECT_BYTES, so a long key cannot make a line the server
 * refuses. The subjects' common head is made once a page, not once a key.
 */
function asker(nc: NatsConnection, bucket: string): (key: string, reply: string) => void {
  const bySubjectHead = `${directGetSubject(bucket)}.${keyPrefix(bucket)}`;
  return (key, reply) => {
    // Up to 3 bytes of UTF-8 per UTF-16 unit: a bound with no scan of the key.
    if ((bySubjectHead.length + key.length) * 3 <= MAX_SUBJECT_BYTES) return nc.publish(bySubjectHead + key, Empty, { reply });
    nc.publish(directGetSubject(bucket), jsonBytes({ last_by_subj: keyPrefix(bucket) + key }), { reply });
  };
}

/** A direct get's answer: its value, null when the key is gone, or the error it says. */
function readAnswer(msg: Msg): Uint8Array | null | Error {
  try {
    return storedValue(msg);
  } catch (err) {
    return err instanceof Error ? err : new BucketReadError(String(err));
  }
}
