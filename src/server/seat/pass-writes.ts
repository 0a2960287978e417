// The writes one composition pass asked (DESIGN §4), for its summary: a key and two flags each
// rather than a promise held to the end of the pass, so a pass of 50,000 writes keeps no more alive
// than the writes still in flight.

/** The keys a pass wrote, retired or failed to write, in the order it asked. */
export type WriteReport = { written: string[]; retired: string[]; failed: string[] };

/** The writes one pass asked, in the order asked, and how each ended. */
export class PassWrites {
  readonly #keys: string[] = [];
  readonly #puts: boolean[] = [];
  readonly #ok: boolean[] = [];
  #open = 0;
  #allEnded: (() => void) | undefined;

  /** Lists a put (or, `put` false, a delete) of `key` as asked; returns its index for `end`. */
  add(key: string, put: boolean): number {
    this.#puts.push(put);
    this.#ok.push(false);
    this.#open++;
    return this.#keys.push(key) - 1;
  }

  /** Records how the write at index `i` ended. */
  end(i: number, ok: boolean): void {
    this.#ok[i] = ok;
    if (--this.#open === 0) this.#allEnded?.();
  }

  /** Resolves once every write asked has ended. */
  async settled(): Promise<void> {
    if (this.#open > 0) await new Promise<void>((resolve) => (this.#allEnded = resolve));
  }

  /** Lists each key as written, retired or failed, in the order asked. */
  report(into: WriteReport): void {
    this.#keys.forEach((key, i) => (this.#ok[i] ? (this.#puts[i] ? into.written : into.retired) : into.failed).push(key));
  }
}
