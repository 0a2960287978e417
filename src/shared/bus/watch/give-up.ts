// When one watch gives up a consumer create left unanswered (shared/bus/watch/remake.ts says why a create
// is given up at all): the waits, and what makes a watch wait longer.
import type { BusPace, StreamLook } from './pace.ts';

/** How long a create waits for its answer before it is given up, on a cluster that seems calm. */
export const REMAKE_GIVE_UP_MS = 1500;
/** How long a create waits before it is given up after one was, or while the cluster is unsettled. */
export const REMAKE_TIMEOUT_MS = 250;
/** The wait before a consumer given up is reset again, from the second give-up in a row on (the first: none). */
export const REMAKE_AGAIN_MS = 50;

/**
 * One watch's rule for giving up its creates: a create waits REMAKE_GIVE_UP_MS, or REMAKE_TIMEOUT_MS
 * once one was given up or while the connection's cluster is unsettled, never less than the pace says
 * this bus answers (halved for each give-up the connection has had no answer since, for longer than
 * the median answer). It waits on,
 * up to REMAKE_GIVE_UP_MS, while nothing was answered on the connection since it was asked and
 * another watch's create waits too: a bus busy with a burst of
 * creates (a fleet making its watches again at once answers them a second late, and a give-up each
 * 0.25 s made three creates of each and the burst longer), or one making none. While the connection
 * is down it waits on: a create asked then waits in the connection's buffer, goes out on the
 * reconnect, and the reconnect makes the consumer again anyway.
 */
export class GiveUpRule {
  #givenUp = 0;
  /** When this watch's creates were given up, since it was last made. */
  #givenUpAt: number[] = [];
  #down = false;
  /** This watch, as the pace counts the watches waiting. */
  readonly #watch = {};

  constructor(
    private readonly pace: BusPace,
    private readonly ceiling: number,
    private readonly now: () => number,
  ) {}

  /** How long a create asked now waits before it is given up. */
  firstWait(): number {
    const hasty = this.#givenUp > 0 || this.pace.unsettled();
    const floor = hasty ? REMAKE_TIMEOUT_MS : REMAKE_GIVE_UP_MS;
    // Each give-up the connection has had no answer since, for longer than a live create takes to be
    // answered now, halves what the pace says: a burst's answers tell how late a live create comes,
    // and nothing answered since says these sit on a dead server. A give-up younger than that says
    // nothing yet — its create may be answered still: counted at once, a bus answering 0.3–0.5 s
    // late had every wait halved back to the median answer, half the live creates given up with
    // the dead ones, and a watch took 1.3–2.1 s at the median to be made again, 5–9 s at p99
    // (one in three creates placed on a dead server; a simulation of this rule, docs/scale.md).
    const due = this.pace.answerMs() ?? 0;
    const now = this.now();
    const unanswered = this.#givenUpAt.filter((at) => !this.pace.answeredSince(at) && now - at >= due).length;
    return Math.max(floor, this.pace.giveUpAfter(floor, this.ceiling) / 2 ** unanswered);
  }

  /**
   * A create asked at `askedAt` has waited `waited` ms, its last wait `wait`: how much longer it
   * waits, or undefined when it is given up now.
   */
  waitMore(askedAt: number, waited: number, wait: number): number | undefined {
    if (this.#down) return wait;
    const others = !this.pace.answeredSince(askedAt) && this.pace.othersWaiting(this.#watch);
    return others && waited < REMAKE_GIVE_UP_MS ? Math.min(wait, REMAKE_GIVE_UP_MS - waited) : undefined;
  }

  /**
   * Whether a create about to be given up first has its stream looked at (BusPace.look): on a
   * calm cluster, with the connection up. A create comes late from a bus busy with a fleet's starts,
   * and never from a server gone; a stream whose every replica is current and heard from has none
   * gone, so its create is most likely late and waits the patience more (patience()). Giving late
   * creates up doubled a fleet's creates when every client started at once (300 clients: 11 → 23–25
   * JetStream calls a start, docs/scale.md), and each create on 2.9 scans its stream; once one was
   * given up, the 0.25 s cadence that follows made 31 creates a watch when 1,000 started at once.
   * A server gone is seen by the look, or said by its peers (the cluster changed): then no look.
   */
  looksFirst(): boolean {
    return !this.#down && !this.pace.unsettled() && this.pace.canLook;
  }

  /**
   * How much longer a create whose stream looks whole waits before it is given up anyway: 1.5 s,
   * twice that for each create given up in a row, the ceiling at most. A whole look is no promise of
   * an answer — a create or its answer lost on the way would wait its whole 10 s, where the rule
   * before the look asked again after 1.5 s — and the doubling keeps a bus that answers seconds late
   * from being asked each create again and again.
   */
  patience(): number {
    return Math.min(REMAKE_GIVE_UP_MS * 2 ** this.#givenUp, this.ceiling);
  }

  /** What a look at `stream` finds: whole, its create waits on (looksFirst); alone, until its answer comes. */
  look(stream: string): Promise<StreamLook> {
    return this.pace.look(stream);
  }

  /** A create was given up: the wait before the consumer is reset again. */
  gaveUp(): number {
    this.#givenUpAt.push(this.now());
    return this.#givenUp++ === 0 ? 0 : REMAKE_AGAIN_MS;
  }

  /**
   * A create was answered with the consumer: what the give-ups before it were (how many in a row,
   * the first when), or undefined when there were none.
   */
  made(): { givenUp: number; firstAt: number } | undefined {
    const before = this.#givenUp > 0 ? { givenUp: this.#givenUp, firstAt: this.#givenUpAt[0]! } : undefined;
    this.#givenUp = 0;
    this.#givenUpAt = [];
    return before;
  }

  /** This watch's create waits for its answer (`on`), or no longer. */
  waiting(on: boolean): void {
    this.pace.waiting(this.#watch, on);
  }

  /** The connection went down (`true`), or came back. */
  disconnected(down: boolean): void {
    this.#down = down;
  }

  /** Whether the connection is down: the reconnect makes the consumer again. */
  get down(): boolean {
    return this.#down;
  }
}
