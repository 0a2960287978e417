// Plan writes that failed, tried again (DESIGN §4): a put or delete the bus refused or lost (the server
// killed with it in flight, its JetStream not back yet) asks one more pass after a wait that doubles
// while writes keep failing, rather than waiting for the next input change, which may never come.

/** The first wait before failed writes are tried again. */
export const FIRST_WRITE_RETRY_MS = 250;
/** The longest wait between tries of writes that keep failing. */
export const MAX_WRITE_RETRY_MS = 30_000;

/** Runs `fn` once after `ms`; the handle cancels it. */
export type Timer = (fn: () => void, ms: number) => { cancel(): void };

/** The real timer, unref'd: the bus connection keeps a running seat alive, a stopped one need not wait. */
export const unrefTimer: Timer = (fn, ms) => {
  const t = setTimeout(fn, ms);
  t.unref();
  return { cancel: () => clearTimeout(t) };
};

/** How WriteRetry waits. */
export type WriteRetryOptions = {
  /** The first wait (FIRST_WRITE_RETRY_MS). */
  firstMs?: number;
  /** The longest wait (MAX_WRITE_RETRY_MS). */
  maxMs?: number;
  /** The timer (unrefTimer); tests hand in their own. */
  timer?: Timer;
};

/** At most one retry waiting at a time; its wait doubles with each pass that still fails. */
export class WriteRetry {
  readonly #first: number;
  readonly #max: number;
  readonly #timer: Timer;
  #wait: number;
  #waiting: { cancel(): void } | undefined;
  #closed = false;

  /** `retry` is called when a wait ends: it asks the pass that tries the failed writes again. */
  constructor(private readonly retry: () => void, opts: WriteRetryOptions = {}) {
    this.#first = opts.firstMs ?? FIRST_WRITE_RETRY_MS;
    this.#max = opts.maxMs ?? MAX_WRITE_RETRY_MS;
    this.#timer = opts.timer ?? unrefTimer;
    this.#wait = this.#first;
  }

  /**
   * Takes the end of a pass: when writes failed, a retry after the current wait (unless one waits
   * already), the next wait doubled; when none failed, the wait is reset. Returns the wait asked, if any.
   */
  afterPass(failedWrites: number): number | undefined {
    if (failedWrites === 0) {
      this.#wait = this.#first;
      return undefined;
    }
    if (this.#waiting || this.#closed) return undefined;
    const wait = this.#wait;
    this.#wait = Math.min(wait * 2, this.#max);
    this.#waiting = this.#timer(() => {
      this.#waiting = undefined;
      if (!this.#closed) this.retry();
    }, wait);
    return wait;
  }

  /** Drops the retry waiting, and asks none from now on. */
  close(): void {
    this.#closed = true;
    this.#waiting?.cancel();
    this.#waiting = undefined;
  }
}
