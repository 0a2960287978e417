// Writes plans pipelined (DESIGN §4): at most a bounded number of puts and deletes in flight, and
// the writes of one key strictly one after the other in the order they were asked, so the last
// write of a key is the one that stays and two writes of the same key never race.

/** Writes in flight at most, unless told otherwise: enough to keep the bus busy, few enough to bound memory. */
export const DEFAULT_WRITES_IN_FLIGHT = 256;

/** Where the writer writes: the plans bucket, handed in. */
export type PlanStore = {
  /** Puts a plan; may resolve with the revision the bus gave it. */
  putPlan(key: string, value: Uint8Array): Promise<number | void>;
  /** Deletes a plan. */
  deletePlan(key: string): Promise<void>;
};

/** How one write ended: done (with its revision when the store said it), or refused with the error. */
export type WriteOutcome = { ok: true; revision: number | undefined } | { ok: false; error: unknown };

type Write = { key: string; value: Uint8Array | null; onEnd(outcome: WriteOutcome): void };

/**
 * Runs writes with at most `limit` in flight, each key's writes in the order they were asked.
 * Callbacks rather than a promise per write: at fleet size every object a write keeps alive while
 * in flight is one the garbage collector promotes.
 */
export class PlanWriter {
  /** For each key with a write running or waiting: the writes asked after it, in order. */
  readonly #behind = new Map<string, Write[]>();
  /** Writes waiting for a slot, oldest first. */
  readonly #waiting: Write[] = [];
  /** Callers waiting for room (at most half the slots busy). */
  readonly #roomWaiters: (() => void)[] = [];
  #inFlight = 0;
  #peak = 0;

  /**
   * Writes to `store` with at most `limit` in flight; `onCallbackError` hears of a callback that
   * threw (a bug of the caller's, kept from stopping the other writes or the process).
   */
  constructor(
    private readonly store: PlanStore,
    readonly limit = DEFAULT_WRITES_IN_FLIGHT,
    private readonly onCallbackError: (err: unknown) => void = () => {},
  ) {
    if (!(limit >= 1)) throw new RangeError(`writes in flight must be at least 1, not ${limit}`);
  }

  /** Writes in flight now. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** The most writes ever in flight at once. */
  get peak(): number {
    return this.#peak;
  }

  /**
   * Resolves once at most half the slots are busy, so a caller with many writes to ask can ask
   * them in bursts (one bus flush each) without queueing their bytes here; undefined when there is room now.
   */
  room(): Promise<void> | undefined {
    if (this.#inFlight + this.#waiting.length < this.limit) return undefined;
    return new Promise((resolve) => this.#roomWaiters.push(resolve));
  }

  /**
   * Asks a put (`value`) or a delete (null) of `key`: started at once when a slot is free and no
   * earlier write of the key is pending, else queued behind them. `onEnd` is called once, when it ends.
   */
  write(key: string, value: Uint8Array | null, onEnd: (outcome: WriteOutcome) => void): void {
    const write: Write = { key, value, onEnd };
    const behind = this.#behind.get(key);
    if (behind) return void behind.push(write);
    this.#behind.set(key, []);
    this.#ready(write);
  }

  #ready(write: Write): void {
    if (this.#inFlight < this.limit) this.#start(write);
    else this.#waiting.push(write);
  }

  #start(write: Write): void {
    this.#inFlight++;
    if (this.#inFlight > this.#peak) this.#peak = this.#inFlight;
    let pending: Promise<number | void>;
    try {
      pending = write.value ? this.store.putPlan(write.key, write.value) : this.store.deletePlan(write.key);
    } catch (error) {
      pending = Promise.reject(error);
    }
    pending.then(
      (revision) => this.#end(write, { ok: true, revision: typeof revision === 'number' ? revision : undefined }),
      (error: unknown) => this.#end(write, { ok: false, error }),
    );
  }

  #end(write: Write, outcome: WriteOutcome): void {
    this.#inFlight--;
    const next = this.#waiting.shift();
    if (next) this.#start(next);
    const behind = this.#behind.get(write.key)!;
    const after = behind.shift();
    if (after) this.#ready(after);
    else this.#behind.delete(write.key);
    if (this.#inFlight + this.#waiting.length <= this.limit / 2) this.#roomWaiters.splice(0).forEach((resolve) => resolve());
    try {
      write.onEnd(outcome);
    } catch (err) {
      this.onCallbackError(err);
    }
  }
}
