// Trying again with the one backoff (shared/base/backoff.ts); the timer is handed in, so tests assert the waits without time passing.
import { Backoff } from './backoff.ts';
import { sleepOn, unrefTimer, type Timer } from './timer.ts';

/** The wait after the first failed try, in ms. */
export const FIRST_RETRY_MS = 250;

/** One retry loop: what to try, how to wait, and who hears the failures. */
export type Retry<T> = {
  /** One try; a throw is a failure, followed by a wait and another try. */
  attempt(): Promise<T>;
  /** Hears each failure and the wait that follows it; returning false gives up. */
  onFailure(err: unknown, waitMs: number): boolean;
  /** Whether the loop was stopped; asked before every try. */
  stopped(): boolean;
  /** The longest wait, in ms. */
  maxMs: number;
  /** The first wait, in ms (default FIRST_RETRY_MS). */
  firstMs?: number;
  /** Waits between tries (default unrefTimer). */
  timer?: Timer;
};

/** Tries until a try succeeds (its value), or the loop is stopped or gives up (undefined). */
export async function retryWithBackoff<T>(retry: Retry<T>): Promise<T | undefined> {
  const backoff = new Backoff({ firstMs: retry.firstMs ?? FIRST_RETRY_MS, maxMs: retry.maxMs });
  while (!retry.stopped()) {
    try {
      return await retry.attempt();
    } catch (err) {
      const wait = backoff.failed();
      if (!retry.onFailure(err, wait)) return undefined;
      await sleepOn(retry.timer ?? unrefTimer, wait);
    }
  }
  return undefined;
}
