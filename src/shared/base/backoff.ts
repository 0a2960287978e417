// The one backoff (STYLE.md's kubernetes-client anchor): a first wait, doubled after each failure in a
// row up to a cap, and back to the first on progress. Each caller keeps its own numbers: a write
// retried in the background 250 ms→5 s, the seat's plan writes 250 ms→30 s, the vault 1 s→30 s.

/** A backoff's numbers: the first wait and the longest, in ms. */
export type BackoffLimits = {
  /** The wait after the first failure. */
  firstMs: number;
  /** The longest wait: the doubling stops here. */
  maxMs: number;
};

/** The wait after `failures` failures in a row (1: the first wait), doubling up to the longest. */
export function backoffWait(limits: BackoffLimits, failures: number): number {
  // The exponent is bounded so that a long outage never doubles past a finite number (0 × ∞ is NaN).
  const doublings = Math.min(Math.max(failures, 1) - 1, 52);
  return Math.min(limits.firstMs * 2 ** doublings, limits.maxMs);
}

/** Failures in a row and the wait each asks for; progress starts it over. */
export class Backoff {
  #failures = 0;

  constructor(private readonly limits: BackoffLimits) {}

  /** Counts a failure and returns the wait before the next try. */
  failed(): number {
    return backoffWait(this.limits, ++this.#failures);
  }

  /** Failures in a row so far. */
  get failures(): number {
    return this.#failures;
  }

  /** Progress: the next failure waits the first wait again. */
  reset(): void {
    this.#failures = 0;
  }
}
