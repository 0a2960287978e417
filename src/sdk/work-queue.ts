// The helper's queue of consumers to bring in step: a bounded number worked on at once, so one slow
// consumer holds one slot and never the others' turn, and never one consumer twice at once — a key
// added while it is worked on is worked on again right after, with everything asked of it folded.

/** How many consumers the helper works on at once unless told otherwise. */
export const DEFAULT_CONCURRENCY = 4;

/** One unit of work: bring `key` in step; `full` asks for a re-check of what is served. */
export type Work = (key: string, full: boolean) => Promise<void>;

/** A keyed work queue; see the file's comment. */
export class WorkQueue {
  readonly #concurrency: number;
  readonly #work: Work;
  readonly #onError: (key: string, err: unknown) => void;
  /** Keys waiting for a slot, in the order they were added, with whether a full re-check is asked. */
  readonly #waiting = new Map<string, boolean>();
  readonly #active = new Set<string>();
  /** Keys added again while worked on. */
  readonly #again = new Map<string, boolean>();
  #idleWaiters: (() => void)[] = [];

  /** Works on at most `concurrency` keys at once with `work`; `onError` hears a work that threw (a bug: work catches its own failures). */
  constructor(concurrency: number, work: Work, onError: (key: string, err: unknown) => void) {
    if (!Number.isInteger(concurrency) || concurrency < 1) throw new RangeError(`concurrency ${concurrency} is not a whole number of at least 1`);
    this.#concurrency = concurrency;
    this.#work = work;
    this.#onError = onError;
  }

  /** Asks for `key` to be worked on (again); `full` is kept until that work starts. */
  add(key: string, full: boolean): void {
    const into = this.#active.has(key) ? this.#again : this.#waiting;
    into.set(key, (into.get(key) ?? false) || full);
    this.#pump();
  }

  /** Whether nothing waits and nothing is worked on. */
  get idle(): boolean {
    return this.#waiting.size === 0 && this.#active.size === 0;
  }

  /** Resolves once the queue is idle. */
  whenIdle(): Promise<void> {
    return this.idle ? Promise.resolve() : new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  /** Drops every key not started yet (the helper is stopping); work under way ends by itself. */
  clear(): void {
    this.#waiting.clear();
    this.#again.clear();
    this.#settleIdle();
  }

  #pump(): void {
    const starting: [string, boolean][] = [];
    for (const [key, full] of this.#waiting) {
      if (this.#active.size + starting.length >= this.#concurrency) break;
      starting.push([key, full]);
    }
    for (const [key, full] of starting) {
      this.#waiting.delete(key);
      this.#active.add(key);
    }
    for (const [key, full] of starting) void this.#run(key, full);
  }

  async #run(key: string, full: boolean): Promise<void> {
    try {
      await this.#work(key, full);
    } catch (err) {
      this.#onError(key, err);
    } finally {
      this.#active.delete(key);
      const again = this.#again.get(key);
      if (again !== undefined) {
        this.#again.delete(key);
        this.#waiting.set(key, (this.#waiting.get(key) ?? false) || again);
      }
      this.#pump();
      this.#settleIdle();
    }
  }

  #settleIdle(): void {
    if (this.idle) for (const resolve of this.#idleWaiters.splice(0)) resolve();
  }
}
