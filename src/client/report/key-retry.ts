// A write of a node's needs or reports that the bus refused or never acknowledged (a put whose ack
// does not come while a cluster fails over: PutRefusedError after 5 s, or 503 at once while the
// bucket has no leader) is tried again in the background, the wait doubling, until one try lands or
// a newer write of the same key replaces it. Nothing else would write it again: a report is written
// only when the module's state changes, and its next fill may be hours away.

/** The wait before a failed write's first retry. */
export const FIRST_KEY_RETRY_MS = 250;
/** The longest wait between tries: a few seconds, as a failover takes 5–20 s. */
export const MAX_KEY_RETRY_MS = 5000;

/** Runs `fn` once after `ms`; the handle cancels it. */
export type RetryTimer = (fn: () => void, ms: number) => { cancel(): void };

/** The real timer, unref'd: the bus connection keeps a running client alive, a stopped one need not wait. */
export const unrefRetryTimer: RetryTimer = (fn, ms) => {
  const t = setTimeout(fn, ms);
  t.unref();
  return { cancel: () => clearTimeout(t) };
};

/** How KeyRetry waits. */
export type KeyRetryOptions = {
  /** The first wait (FIRST_KEY_RETRY_MS). */
  firstMs?: number;
  /** The longest wait (MAX_KEY_RETRY_MS). */
  maxMs?: number;
  /** The timer (unrefRetryTimer); tests hand in their own. */
  timer?: RetryTimer;
};

/** Where KeyRetry says a failure (once per write), the retries (debug) and a late landing. */
export type KeyRetryLog = { warn(line: string): void; notice(line: string): void; debug(line: string): void };

type Current = { generation: number; waiting?: { cancel(): void } };

/** Writes keys, each failed write tried again until it lands or the key is written anew. */
export class KeyRetry {
  readonly #current = new Map<string, Current>();
  readonly #first: number;
  readonly #max: number;
  readonly #timer: RetryTimer;
  #generation = 0;
  #closed = false;

  constructor(private readonly log: KeyRetryLog, opts: KeyRetryOptions = {}) {
    this.#first = opts.firstMs ?? FIRST_KEY_RETRY_MS;
    this.#max = opts.maxMs ?? MAX_KEY_RETRY_MS;
    this.#timer = opts.timer ?? unrefRetryTimer;
  }

  /**
   * Runs `write` for `key` (a label naming bucket and key), replacing any retry of an older write of
   * it; a failure is said and tried again in the background. Resolves with whether the first try landed.
   */
  async write(key: string, write: () => Promise<unknown>): Promise<boolean> {
    this.#current.get(key)?.waiting?.cancel();
    const mine: Current = { generation: ++this.#generation };
    this.#current.set(key, mine);
    try {
      await write();
      this.#done(key, mine);
      return true;
    } catch (err) {
      if (this.#current.get(key) !== mine) return false;
      this.log.warn(`${key}: ${(err as Error).message}; trying again in ${this.#first} ms`);
      this.#later(key, mine, write, this.#first, 2);
      return false;
    }
  }

  /** Keys whose write has not landed yet. */
  get waiting(): number {
    return this.#current.size;
  }

  /** Drops every retry waiting, and starts none from now on. */
  close(): void {
    this.#closed = true;
    for (const c of this.#current.values()) c.waiting?.cancel();
    this.#current.clear();
  }

  #later(key: string, mine: Current, write: () => Promise<unknown>, wait: number, attempt: number): void {
    if (this.#closed) return;
    mine.waiting = this.#timer(() => {
      mine.waiting = undefined;
      if (this.#current.get(key) !== mine || this.#closed) return;
      write().then(
        () => {
          if (this.#current.get(key) !== mine) return;
          this.#done(key, mine);
          this.log.notice(`${key}: written on try ${attempt}`);
        },
        (err: unknown) => {
          if (this.#current.get(key) !== mine) return;
          const next = Math.min(wait * 2, this.#max);
          this.log.debug(`${key}: try ${attempt}: ${(err as Error).message}; trying again in ${next} ms`);
          this.#later(key, mine, write, next, attempt + 1);
        },
      );
    }, wait);
  }

  #done(key: string, mine: Current): void {
    if (this.#current.get(key) === mine) this.#current.delete(key);
  }
}
