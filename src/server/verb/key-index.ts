// The verb's key lists (DESIGN §6): a filter's keys listed once in key order from the stream's
// subject list, then kept caught up with the changes stored after it. Stream order is write order,
// so key order needs the list; a page's values are fetched apart (value-fetch.ts).
import type { NatsConnection } from '@nats-io/transport-node';
import { jsonBytes } from '../../shared/base/bytes.ts';
import { compareKeys } from '../../shared/contract/keys.ts';
import { READ_TIMEOUT_MS } from '../../shared/contract/verb.ts';
import { BucketReadError, directGetSubject, keyPrefix, storedValue, streamInfo } from './direct-get.ts';

/** Key lists kept per connection (one per bucket and filter walked lately), at most. */
export const MAX_LISTINGS = 32;
/** A key list unused this long is dropped. */
export const LISTING_IDLE_MS = 60_000;
/** Stored changes a key list is caught up by one at a time, at most; past that the filter is listed again. */
export const MAX_CATCH_UP = 256;

/** What a key index is told of its work, and its clock: injected so tests count and age without sleeping. */
export type KeyIndexHooks = {
  /** The clock, in ms. */
  now?: () => number;
  /** Called once per filter listed whole, with the number of keys. */
  onList?: (bucket: string, filter: string, keys: number) => void;
};

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

/** A filter's keys in key order as of a stream sequence. Never changed once made: a page may still be reading it. */
type Listing = { keys: readonly string[]; seq: number; created: string; usedAt: number };

/** The key lists of one connection, per bucket and filter, caught up with the stream before each use. */
export class KeyIndex {
  readonly #listings = new Map<string, Listing>();
  readonly #turns = new Map<string, Promise<unknown>>();
  readonly #now: () => number;
  #sweeper: NodeJS.Timeout | undefined;

  constructor(
    private readonly nc: NatsConnection,
    private readonly hooks: KeyIndexHooks = {},
  ) {
    this.#now = hooks.now ?? Date.now;
  }

  /**
   * The keys under `filter` as of now: listed when new, caught up when the stream moved on; `asOf`
   * names the stream's state they were judged at (its creation, first and last sequences), equal
   * for two calls only when nothing was stored or purged between them.
   */
  async keys(bucket: string, filter: string): Promise<{ keys: readonly string[]; asOf: string }> {
    const id = `${bucket} ${filter}`;
    // One catch-up at a time per filter: two at once would both replay the same changes.
    const turn = (this.#turns.get(id) ?? Promise.resolve()).then(() => this.#current(id, bucket, filter));
    const settled = turn.catch(() => undefined);
    this.#turns.set(id, settled);
    void settled.then(() => this.#turns.get(id) === settled && this.#turns.delete(id));
    const { listing, asOf } = await turn;
    return { keys: listing.keys, asOf };
  }

  async #current(id: string, bucket: string, filter: string): Promise<{ listing: Listing; asOf: string }> {
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
    return { listing, asOf: `${state.created} ${state.firstSeq} ${state.lastSeq}` };
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

/** The stream's first and last sequences and creation time: a plain stream info, answered without walking anything. */
async function streamState(nc: NatsConnection, bucket: string): Promise<{ firstSeq: number; lastSeq: number; created: string }> {
  const info = await streamInfo(nc, bucket);
  return { firstSeq: info.state?.first_seq ?? 0, lastSeq: info.state?.last_seq ?? 0, created: info.created ?? '' };
}

/**
 * Every key under `filter`, from the stream's subject list: nats-server answers it sorted, in
 * pages of up to 100,000 subjects by offset. A deleted key is still a subject (its tombstone); the
 * fetch of its value skips it.
 */
async function listKeys(nc: NatsConnection, bucket: string, filter: string): Promise<string[]> {
  const prefix = keyPrefix(bucket);
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
  const prefix = keyPrefix(bucket);
  const changed = new Map<string, boolean>();
  let seen = listing.seq;
  for (let steps = 0; seen < lastSeq; steps++) {
    if (steps === MAX_CATCH_UP) return undefined;
    const msg = await nc.request(directGetSubject(bucket), jsonBytes({ seq: seen + 1, next_by_subj: prefix + filter }), { timeout: READ_TIMEOUT_MS });
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
  const added = [...changed]
    .filter(([key, present]) => present && !has(key))
    .map(([key]) => key)
    .sort(compareKeys);
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
