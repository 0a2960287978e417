// A watch's read ends on the message that says nothing is pending after it (state.ts). nats-server
// 2.9.10 counts one too many when a put replaces a revision the consumer has not delivered yet (a key
// written again while a watch reads it): every later message says one more is pending than there is,
// so that read never ends — a seat restarted while an assignment was written never made its first
// pass (issue 34, one restart in ten at load 8). The count a consumer is created with is exact, so a
// read that falls quiet on a message saying more are pending has its consumer made again after the
// last message delivered: what is really left comes on the new one, or its create says there is none.
import { unrefTimer, type Timer } from '../../base/timer.ts';

/**
 * How long a read waits after a message saying more are pending before it has them counted again: long
 * past the gap between deliveries of a read a busy bus makes, so a consumer is made again only when
 * its count is wrong, or its server stopped sending (which a new consumer mends too).
 */
export const RECOUNT_QUIET_MS = 2000;

/** Hears each message's pending count and asks `recount` once a read has been quiet RECOUNT_QUIET_MS on a count above zero. */
export class PendingRecount {
  #pending = 0;
  #lastAt = 0;
  #due: { cancel(): void } | undefined;
  #stopped = false;

  constructor(
    private readonly recount: () => void,
    private readonly timer: Timer = unrefTimer,
    private readonly now: () => number = Date.now,
    private readonly quietMs = RECOUNT_QUIET_MS,
  ) {}

  /** A message arrived saying `pending` more follow it. */
  heard(pending: number): void {
    this.#pending = pending;
    this.#lastAt = this.now();
    // One timer a read, not one a message: a read of 50,000 keys would make and drop 50,000.
    if (pending > 0 && !this.#due && !this.#stopped) this.#arm(this.quietMs);
  }

  stop(): void {
    this.#stopped = true;
    this.#due?.cancel();
    this.#due = undefined;
  }

  #arm(ms: number): void {
    this.#due = this.timer(() => {
      this.#due = undefined;
      if (this.#stopped || this.#pending === 0) return;
      const quiet = this.now() - this.#lastAt;
      if (quiet < this.quietMs) return this.#arm(this.quietMs - quiet);
      this.recount();
    }, ms);
  }
}
