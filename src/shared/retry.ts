// Trying again with a doubling, capped wait; the sleep is handed in, so tests assert the waits without time passing.

/** Waits `ms`: the real one is a timer, a test's resolves when the test says. */
export type Sleep = (ms: number) => Promise<void>;

/** The wait after the first failed try, in ms. */
export const FIRST_RETRY_MS = 250;

/** One retry loop: what to try, how to wait, and who hears the failures. */
export type Retry<T> = {
  /** One try; a throw is a failure, followed by a wait and another try. */
  attempt(): Promise<T>;
  /** Hears each failure and the wait that follows it; returning false gives up. */
  onFailure(err: unknown, waitMs: number): boolean;
  /** Waits between tries. */
  sleep: Sleep;
  /** Whether the loop was stopped; asked before every try. */
  stopped(): boolean;
  /** The longest wait, in ms. */
  maxMs: number;
  /** The first wait, in ms (default FIRST_RETRY_MS). */
  firstMs?: number;
};

/** Tries until a try succeeds (its value), or the loop is stopped or gives up (undefined). */
export async function retryWithBackoff<T>(retry: Retry<T>): Promise<T | undefined> {
  for (let wait = retry.firstMs ?? FIRST_RETRY_MS; !retry.stopped(); wait = Math.min(wait * 2, retry.maxMs)) {
    try {
      return await retry.attempt();
    } catch (err) {
      if (!retry.onFailure(err, wait)) return undefined;
      await retry.sleep(wait);
    }
  }
  return undefined;
}

/** The real sleep, unref'd: the connection keeps a running program alive, a stopped one need not wait for this. */
export const timerSleep: Sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms).unref());
