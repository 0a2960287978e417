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
  /** Resolves once the turn asked has judged its modules. */
  #turned: Promise<void> = Promise.resolve();

  constructor(
    private readonly judge: (module: string) => void,
    private readonly turn: Turn = nextTurn,
  ) {}

  /** Asks for `module` to be judged at the next turn. */
  ask(module: string): void {
    this.#pending.add(module);
    if (this.#scheduled) return;
    this.#scheduled = true;
    let turned = () => {};
    this.#turned = new Promise((resolve) => (turned = resolve));
    this.turn(() => {
      this.#scheduled = false;
      const modules = [...this.#pending];
      this.#pending.clear();
      try {
        for (const m of modules) this.judge(m);
      } finally {
        turned();
      }
    });
  }

  /** Asks for each of `modules` to be judged at the next turn. */
  askAll(modules: Iterable<string>): void {
    for (const m of modules) this.ask(m);
  }

  /** Whether a turn is asked. */
  get asked(): boolean {
    return this.#scheduled;
  }

  /** Resolves once no turn is asked: every module asked so far has been judged. */
  async idle(): Promise<void> {
    while (this.#scheduled) await this.#turned;
  }
}
