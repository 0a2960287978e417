// A window of calls in flight: at most `size` at once, the rest waiting their turn in order.

/** At most `size` holders at once; `take` resolves once a slot is free, `release` hands it on. */
export class Slots {
  #held = 0;
  readonly #waiting: (() => void)[] = [];

  constructor(private readonly size: number) {}

  /** Resolves once a slot is this caller's: fewer than `size` are held. */
  take(): Promise<void> {
    if (this.#held < this.size) {
      this.#held++;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  /** A holder is done: its slot goes to the next waiting, or is free. */
  release(): void {
    const next = this.#waiting.shift();
    if (next) next();
    else this.#held--;
  }
}
