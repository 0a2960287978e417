// A write of a node's needs or reports that the bus refused or never acknowledged (a put whose ack
// does not come while a cluster fails over: PutRefusedError after 5 s, or 503 at once while the
// bucket has no leader) is tried again in the background, the wait doubling, until one try lands or
// a newer write of the same key replaces it. Nothing else would write it again: a report is written
// only when the module's state changes, and its next fill may be hours away.
import { Backoff, type BackoffLimits } from '../../shared/base/backoff.ts';
import { unrefTimer, type Timer } from '../../shared/base/timer.ts';
import { errorText } from '../../shared/base/errors.ts';

/** The wait before a failed write's first retry. */
export const FIRST_KEY_RETRY_MS = 250;
/** The longest wait between tries: a few seconds, as a failover takes 5–20 s. */
export const MAX_KEY_RETRY_MS = 5000;

/** How KeyRetry waits. */
export type KeyRetryOptions = {
  /** The first wait (FIRST_KEY_RETRY_MS). */
  firstMs?: number;
  /** The longest wait (MAX_KEY_RETRY_MS). */
  maxMs?: number;
  /** The timer (unrefTimer); tests hand in their own. */
  timer?: Timer;
};

/** Where KeyRetry says a failure (once per write), the retries (debug) and a late landing. */
export type KeyRetryLog = { warn(line: string): void; notice(line: string): void; debug(line: string): void };

/** The write of a key being tried: a newer one replaces it, and its backoff starts over. */
type Current = { generation: number; backoff: Backoff; waiting?: { cancel(): void } };

/** Writes keys, each failed write tried again until it lands or the key is written anew. */
export class KeyRetry {
  readonly #current = new Map<string, Current>();
  readonly #limits: BackoffLimits;
  readonly #timer: Timer;
  #generation = 0;
  #closed = false;

  constructor(
    private readonly log: KeyRetryLog,
    opts: KeyRetryOptions = {},
  ) {
    this.#limits = { firstMs: opts.firstMs ?? FIRST_KEY_RETRY_MS, maxMs: opts.maxMs ?? MAX_KEY_RETRY_MS };
    this.#timer = opts.timer ?? unrefTimer;
  }

  /**
   * Runs `write` for `key` (a label naming bucket and key), replacing any retry of an older write of
   * it; a failure is said and tried again in the background. Resolves with whether the first try landed.
   */
  async write(key: string, write: () => Promise<unknown>): Promise<boolean> {
    this.#current.get(key)?.waiting?.cancel();
    const mine: Current = { generation: ++this.#generation, backoff: new Backoff(this.#limits) };
    this.#current.set(key, mine);
    try {
      await write();
      this.#done(key, mine);
      return true;
    } catch (err) {
      if (this.#current.get(key) !== mine) return false;
      const wait = mine.backoff.failed();
      this.log.warn(`${key}: ${errorText(err)}; trying again in ${wait} ms`);
      this.#later(key, mine, write, wait);
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

  #later(key: string, mine: Current, write: () => Promise<unknown>, wait: number): void {
    if (this.#closed) return;
    // The first try and each failure since: this one is the next.
    const attempt = mine.backoff.failures + 1;
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
          const next = mine.backoff.failed();
          this.log.debug(`${key}: try ${attempt}: ${errorText(err)}; trying again in ${next} ms`);
          this.#later(key, mine, write, next);
        },
      );
    }, wait);
  }

  #done(key: string, mine: Current): void {
    if (this.#current.get(key) === mine) this.#current.delete(key);
  }
}
