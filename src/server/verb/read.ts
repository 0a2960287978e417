// The verb's reads (DESIGN §6) from a cursor: the keys under a filter listed once in key order and
// kept caught up with the stream, then only a page's values fetched, by direct get, pipelined in a
// bounded window. Stream order is write order, so key order needs the key list; values never do.
import { createInbox, Empty, type Msg, type NatsConnection } from '@nats-io/transport-node';
import { jsonBytes } from '../../shared/bytes.ts';
import { compareKeys } from '../../shared/keys.ts';

/** Direct gets one page has in flight at once, at most. */
export const MAX_IN_FLIGHT = 1024;
/** Bytes of values a page may have in flight or waiting, judged by the largest value it has seen. */
export const PREFETCH_BYTES = 2 * 1024 * 1024;
/** How long a read waits for the server's answer. */
export const READ_TIMEOUT_MS = 5000;
/** Key lists kept per connection (one per bucket and filter walked lately), at most. */
export const MAX_LISTINGS = 32;
/** A key list unused this long is dropped. */
export const LISTING_IDLE_MS = 60_000;
/** Stored changes a key list is caught up by one at a time, at most; past that the filter is listed again. */
export const MAX_CATCH_UP = 256;

/** A key and its stored value. */
export type Stored = { key: string; data: Uint8Array };

/** What a reader is told of its work, and its clock: injected so tests count and age without sleeping. */
export type ReaderHooks = {
  /** The clock, in ms. */
  now?: () => number;
  /** Called once per filter listed whole, with the number of keys. */
  onList?: (bucket: string, filter: string, keys: number) => void;
  /** Called once per value asked of the server. */
  onFetch?: (bucket: string, key: string) => void;
};

/** A read of a bucket that failed on the bus (the stream missing, no answer); the page is refused. */
export class BucketReadError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'BucketReadError';
  }
}

/** The index of the first key past `after` (0 without one), by binary search. */
export function firstAfter(keys: readonly string[], after: string | undefined): number {
  if (after === undefined) return 0;
  let low = 0;
  let high = keys.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (compareKeys(keys[mid]!, after) <= 0) low = mid + 1;
    else high = mid;
  }
  return low;
}

const readers = new WeakMap<NatsConnection, VerbReader>();

/** The reader of a connection, made on first use, so that its key lists outlive one request. */
export function readerOf(nc: NatsConnection): VerbReader {
  let reader = readers.get(nc);
  if (!reader) readers.set(nc, (reader = new VerbReader(nc)));
  return reader;
}

/** The verb's reads on one connection. */
export class VerbReader {
  readonly #index: KeyIndex;

  constructor(private readonly nc: NatsConnection, private readonly hooks: ReaderHooks = {}) {
    this.#index = new KeyIndex(nc, hooks);
  }

  /**
   * The stored entries under `filter` past `after`, in key order, a run at a time. `room()` says
   * how many more the caller might take: values are fetched that far ahead and no further. A bus
   * failure is thrown as a BucketReadError.
   */
  async *entries(bucket: string, filter: string, after: string | undefined, maxPayload: number, room: () => number): AsyncGenerator<Stored[]> {
    try {
      const keys = await this.#index.keys(bucket, filter);
      yield* fetchValues(this.nc, bucket, keys, firstAfter(keys, after), { maxPayload, room, onFetch: this.hooks.onFetch });
    } catch (err) {
      throw err instanceof BucketReadError ? err : new BucketReadError((err as Error).message, { cause: err });
    }
  }
}

/** A filter's keys in key order as of a stream sequence. Never changed once made: a page may still be reading it. */
type Listing = { keys: readonly string[]; seq: number; created: string; usedAt: number };

/** The key lists of one connection, per bucket and filter, caught up with the stream before each use. */
class KeyIndex {
  readonly #listings = new Map<string, Listing>();
  readonly #turns = new Map<string, Promise<unknown>>();
  readonly #now: () => number;
  #sweeper: NodeJS.Timeout | undefined;

  constructor(private readonly nc: NatsConnection, private readonly hooks: ReaderHooks) {
    this.#now = hooks.now ?? Date.now;
  }

  /** The keys under `filter` as of now: listed when new, caught up when the stream moved on. */
  async keys(bucket: string, filter: string): Promise<readonly string[]> {
    const id = `${bucket} ${filter}`;
    // One catch-up at a time per filter: two at once would both replay the same changes.
    const turn = (this.#turns.get(id) ?? Promise.resolve()).then(() => this.#current(id, bucket, filter));
    const settled = turn.catch(() => undefined);
    this.#turns.set(id, settled);
    void settled.then(() => this.#turns.get(id) === settled && this.#turns.delete(id));
    return (await turn).keys;
  }

  async #current(id: string, bucket: string, filter: string): Promise<Listing> {
    const now = this.#now();
    this.#sweep();
    const state = await streamState(this.nc, bucket);
    let listing = this.#listings.get(id);
    // A stream made again (or cut back) starts its sequences anew: its old list says nothing.
    if (listing && (listing.created !== state.created || listing.seq > state.lastSeq)) listing = undefined;
    if (listing && listing.seq < state.lastSeq) listing = await catchUp(this.nc, bucket, filter, listing, state.lastSeq);
    if (!listing) {
      const keys = await listKeys(this.nc, bucket, filter);
      this.hooks.onList?.(bucket, filter, keys.length);
      listing = { keys, seq: state.lastSeq, created: state.created, usedAt: now };
    }
    this.#listings.delete(id);
    this.#listings.set(id, { ...listing, usedAt: now });
    // A Map iterates in insertion order, so the first is the least recently used.
    for (const oldest of this.#listings.keys()) {
      if (this.#listings.size <= MAX_LISTINGS) break;
      this.#listings.delete(oldest);
    }
    this.#armSweeper();
    return listing;
  }

  #sweep(): void {
    const now = this.#now();
    for (const [id, listing] of this.#listings) if (now - listing.usedAt > LISTING_IDLE_MS) this.#listings.delete(id);
  }

  // Idle lists are dropped even when no request comes to notice; the timer never keeps the process up.
  #armSweeper(): void {
    if (this.#sweeper || this.#listings.size === 0) return;
    this.#sweeper = setTimeout(() => {
      this.#sweeper = undefined;
      this.#sweep();
      this.#armSweeper();
    }, LISTING_IDLE_MS).unref();
  }
}

type StreamInfoReply = {
  error?: { code?: number; description?: string };
  created?: string;
  total?: number;
  state?: { last_seq?: number; subjects?: Record<string, number> };
};

async function streamInfo(nc: NatsConnection, bucket: string, request?: object): Promise<StreamInfoReply> {
  const msg = await nc.request(`$JS.API.STREAM.INFO.KV_${bucket}`, request ? jsonBytes(request) : Empty, { timeout: READ_TIMEOUT_MS });
  const reply = msg.json<StreamInfoReply>();
  if (reply.error) throw new BucketReadError(reply.error.description ?? `stream info error ${reply.error.code}`);
  return reply;
}

/** The stream's last sequence and creation time: a plain stream info, answered without walking anything. */
async function streamState(nc: NatsConnection, bucket: string): Promise<{ lastSeq: number; created: string }> {
  const info = await streamInfo(nc, bucket);
  return { lastSeq: info.state?.last_seq ?? 0, created: info.created ?? '' };
}

/**
 * Every key under `filter`, from the stream's subject list: nats-server answers it sorted, in
 * pages of up to 100,000 subjects by offset. A deleted key is still a subject (its tombstone); the
 * fetch of its value skips it.
 */
async function listKeys(nc: NatsConnection, bucket: string, filter: string): Promise<string[]> {
  const prefix = `$KV.${bucket}.`;
  const keys: string[] = [];
  for (;;) {
    const info = await streamInfo(nc, bucket, { subjects_filter: prefix + filter, offset: keys.length });
    const subjects = Object.keys(info.state?.subjects ?? {});
    for (const subject of subjects) keys.push(subject.slice(prefix.length));
    if (subjects.length === 0 || keys.length >= (info.total ?? 0)) break;
  }
  return sortedUnique(keys);
}

// Pages by offset can repeat a subject when one is added between them.
function sortedUnique(keys: string[]): string[] {
  if (!keys.every((key, i) => i === 0 || compareKeys(keys[i - 1]!, key) < 0)) keys.sort(compareKeys);
  return keys.filter((key, i) => i === 0 || key !== keys[i - 1]);
}

/**
 * Catches a listing up with the changes stored after it, one direct get `next_by_subj` at a time,
 * or undefined when there are more than MAX_CATCH_UP of them (listing again is cheaper then).
 * A bucket keeps one revision per key, so what is stored past the listing's sequence is the
 * newest state of every key changed since. The listing moves on only to the last change seen: a
 * replica answering the direct get may not hold the newest ones yet, and they are asked again.
 */
async function catchUp(nc: NatsConnection, bucket: string, filter: string, listing: Listing, lastSeq: number): Promise<Listing | undefined> {
  const prefix = `$KV.${bucket}.`;
  const changed = new Map<string, boolean>();
  let seen = listing.seq;
  for (let steps = 0; seen < lastSeq; steps++) {
    if (steps === MAX_CATCH_UP) return undefined;
    const msg = await nc.request(`$JS.API.DIRECT.GET.KV_${bucket}`, jsonBytes({ seq: seen + 1, next_by_subj: prefix + filter }), { timeout: READ_TIMEOUT_MS });
    if (msg.headers?.code === 404) break;
    const stored = storedValue(msg);
    const subject = msg.headers?.get('Nats-Subject') ?? '';
    const at = Number(msg.headers?.get('Nats-Sequence'));
    if (!subject.startsWith(prefix) || !(at > seen)) throw new BucketReadError(`direct get after sequence ${seen} answered without its subject or sequence`);
    changed.set(subject.slice(prefix.length), stored !== null);
    seen = at;
  }
  return { ...listing, keys: applyChanges(listing.keys, changed), seq: seen };
}

/** The keys with those changed since merged in (true: present, false: deleted), still in key order. */
function applyChanges(keys: readonly string[], changed: Map<string, boolean>): readonly string[] {
  const has = (key: string) => keys[firstAfter(keys, key) - 1] === key;
  const added = [...changed].filter(([key, present]) => present && !has(key)).map(([key]) => key).sort(compareKeys);
  const gone = [...changed].some(([key, present]) => !present && has(key));
  if (added.length === 0 && !gone) return keys;
  const merged: string[] = [];
  let a = 0;
  for (const key of keys) {
    while (a < added.length && compareKeys(added[a]!, key) < 0) merged.push(added[a++]!);
    if (changed.get(key) !== false) merged.push(key);
  }
  merged.push(...added.slice(a));
  return merged;
}

/** A direct get's value; null when the key is gone (no message, or a delete or purge marker). */
function storedValue(msg: Msg): Uint8Array | null {
  const code = msg.headers?.code ?? 0;
  if (code === 404) return null;
  if (code === 503) throw new BucketReadError('no responders: the bucket is missing or not granted to this account');
  if (code !== 0) throw new BucketReadError(`direct get: ${code} ${msg.headers?.description ?? ''}`.trim());
  const op = msg.headers?.get('KV-Operation');
  return op === 'DEL' || op === 'PURGE' ? null : msg.data;
}

type FetchOptions = { maxPayload: number; room: () => number; onFetch?: ReaderHooks['onFetch'] };

/**
 * Yields the values of keys[from…] that have one, in order, a run of those arrived at a time:
 * direct gets `last_by_subj` on the connection's own inbox, at most MAX_IN_FLIGHT and
 * PREFETCH_BYTES (by the largest value seen, assumed max payload before the first) ahead of the
 * next one read, and no further than `room()` asks.
 */
async function* fetchValues(nc: NatsConnection, bucket: string, keys: readonly string[], from: number, opts: FetchOptions): AsyncGenerator<Stored[]> {
  const inbox = createInbox((nc as unknown as { options?: { inboxPrefix?: string } }).options?.inboxPrefix);
  const arrived = new Map<number, Msg>();
  let wake: ((err?: Error) => void) | undefined;
  let heard = Date.now();
  const sub = nc.subscribe(`${inbox}.*`, {
    callback: (err, msg) => {
      if (!err) arrived.set(Number(msg.subject.slice(inbox.length + 1)), msg);
      heard = Date.now();
      wake?.(err ?? undefined);
    },
  });
  // One timer for the page rather than one per value: a read that hears nothing for READ_TIMEOUT_MS fails.
  const watchdog = setInterval(() => {
    if (Date.now() - heard > READ_TIMEOUT_MS) wake?.(new BucketReadError(`no answer to a direct get within ${READ_TIMEOUT_MS} ms`));
  }, READ_TIMEOUT_MS / 5);
  let issued = from;
  let largest = 0;
  try {
    for (let next = from; next < keys.length;) {
      const byBytes = Math.max(1, Math.floor(PREFETCH_BYTES / (largest || opts.maxPayload)));
      const ahead = Math.min(MAX_IN_FLIGHT, byBytes, Math.max(1, opts.room()));
      for (; issued < keys.length && issued < next + ahead; issued++) {
        // The subject in the body, not the request subject: a long key cannot make a line the server refuses.
        nc.publish(`$JS.API.DIRECT.GET.KV_${bucket}`, jsonBytes({ last_by_subj: `$KV.${bucket}.${keys[issued]}` }), { reply: `${inbox}.${issued}` });
        opts.onFetch?.(bucket, keys[issued]!);
      }
      if (!arrived.has(next)) {
        heard = Date.now();
        await new Promise<void>((resolve, reject) => (wake = (err) => (err ? reject(err) : arrived.has(next) && resolve())));
        wake = undefined;
      }
      const run: Stored[] = [];
      for (let msg = arrived.get(next); msg; msg = arrived.get(++next)) {
        arrived.delete(next);
        largest = Math.max(largest, msg.data.length);
        const data = storedValue(msg);
        if (data) run.push({ key: keys[next]!, data });
      }
      if (run.length > 0) yield run;
    }
  } finally {
    clearInterval(watchdog);
    sub.unsubscribe();
  }
}
