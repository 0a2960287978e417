// A failing consumer's retries (DESIGN §1): each consumer waits for its own next try, the wait
// doubling from the first to the most, and a consumer whose wants changed is tried at once.

/** The backoff after a failure: the first wait and the most, in ms. */
export type Backoff = { firstMs: number; maxMs: number };

/** A failed consumer waiting for its next try. */
type Retry = { failures: number; fingerprint: string | undefined; due: boolean; timer: NodeJS.Timeout };

/** The wait after `failures` failures in a row. */
export function backoffMs(backoff: Backoff, failures: number): number {
  return Math.min(backoff.firstMs * 2 ** (failures - 1), backoff.maxMs);
}

/** The retries of one helper, by consumer key. */
export class Retries {
  readonly #backoff: Backoff;
  readonly #due: (key: string) => void;
  readonly #byKey = new Map<string, Retry>();

  /** `due` hears a consumer's wait end. */
  constructor(backoff: Backoff, due: (key: string) => void) {
    this.#backoff = backoff;
    this.#due = due;
  }

  /** Whether the consumer may be worked on now: no failure waits, its wait ended, or it asks for something else now. */
  mayRun(key: string, fingerprint: string | undefined): boolean {
    const retry = this.#byKey.get(key);
    return !retry || retry.due || retry.fingerprint !== fingerprint;
  }

  /** Counts a failure of the consumer (asking for `fingerprint`) and arms its next try; returns the count and the wait. */
  failed(key: string, fingerprint: string | undefined): { failures: number; waitMs: number } {
    const last = this.#byKey.get(key);
    if (last) clearTimeout(last.timer);
    const failures = (last && last.fingerprint === fingerprint ? last.failures : 0) + 1;
    const waitMs = backoffMs(this.#backoff, failures);
    const retry: Retry = { failures, fingerprint, due: false, timer: setTimeout(() => {
      retry.due = true;
      this.#due(key);
    }, waitMs).unref() };
    this.#byKey.set(key, retry);
    return { failures, waitMs };
  }

  /** Forgets the consumer's failures: it was brought in step. */
  succeeded(key: string): void {
    const retry = this.#byKey.get(key);
    if (retry) clearTimeout(retry.timer);
    this.#byKey.delete(key);
  }

  /** Disarms every retry (the helper stops). */
  clear(): void {
    for (const retry of this.#byKey.values()) clearTimeout(retry.timer);
    this.#byKey.clear();
  }
}
