// A failing consumer's retries (DESIGN §1): each consumer waits for its own next try, the wait
// doubling from the first to the most (shared/base/backoff.ts), and a consumer whose wants changed is tried at once.
import { Backoff, type BackoffLimits } from '../shared/base/backoff.ts';
import { unrefTimer, type Timer } from '../shared/base/timer.ts';

/** A failed consumer waiting for its next try: its failures in a row while it asks for `fingerprint`. */
type Retry = { backoff: Backoff; fingerprint: string | undefined; due: boolean; waiting?: { cancel(): void } };

/** The retries of one helper, by consumer key. */
export class Retries {
  readonly #limits: BackoffLimits;
  readonly #due: (key: string) => void;
  readonly #timer: Timer;
  readonly #byKey = new Map<string, Retry>();

  /** `due` hears a consumer's wait end; `timer` waits (tests hand in their own). */
  constructor(limits: BackoffLimits, due: (key: string) => void, timer: Timer = unrefTimer) {
    this.#limits = limits;
    this.#due = due;
    this.#timer = timer;
  }

  /** Whether the consumer may be worked on now: no failure waits, its wait ended, or it asks for something else now. */
  mayRun(key: string, fingerprint: string | undefined): boolean {
    const retry = this.#byKey.get(key);
    return !retry || retry.due || retry.fingerprint !== fingerprint;
  }

  /** Counts a failure of the consumer (asking for `fingerprint`) and arms its next try; returns the count and the wait. */
  failed(key: string, fingerprint: string | undefined): { failures: number; waitMs: number } {
    const last = this.#byKey.get(key);
    last?.waiting?.cancel();
    // Asking for something else is progress: its backoff starts over.
    const backoff = last && last.fingerprint === fingerprint ? last.backoff : new Backoff(this.#limits);
    const waitMs = backoff.failed();
    const retry: Retry = { backoff, fingerprint, due: false };
    retry.waiting = this.#timer(() => {
      retry.due = true;
      this.#due(key);
    }, waitMs);
    this.#byKey.set(key, retry);
    return { failures: backoff.failures, waitMs };
  }

  /** Forgets the consumer's failures: it was brought in step. */
  succeeded(key: string): void {
    this.#byKey.get(key)?.waiting?.cancel();
    this.#byKey.delete(key);
  }

  /** Disarms every retry (the helper stops). */
  clear(): void {
    for (const retry of this.#byKey.values()) retry.waiting?.cancel();
    this.#byKey.clear();
  }
}
