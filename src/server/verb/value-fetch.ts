// A walk's values (DESIGN §6): direct gets of the keys a page may take, pipelined in a bounded
// window on one inbox of the connection, answered back in key order whatever order they arrive in.
// A fetch outlives its page when the reader parks it (read.ts): it then asks the next page's values
// while the asker reads this one.
import { createInbox, Empty, type Msg, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import { MAX_SUBJECT_BYTES } from '../../shared/contract/limits.ts';
import { jsonBytes } from '../../shared/base/bytes.ts';
import { READ_TIMEOUT_MS } from '../../shared/contract/verb.ts';
import { BucketReadError, directGetSubject, keyPrefix, storedValue } from './direct-get.ts';

/** Direct gets one fetch has in flight at once, at most. */
export const MAX_IN_FLIGHT = 4096;
/** Bytes of values a fetch may have in flight or waiting, judged by the largest value it has seen. */
export const PREFETCH_BYTES = 2 * 1024 * 1024;

/** A key and its stored value. */
export type Stored = { key: string; data: Uint8Array };

/** How a fetch asks. */
export type FetchOptions = {
  /** The inbox prefix the connection was made with: the answers come to an inbox under it. */
  inboxPrefix: string;
  /** The connection's max payload: the size assumed of a value before the first is seen. */
  maxPayload: number;
  /** Called once per value asked of the server. */
  onFetch?: (bucket: string, key: string) => void;
};

/**
 * The values of `keys` from a position on, asked by direct get `last_by_subj` on an inbox under
 * `inboxPrefix`, at most MAX_IN_FLIGHT and PREFETCH_BYTES (by the largest value seen, assumed max
 * payload before the first) ahead of the next one read. Closed by its reader.
 */
export class ValueFetch {
  // What each answer says (its value, null when gone, or why it failed), not the message: a page's
  // window of messages outlived young-generation collections one after another.
  readonly #arrived = new Map<number, Uint8Array | null | Error>();
  readonly #inbox: string;
  readonly #sub: Subscription;
  readonly #watchdog: NodeJS.Timeout;
  readonly #ask: (key: string, reply: string) => void;
  #largest = 0;
  #wake: ((err?: Error) => void) | undefined;
  #heard = Date.now();
  #next: number;
  #issued: number;
  /** Where the values still held begin: #next, or before it when only gone keys lie between. */
  #gone: number;

  constructor(
    nc: NatsConnection,
    private readonly bucket: string,
    /** The keys fetched, in key order. */
    readonly keys: readonly string[],
    from: number,
    private readonly opts: FetchOptions,
  ) {
    this.#next = this.#issued = this.#gone = from;
    this.#inbox = createInbox(opts.inboxPrefix);
    this.#ask = asker(nc, bucket);
    this.#sub = nc.subscribe(`${this.#inbox}.*`, { callback: (err, msg) => this.#receive(err, msg) });
    // One timer for the fetch rather than one per value: a read that hears nothing for READ_TIMEOUT_MS fails.
    this.#watchdog = setInterval(() => {
      if (Date.now() - this.#heard > READ_TIMEOUT_MS) this.#wake?.(new BucketReadError(`no answer to a direct get within ${READ_TIMEOUT_MS} ms`));
    }, READ_TIMEOUT_MS / 5).unref();
  }

  /** Whether the fetch can go on from `position`: asked already, or the next to ask, and not let go. */
  reaches(position: number): boolean {
    return position >= this.#gone && position <= this.#issued;
  }

  /** Moves the next value read to `position` (see reaches): what lies before it is let go. */
  seek(position: number): void {
    this.#skip(position);
    this.#gone = position;
  }

  // Past keys whose answers said gone, #next moves on and #gone stays: a reader that stopped at
  // the last value it took can still go on from the first of them.
  #skip(position: number): void {
    for (; this.#next < position; this.#next++) this.#arrived.delete(this.#next);
  }

  /** Asks values ahead of the next one read, up to `room` of them and within the window; returns at once. */
  askAhead(room: number): void {
    const ahead = this.#window(room);
    // Topped up once half the window is answered, not at each answer: one write to the socket per
    // half window rather than one per few answers.
    if (this.#issued - this.#next <= ahead / 2) this.#askUpTo(this.#next + ahead);
  }

  /** Asks `count` values past those asked already, within the window: the next page's, while this one is read. */
  askMore(count: number): void {
    this.#askUpTo(Math.min(this.#issued + count, this.#next + this.#window(Infinity)));
  }

  // How far ahead of the next one read values may be asked, for a reader with `room`.
  #window(room: number): number {
    const byBytes = Math.max(1, Math.floor(PREFETCH_BYTES / (this.#largest || this.opts.maxPayload)));
    return Math.min(MAX_IN_FLIGHT, byBytes, Math.max(1, room));
  }

  #askUpTo(end: number): void {
    for (; this.#issued < this.keys.length && this.#issued < end; this.#issued++) {
      this.#ask(this.keys[this.#issued]!, `${this.#inbox}.${this.#issued}`);
      this.opts.onFetch?.(this.bucket, this.keys[this.#issued]!);
    }
  }

  /**
   * Yields the values from the next one read that have one, in order, a run of those arrived at a
   * time, asking no further ahead than `room()` says. A run is let go only when the next is asked
   * for: a reader that stops inside one can seek into it later.
   */
  async *runs(room: () => number): AsyncGenerator<Stored[]> {
    while (this.#next < this.keys.length) {
      this.askAhead(room());
      if (!this.#arrived.has(this.#next)) {
        this.#heard = Date.now();
        await new Promise<void>((resolve, reject) => (this.#wake = (err) => (err ? reject(err) : this.#arrived.has(this.#next) && resolve())));
        this.#wake = undefined;
      }
      const run: Stored[] = [];
      let end = this.#next;
      // Past the run's last value: where a reader that took the whole run goes on from.
      let pastValues = this.#next;
      for (; this.#arrived.has(end); end++) {
        const data = this.#arrived.get(end);
        if (data instanceof Error) throw data;
        if (!data) continue;
        run.push({ key: this.keys[end]!, data });
        pastValues = end + 1;
      }
      if (run.length > 0) {
        yield run;
        this.seek(pastValues);
      }
      this.#skip(end);
    }
  }

  /** Stops asking and hearing; what was asked and not heard is dropped. */
  close(): void {
    clearInterval(this.#watchdog);
    this.#sub.unsubscribe();
    this.#arrived.clear();
  }

  #receive(err: Error | null, msg: Msg): void {
    if (!err) {
      const answer = readAnswer(msg);
      const position = Number(msg.subject.slice(this.#inbox.length + 1));
      if (answer instanceof Uint8Array) this.#largest = Math.max(this.#largest, answer.length);
      // An answer behind the reader (it sought past it) is not kept.
      if (position >= this.#next) this.#arrived.set(position, answer);
    }
    this.#heard = Date.now();
    this.#wake?.(err ?? undefined);
  }
}

/**
 * Asks for the last value of a key: named in the request subject (no body to encode), or in the
 * body when that subject might pass MAX_SUBJECT_BYTES, so a long key cannot make a line the server
 * refuses. The subjects' common head is made once a fetch, not once a key.
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
