// Plan writes that failed, tried again (DESIGN §4): a put or delete the bus refused or lost (the server
// killed with it in flight, its JetStream not back yet) asks one more pass after a wait that doubles
// while writes keep failing, rather than waiting for the next input change, which may never come.
import { Backoff } from '../../shared/base/backoff.ts';
import { unrefTimer, type Timer } from '../../shared/base/timer.ts';

/** The first wait before failed writes are tried again. */
export const FIRST_WRITE_RETRY_MS = 250;
/** The longest wait between tries of writes that keep failing. */
export const MAX_WRITE_RETRY_MS = 30_000;

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
  readonly #backoff: Backoff;
  readonly #timer: Timer;
  #waiting: { cancel(): void } | undefined;
  #closed = false;

  /** `retry` is called when a wait ends: it asks the pass that tries the failed writes again. */
  constructor(
    private readonly retry: () => void,
    opts: WriteRetryOptions = {},
  ) {
    this.#backoff = new Backoff({ firstMs: opts.firstMs ?? FIRST_WRITE_RETRY_MS, maxMs: opts.maxMs ?? MAX_WRITE_RETRY_MS });
    this.#timer = opts.timer ?? unrefTimer;
  }

  /**
   * Takes the end of a pass: when writes failed, a retry after the current wait (unless one waits
   * already), the next wait doubled; when none failed, the wait is reset. Returns the wait asked, if any.
   */
  afterPass(failedWrites: number): number | undefined {
    if (failedWrites === 0) {
      this.#backoff.reset();
      return undefined;
    }
    if (this.#waiting || this.#closed) return undefined;
    const wait = this.#backoff.failed();
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
