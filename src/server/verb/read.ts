// The verb's reads (DESIGN §6) from a cursor: the keys under a filter from the connection's key
// index (key-index.ts), then only a page's values, fetched ahead as far as the page has room
// (value-fetch.ts). A page that ends before its keys do parks its fetch, which asks the next page's
// values while the asker reads this one; the next page takes them only if the stream did not move.
// Any failure on the bus comes out as a BucketReadError.
import type { NatsConnection } from '@nats-io/transport-node';
import { DEFAULT_INBOX_PREFIX } from '../../shared/bus/inbox.ts';
import { BucketReadError } from './direct-get.ts';
import { firstAfter, KeyIndex, type KeyIndexHooks } from './key-index.ts';
import { ValueFetch, type FetchOptions, type Stored } from './value-fetch.ts';
import { errorText } from '../../shared/base/errors.ts';

/** Fetches parked at once per connection, at most: each holds up to PREFETCH_BYTES of values. */
export const MAX_PARKED = 4;
/** A parked fetch not taken up by the next page within this long is closed. */
export const PARKED_MS = 1000;
/** Filters remembered as moving under their read-ahead, at most (the least recently moved forgotten first). */
const MAX_MOVING = 32;

/** How a reader reads, and what it is told of its work: the hooks are injected so tests count and age without sleeping. */
export type ReaderOptions = KeyIndexHooks & {
  /** The inbox prefix the connection was made with (default `_INBOX`): its user may subscribe only under it. */
  inboxPrefix?: string;
  /** Called once per value asked of the server. */
  onFetch?: FetchOptions['onFetch'];
};

/** What takes a reader's entries: how many more it might take, and the last key it took (none yet: undefined). */
export type Taker = { room(): number; last(): string | undefined };

/** A fetch left by a page, with the stream's state its keys were judged at. */
type Parked = { fetch: ValueFetch; asOf: string; timer: NodeJS.Timeout };

const readers = new WeakMap<NatsConnection, VerbReader>();

/**
 * The reader of a connection made with `inboxPrefix` (default `_INBOX`), made on first use, so that
 * its key lists outlive one request.
 */
export function readerOf(nc: NatsConnection, inboxPrefix?: string): VerbReader {
  let reader = readers.get(nc);
  if (!reader) readers.set(nc, (reader = new VerbReader(nc, { inboxPrefix })));
  return reader;
}

/** The verb's reads on one connection. */
export class VerbReader {
  readonly #index: KeyIndex;
  readonly #inboxPrefix: string;
  readonly #parked = new Map<string, Parked>();
  /** Filters whose stream moved under their last parked fetch: their pages do not ask ahead until one is taken again. */
  readonly #moving = new Set<string>();

  constructor(
    private readonly nc: NatsConnection,
    private readonly options: ReaderOptions = {},
  ) {
    this.#index = new KeyIndex(nc, options);
    this.#inboxPrefix = options.inboxPrefix ?? DEFAULT_INBOX_PREFIX;
  }

  /**
   * The stored entries under `filter` past `after`, in key order, a run at a time. `taker.room()`
   * says how many more the caller might take: values are fetched that far ahead and no further,
   * until the caller stops; then as far again past `taker.last()`, the last key it took, for a next
   * page asked from there. A bus failure is thrown as a BucketReadError.
   */
  async *entries(bucket: string, filter: string, after: string | undefined, maxPayload: number, taker: Taker): AsyncGenerator<Stored[]> {
    const id = `${bucket} ${filter}`;
    let fetch: ValueFetch | undefined;
    let done = false;
    // The page's own size is how far ahead the next is likely to read: a query of 10 asks 10 more.
    const pageRoom = taker.room();
    let asOf = '';
    let keys: readonly string[] = [];
    try {
      const listed = await this.#index.keys(bucket, filter);
      asOf = listed.asOf;
      keys = listed.keys;
      const from = firstAfter(keys, after);
      fetch =
        this.#unpark(id, listed.keys, asOf, from) ??
        new ValueFetch(this.nc, bucket, listed.keys, from, { inboxPrefix: this.#inboxPrefix, maxPayload, onFetch: this.options.onFetch });
      fetch.seek(from);
      yield* fetch.runs(() => taker.room());
      done = true;
    } catch (err) {
      done = true;
      throw err instanceof BucketReadError ? err : new BucketReadError(errorText(err), { cause: err });
    } finally {
      if (fetch && !done) {
        // A caller that stopped inside a run leaves the fetch at the run's start: the values it
        // took are let go here, so that the next page's are asked from where it stopped.
        const last = taker.last();
        if (last !== undefined) fetch.seek(firstAfter(keys, last));
        this.#park(id, fetch, asOf, pageRoom);
      } else fetch?.close();
    }
  }

  /** The fetch parked for `id` when it holds `keys` as of `asOf` and reaches `from`; any other parked there is closed. */
  #unpark(id: string, keys: readonly string[], asOf: string, from: number): ValueFetch | undefined {
    const parked = this.#parked.get(id);
    if (parked && parked.asOf !== asOf) this.#moved(id);
    if (!parked || parked.asOf !== asOf || parked.fetch.keys !== keys || !parked.fetch.reaches(from)) return void this.#drop(id);
    clearTimeout(parked.timer);
    this.#parked.delete(id);
    this.#moving.delete(id);
    return parked.fetch;
  }

  /** Asks the next page's values for the fetch parked for `id`, if it still is. */
  #askAhead(id: string, fetch: ValueFetch, ahead: number): void {
    if (this.#parked.get(id)?.fetch !== fetch) return;
    try {
      fetch.askMore(ahead);
    } catch {
      // The connection draining or closed: nothing is read ahead.
      this.#drop(id);
    }
  }

  #drop(id: string): void {
    const parked = this.#parked.get(id);
    if (!parked) return;
    clearTimeout(parked.timer);
    parked.fetch.close();
    this.#parked.delete(id);
  }

  // Under a stream written all the time every page's read-ahead would be asked again: there a
  // page parks only what it asked for itself, and reads ahead again once that is taken.
  #moved(id: string): void {
    this.#moving.delete(id);
    this.#moving.add(id);
    for (const oldest of this.#moving) {
      if (this.#moving.size <= MAX_MOVING) break;
      this.#moving.delete(oldest);
    }
  }

  #park(id: string, fetch: ValueFetch, asOf: string, ahead: number): void {
    this.#drop(id);
    const timer = setTimeout(() => this.#parked.get(id)?.fetch === fetch && this.#drop(id), PARKED_MS).unref();
    this.#parked.set(id, { fetch, asOf, timer });
    // Asked once this page's reply is written: asked before, the server would answer them all before
    // it reads the reply on the same connection, and the asker would wait for them (40 ms a page of 4,000).
    if (!this.#moving.has(id)) setImmediate(() => this.#askAhead(id, fetch, ahead));
    // A Map iterates in insertion order, so the first is the oldest.
    for (const oldest of this.#parked.keys()) {
      if (this.#parked.size <= MAX_PARKED) break;
      this.#drop(oldest);
    }
  }
}
