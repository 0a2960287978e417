// What the client knows of its engine (DESIGN §14): up or down, since when, from every fill's reply or
// failure and from the pings the alive tick sends when no fill went in a period.
import type { EngineState } from '../../shared/contract/alive.ts';
import type { EngineClient, EngineProof } from '../handoff/fill-socket.ts';

/** The engine's state as the alive message says it, kept from what each exchange with the engine proved. */
export class EngineWatch {
  #state: 'up' | 'down' | undefined;
  #since: number;
  #heardAt = Number.NEGATIVE_INFINITY;
  #pinging: Promise<void> | undefined;

  /**
   * Hears every proof `engine` makes from now on; `startedAt` (ms since the epoch) is the client's start,
   * the `since` of the first state (DESIGN §14: the start counts as the first change).
   */
  constructor(
    private readonly engine: Pick<EngineClient, 'ping' | 'onProof'>,
    private readonly now: () => number,
    startedAt: number = now(),
  ) {
    this.#since = startedAt;
    engine.onProof?.((proof) => this.heard(proof));
  }

  /** Takes what an exchange proved, or a fill sent (whose outcome will prove it); a change of state moves `since` to now. */
  heard(proof: 'up' | 'down' | 'sent'): void {
    const at = this.now();
    this.#heardAt = at;
    if (proof === 'sent' || proof === this.#state) return;
    if (this.#state !== undefined) this.#since = at;
    this.#state = proof;
  }

  /** Whether a fill was sent or anything proved after `at` (ms since the epoch): then no ping is needed (DESIGN §14). */
  heardSince(at: number): boolean {
    return this.#heardAt > at;
  }

  /**
   * Pings the engine and takes the answer. A ping whose connection the client dropped itself (a knock
   * meanwhile) proves nothing and is asked once more; an engine client without ping proves nothing.
   */
  ping(): Promise<void> {
    // One ping at a time: a tick that finds one still unanswered waits for that one.
    this.#pinging ??= this.#pingTwice().finally(() => (this.#pinging = undefined));
    return this.#pinging;
  }

  async #pingTwice(): Promise<void> {
    for (let tries = 0; tries < 2; tries++) {
      const proof: EngineProof = await this.engine.ping?.();
      if (proof) return this.heard(proof);
    }
  }

  /** The state to say, `since` as ISO; down until something proved it up. */
  current(): EngineState {
    return { state: this.#state ?? 'down', since: new Date(this.#since).toISOString() };
  }
}
