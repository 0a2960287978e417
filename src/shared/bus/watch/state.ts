// What a watch has delivered (DESIGN §3, §11; STYLE.md's kubernetes-client anchor): whether it has
// caught up with what was stored, and the keys it holds, so that a re-read from the start of a stream
// that came back holding less (a wiped store) can say what is gone, as an informer that re-lists
// emits a delete for every object the new list lacks.
import type { WatchEvent } from './types.ts';

/**
 * Delivers a watch's events and keeps the keys delivered and not deleted since (one string per live
 * key of the watch's filter). During a re-read from the start it also keeps the keys live when the
 * re-read began and not delivered again; once the re-read has caught up, each is delivered deleted.
 */
export class WatchState {
  /** Resolves once the watch has caught up with what was stored when it began. */
  readonly caughtUp: Promise<void>;
  #caught = false;
  #markCaughtUp!: () => void;
  readonly #live = new Set<string>();
  /** Keys live when the re-read began and not delivered since; undefined when no re-read runs. */
  #unseen: Set<string> | undefined;
  /** The consumer whose creation showed the stream holds less: its messages are not the re-read's. */
  #stale: string | undefined;
  /** The highest revision delivered, old stream or new. */
  #highest = 0;
  /** The highest revision delivered when the re-read began. */
  #seenBefore = 0;
  #confirming = false;

  /**
   * `confirmWipe`, when given, is asked before the deletes go out whether the stream really holds
   * less than the revision the watch had seen (a consumer made on a cluster replica that is still
   * catching up looks the same as a wiped stream); false keeps every key.
   */
  constructor(
    private readonly onEvent: (event: WatchEvent) => void,
    private readonly confirmWipe?: (seen: number) => Promise<boolean>,
  ) {
    this.caughtUp = new Promise<void>((resolve) => (this.#markCaughtUp = resolve));
  }

  /** Whether a read (the first, or a re-read from the start) waits for a message with nothing pending after it. */
  get reading(): boolean {
    return !this.#caught || this.#unseen !== undefined;
  }

  /** Delivers one event (put or delete) and notes it. */
  deliver(event: WatchEvent): void {
    if (event.revision > this.#highest) this.#highest = event.revision;
    if (event.value === null) this.#live.delete(event.key);
    else this.#live.add(event.key);
    this.#unseen?.delete(event.key);
    this.onEvent(event);
  }

  /** Notes a live key read outside the watch (a direct get), so a re-read that lacks it says it gone. */
  hold(key: string, revision: number): void {
    if (revision > this.#highest) this.#highest = revision;
    this.#live.add(key);
  }

  /** Consumer `consumer` delivered a message with nothing pending after it: the read, or a re-read, caught up. */
  drained(consumer: string): void {
    this.#caughtUpNow();
    if (this.#rereadBy(consumer)) this.#endReread();
  }

  /**
   * Consumer `consumer`, just made, has nothing pending. When it has delivered nothing either and it
   * is a re-read's, the stream holds nothing of the filter: every key held is gone.
   */
  createdDrained(consumer: string, deliveredNothing: boolean): void {
    this.#caughtUpNow();
    if (deliveredNothing && this.#rereadBy(consumer)) this.#endReread();
  }

  /** A re-read from the start began, replacing consumer `stale`: every key held must be delivered again. */
  rereadBegan(stale: string): void {
    this.#unseen = new Set(this.#live);
    this.#stale = stale;
    this.#seenBefore = this.#highest;
  }

  #caughtUpNow(): void {
    if (this.#caught) return;
    this.#caught = true;
    this.#markCaughtUp();
  }

  #rereadBy(consumer: string): boolean {
    return this.#unseen !== undefined && consumer !== this.#stale;
  }

  // Each delete has the revision one past the highest delivered, so it sorts after every revision
  // seen of its key: the new stream numbers its revisions from 1 again.
  #endReread(): void {
    if (!this.confirmWipe) return this.#sayGone(true);
    if (this.#confirming) return;
    this.#confirming = true;
    // Keys the re-read still delivers while the stream is asked are not said gone.
    void this.confirmWipe(this.#seenBefore)
      .catch(() => true)
      .then((wiped) => {
        this.#confirming = false;
        this.#sayGone(wiped);
      });
  }

  #sayGone(wiped: boolean): void {
    const unseen = this.#unseen;
    this.#unseen = undefined;
    this.#stale = undefined;
    if (!unseen || !wiped) return;
    const revision = this.#highest + 1;
    for (const key of unseen) this.deliver({ key, revision, value: null });
  }
}
