// Reading a node's keys of a bucket by key (DESIGN §11: a node reads only its own keys): a watch of
// `<node>.>` that begins at the stream's tail, and a literal direct get (`last_by_subj`) of each key a
// source names. On nats-server 2.9 a wildcard-filtered consumer made from sequence 1 scans every
// subject of the stream (0.4 µs each: a fleet starting together costs O(N²)); a deliver-new create
// and a literal get are flat (docs/decisions.md, issue 34). A node naming many keys takes one whole
// read of `<node>.>` instead, which is cheaper than that many gets.
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { watchBucket } from '../../shared/bus/watch/bucket.ts';
import type { Watch, WatchEvent } from '../../shared/bus/watch/types.ts';
import { watchKv } from '../../shared/bus/watch/watch.ts';
import { describeBusError } from '../../shared/base/errors.ts';
import type { Logger } from '../../shared/cli/log.ts';
import { Slots } from '../../shared/base/slots.ts';

/**
 * Past this many keys of one bucket named by one node, the node reads `<node>.>` whole once instead of
 * a get per key. Pipelined gets cost nats-server 2.9.10 ~0.016 ms each (1,024: 16 ms), a whole read
 * ~0.6 µs per subject of the stream (13 ms at 20,000 subjects, 62 ms at 100,000; bench/keyed-reads-cost.ts):
 * 1,024 gets cost what one read of a ~27,000-subject stream does. A node cannot know the stream's size
 * (its info would list every node's keys), so the rule is a count: a fleet's usual node (a few dozen
 * keys) stays on gets, flat in the fleet's size; a node naming thousands (1,000 modules × 2 config
 * keys) takes the one read, cheaper for it unless the fleet around it is very large.
 */
export const WHOLE_READ_KEYS = 1024;

/** How many direct gets one bucket's reads keep in flight at once. */
export const GETS_IN_FLIGHT = 64;

/** How long one direct get waits for its answer. */
const GET_TIMEOUT_MS = 5000;

/** The longest wait before a failed get is asked again. */
const MAX_RETRY_MS = 5000;

/** What a key's read says: known (held, or known absent) or not yet read, with a promise of its read. */
export type KeyRead = { state: 'known' } | { state: 'unread'; read: Promise<void> };

/**
 * A node's keys of one bucket, read by key and kept current by a tail watch: every value read (a
 * watch event, a get's answer, a whole read's) goes to `onEvent` only when its revision is higher than
 * the key's last (a get and a watch event may cross); a key read absent is told as a delete at
 * revision 0, so the source holding it says it waits.
 */
export class KeyedReads {
  readonly #watch: Watch;
  /** The revision each key was last told at (0: read absent). */
  readonly #revisions = new Map<string, number>();
  /** Keys asked for and not yet answered, with the promise their answer resolves. */
  readonly #unread = new Map<string, { read: Promise<void>; done(): void }>();
  /** Key prefixes (`<node>.<x>.`) read whole: every key under one is known. */
  readonly #prefixes = new Map<string, Promise<void>>();
  readonly #queue = new Set<string>();
  /** Prefixes whose whole read is done. */
  readonly #prefixDone = new Set<string>();
  #flushing: NodeJS.Immediate | undefined;
  #asked = 0;
  /** The gets in flight, GETS_IN_FLIGHT at most. */
  readonly #slots = new Slots(GETS_IN_FLIGHT);
  #whole = false;
  #stopped = false;
  #jsm: Promise<JetStreamManager> | undefined;
  #failing = '';

  constructor(
    private readonly nc: NatsConnection,
    private readonly bucket: string,
    private readonly node: string,
    private readonly onEvent: (event: WatchEvent) => void,
    private readonly log: Logger,
  ) {
    // A wiped store's re-read numbers revisions from 1 again: every revision told before is forgotten,
    // and the keys read by get are held by the watch so that one the re-read lacks is said gone.
    this.#watch = watchBucket(nc, bucket, `${node}.>`, (e) => this.#take(e), log, { from: 'tail', onReread: () => this.#revisions.clear() });
  }

  /** Resolves once the tail watch is made (nothing stored to catch up with). */
  get caughtUp(): Promise<void> {
    return this.#watch.caughtUp;
  }

  /** Resolves once the watch is made or its bucket was answered missing. */
  settled(): Promise<void> {
    return this.#watch.settled ?? this.#watch.caughtUp;
  }

  /** Whether `key` was read (held or known absent); when not, it is read now and the promise resolves once it is. */
  want(key: string): KeyRead {
    if (this.#revisions.has(key) || this.#whole || this.#underRead(key)) return { state: 'known' };
    const unread = this.#unread.get(key);
    if (unread) return { state: 'unread', read: unread.read };
    let done!: () => void;
    const read = new Promise<void>((resolve) => (done = resolve));
    this.#unread.set(key, { read, done });
    this.#queue.add(key);
    this.#flushing ??= setImmediate(() => void this.#flush());
    return { state: 'unread', read };
  }

  /** Reads every key under `<node>.<token>.` once (a failure path: a config hint); resolves when read. */
  readPrefix(token: string): Promise<void> {
    const prefix = `${this.node}.${token}.`;
    let reading = this.#prefixes.get(prefix);
    if (!reading) this.#prefixes.set(prefix, (reading = this.#readWhole(`${prefix}>`)));
    return reading;
  }

  /** Whether every key under `<node>.<token>.` was read (readPrefix, or the node's whole read). */
  prefixRead(token: string): boolean {
    return this.#whole || this.#prefixDone.has(`${this.node}.${token}.`);
  }

  /** Stops the watch; reads in flight are dropped. */
  stop(): void {
    this.#stopped = true;
    if (this.#flushing) clearImmediate(this.#flushing);
    this.#watch.stop();
  }

  #underRead(key: string): boolean {
    for (const prefix of this.#prefixDone) if (key.startsWith(prefix)) return true;
    return false;
  }

  /** Tells a value when it is newer than what was told of its key, and ends a read waiting for it. */
  #take(event: WatchEvent): void {
    const known = this.#revisions.get(event.key);
    if (known === undefined || event.revision > known) {
      this.#revisions.set(event.key, event.revision);
      if (event.value !== null && event.revision > 0) this.#watch.hold?.(event.key, event.revision);
      this.onEvent(event);
    }
    // A watch event is newer than anything stored when the key was asked: its read is answered too.
    this.#answered(event.key);
  }

  #answered(key: string): void {
    const unread = this.#unread.get(key);
    this.#unread.delete(key);
    unread?.done();
  }

  /** Reads `<node>.>` whole now, before keys are named (sources/index.ts WHOLE_READ_MODULES); once the watch is made. */
  async readWhole(): Promise<void> {
    if ((await this.#made()) && !this.#whole && !this.#stopped) await this.#readNode('before the first fills');
  }

  /** Whether the tail watch is made (false: its bucket was answered missing, or not granted). */
  #made(): Promise<boolean> {
    return Promise.race([this.#watch.caughtUp.then(() => true), this.settled().then(() => false)]).catch(() => false);
  }

  /** Reads `<node>.>` whole (`why`: for the log); every key unread then is known, absent when not read. False when the read failed. */
  async #readNode(why: string): Promise<boolean> {
    this.log.debug(`${this.bucket}: reading ${this.node}.> whole once (${why})`);
    try {
      await this.#readWhole(`${this.node}.>`);
      this.#whole = true;
      for (const key of [...this.#unread.keys()]) this.#take({ key, revision: 0, value: null });
      return true;
    } catch (err) {
      this.log.warn(`${this.bucket}: reading ${this.node}.> whole: ${describeBusError(err)}; reading its keys one by one`);
      return false;
    }
  }

  /** Reads the queued keys once the watch is made (a change after that arrives on it): by gets, or one whole read. */
  async #flush(): Promise<void> {
    this.#flushing = undefined;
    const made = await this.#made();
    if (this.#stopped) return;
    const keys = [...this.#queue].filter((k) => this.#unread.has(k));
    this.#queue.clear();
    if (keys.length === 0) return;
    if (!made) return this.#missing(keys);
    // Past the rule's count, one whole read instead of more gets.
    if (!this.#whole && this.#asked + keys.length > WHOLE_READ_KEYS && (await this.#readNode(`${this.#asked + keys.length} keys of ${this.node} named`)))
      return;
    this.#asked += keys.length;
    for (const key of keys) void this.#get(key);
  }

  /**
   * The bucket was answered missing (or not granted): its keys are absent for now, said waited for as
   * before; once the watch is made they are read, so a value stored before it began is not missed.
   */
  #missing(keys: string[]): void {
    for (const key of keys) this.#take({ key, revision: 0, value: null });
    void this.#watch.caughtUp.then(
      () => {
        for (const key of keys) {
          if (this.#revisions.get(key) !== 0 || this.#unread.has(key)) continue;
          let done!: () => void;
          this.#unread.set(key, { read: new Promise<void>((resolve) => (done = resolve)), done });
          this.#asked++;
          void this.#get(key);
        }
      },
      () => undefined,
    );
  }

  /** Reads `filter` whole from sequence 1 (a wildcard create: its scan is the cost), telling each key, then marking the prefix read. */
  async #readWhole(filter: string): Promise<void> {
    const seen = new Set<string>();
    const watch = await watchKv(
      this.nc,
      this.bucket,
      filter,
      (e) => {
        seen.add(e.key);
        this.#take(e);
      },
      this.log,
    );
    try {
      await watch.caughtUp;
    } finally {
      watch.stop();
    }
    const prefix = filter.slice(0, -1);
    this.#prefixDone.add(prefix);
    // Keys asked under it and not stored: absent.
    for (const key of [...this.#unread.keys()]) if (key.startsWith(prefix) && !seen.has(key)) this.#take({ key, revision: 0, value: null });
  }

  /** One literal direct get, GETS_IN_FLIGHT at a time, asked again (waiting longer each time) until answered. */
  async #get(key: string, wait = 250): Promise<void> {
    await this.#slots.take();
    try {
      if (this.#stopped || !this.#unread.has(key)) return;
      this.#jsm ??= jetstreamManager(this.nc, { checkAPI: false, timeout: GET_TIMEOUT_MS });
      const msg = await (await this.#jsm).direct.getMessage(`KV_${this.bucket}`, { last_by_subj: `$KV.${this.bucket}.${key}` });
      if (!msg) return this.#take({ key, revision: 0, value: null });
      const op = msg.header.get('KV-Operation');
      const deleted = op === 'DEL' || op === 'PURGE';
      this.#take({ key, revision: msg.seq, value: deleted ? null : msg.data, at: Date.parse(msg.timestamp) });
    } catch (err) {
      if (this.#stopped) return;
      const line = `${this.bucket}: reading ${key}: ${describeBusError(err)}; asking again`;
      if (line !== this.#failing) this.log.warn(line);
      this.#failing = line;
      setTimeout(() => void this.#get(key, Math.min(wait * 2, MAX_RETRY_MS)), wait).unref();
    } finally {
      this.#slots.release();
    }
  }
}
