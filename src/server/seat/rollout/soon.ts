// Judging soon (DESIGN §12): reports come in bursts, so a module is judged once per turn of the
// loop, not once per report. The turn is handed in (setImmediate), so a test runs it by hand.

/** Runs `fn` at the next turn of the loop. */
export type Turn = (fn: () => void) => void;

/** The real turn: after the I/O already waiting, so a burst of reports is read before it is judged. */
export const nextTurn: Turn = (fn) => void setImmediate(fn);

/** The modules asked to be judged, each judged once at the next turn. */
export class Soon {
  readonly #pending = new Set<string>();
  #scheduled = false;

  constructor(
    private readonly judge: (module: string) => void,
    private readonly turn: Turn = nextTurn,
  ) {}

  /** Asks for `module` to be judged at the next turn. */
  ask(module: string): void {
    this.#pending.add(module);
    if (this.#scheduled) return;
    this.#scheduled = true;
    this.turn(() => {
      this.#scheduled = false;
      const modules = [...this.#pending];
      this.#pending.clear();
      for (const m of modules) this.judge(m);
    });
  }
}
