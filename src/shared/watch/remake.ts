// How a watch's consumer is made again (shared/watch/keeper.ts). A create is answered in milliseconds,
// late, or never, and a watch cannot tell late from never until the answer comes:
// - Never: while the cluster has no meta leader every create is dropped; and a meta leader places a
//   consumer on a random peer of its stream, counting a killed server online long after it died
//   (nats-server 2.9: still 35 s after a SIGKILL, one new consumer in three placed there). A create
//   placed on the dead server is never answered, and asked again under the same name it goes to the
//   same placement: a watch made after the kill waited for ever (issue 31). Only a new name is placed
//   anew. So every create unanswered after REMAKE_GIVE_UP_MS is given up, whatever the connection
//   saw, and the consumer reset under a new name on a new deliver subject; after a first give-up, and
//   for REMAKE_UNSETTLED_MS after the cluster changed (a server left, the connection moved), each
//   create is given up after REMAKE_TIMEOUT_MS: with one name in three placed on a dead peer, that is
//   what keeps a watch within the bus's failover + 2 s.
// - Late: a bus busy with a fleet's starts answers creates seconds late, and a late answer of a
//   create given up is a consumer nobody holds. It delivers to a subject nobody listens on any more,
//   never a message to the watch (hedges on the watch's own subject each set off a reset, which filled
//   the streams' max_consumers at a hundred nodes: docs/scale.md), and costs a consumer until its
//   5-minute inactivity threshold (deleted at once where the grants allow). To keep that cost to the
//   first few, a create given up is still listened to for REMAKE_ANSWER_MS, and every answer teaches
//   the connection's pace (shared/watch/pace.ts): no create is given up sooner than twice the median
//   recent answer, so a slow bus stops losing creates once it has answered once.
import type { ConsumerConfig, ConsumerInfo } from '@nats-io/jetstream';
import { unrefTimer, type Timer } from '../timer.ts';
import type { ConsumerCalls, OrderedConsumer } from './internals.ts';
import { isTimeout } from '../errors.ts';
import { BusPace, REMAKE_UNSETTLED_MS } from './pace.ts';

export { REMAKE_UNSETTLED_MS };

/** How long a create's answer is listened for: a late one teaches the pace, and its consumer is deleted. */
export const REMAKE_ANSWER_MS = 10_000;
/** How long a create waits for its answer before it is given up, on a cluster that seems calm. */
export const REMAKE_GIVE_UP_MS = 1500;
/** How long a create waits before it is given up after one was, or while the cluster is unsettled. */
export const REMAKE_TIMEOUT_MS = 250;
/** The wait before a consumer given up is reset again, from the second give-up in a row on (the first: none). */
export const REMAKE_AGAIN_MS = 50;

/** Where the re-make says what it does: lost creates at debug. */
export type RemakeLog = { debug?(line: string): void };

/** A watch's re-makes, stopped with its watch. */
export type Remakes = {
  /** Whether a re-make's create is unanswered: its watch hears nothing meanwhile, and that is no news. */
  busy(): boolean;
  /** The cluster changed (a server left, the connection moved): the re-make in flight is given up at once. */
  clusterChanged(): void;
  stop(): void;
};

/** What a re-make waits with: the timer of its tries and the clock (tests hand in their own). */
export type RemakeTime = { timer: Timer; now(): number };

/** How long the consumer's other calls (a reset's delete, a delete of one nobody holds) wait for their answer. */
const OTHER_CALLS_MS = 500;

const REAL_TIME: RemakeTime = { timer: unrefTimer, now: Date.now };

/**
 * Takes the creates behind `consumer`'s resets: each asked once, given up after REMAKE_GIVE_UP_MS (after
 * REMAKE_TIMEOUT_MS once one was, or within REMAKE_UNSETTLED_MS of a cluster change; never sooner than
 * `pace` says the bus answers) and the consumer reset again (at once, then after REMAKE_AGAIN_MS). An
 * answered refusal (the stream gone, not granted) goes to nats.js, which waits longer before its next
 * reset; `refused` hears it. A create a later reset replaced, or given up, never settles, and its
 * consumer is deleted where the grants allow.
 */
export function hastenRemakes(
  consumer: Pick<OrderedConsumer, 'interceptCreates' | 'reset'>,
  what: string,
  log?: RemakeLog,
  time: RemakeTime = REAL_TIME,
  refused?: (err: Error) => void,
  pace: BusPace = new BusPace(time.now),
): Remakes {
  let latest = 0;
  let stopped = false;
  let inFlight: Remake | undefined;
  let givenUp = 0;
  // A re-make given up: the consumer is reset again (a new name, a new subject) unless another reset came first.
  const again = (mine: number) => {
    const wait = givenUp === 0 ? 0 : REMAKE_AGAIN_MS;
    givenUp++;
    return time.timer(() => current(mine) && consumer.reset(), wait);
  };
  const made = () => void (givenUp = 0);
  const current = (mine: number) => !stopped && mine === latest;
  const giveUpAfter = () => {
    const hasty = givenUp > 0 || pace.unsettled();
    return pace.giveUpAfter(hasty ? REMAKE_TIMEOUT_MS : REMAKE_GIVE_UP_MS, REMAKE_ANSWER_MS);
  };
  const calls = consumer.interceptCreates(OTHER_CALLS_MS, (stream, config) => {
    const remake = new Remake(calls, stream, config, ++latest, { what, log, time, pace, current, giveUpAfter, again, made });
    inFlight = remake;
    if (refused) remake.made.catch(refused);
    return remake.made;
  });
  return {
    busy: () => inFlight !== undefined && current(inFlight.mine) && !inFlight.settled,
    clusterChanged() {
      pace.unsettle();
      if (inFlight && current(inFlight.mine) && !inFlight.settled) inFlight.giveUp('the cluster changed while it was being made');
    },
    stop: () => void (stopped = true),
  };
}

/** What one re-make shares with the watch's others. */
type RemakeContext = {
  what: string;
  log?: RemakeLog;
  time: RemakeTime;
  pace: BusPace;
  current(mine: number): boolean;
  /** How long this re-make's create waits for its answer before it is given up. */
  giveUpAfter(): number;
  /** Resets the consumer again soon, this re-make given up; cancelled, it is not. */
  again(mine: number): { cancel(): void };
  /** A re-make was made. */
  made(): void;
};

/** One reset's create, asked once and listened to until made, refused, given up, or replaced by a later reset. */
class Remake {
  readonly made: Promise<ConsumerInfo>;
  settled = false;
  #resolve!: (info: ConsumerInfo) => void;
  #reject!: (err: Error) => void;
  #timer: { cancel(): void } | undefined;
  /** The name of the consumer this re-make was made as. */
  #winner: string | undefined;
  /** Given up: the reset that replaces it, not yet sent. */
  #again: { cancel(): void } | undefined;

  constructor(
    private readonly calls: ConsumerCalls,
    private readonly stream: string,
    private readonly config: ConsumerConfig,
    readonly mine: number,
    private readonly ctx: RemakeContext,
  ) {
    // A replaced re-make never settles: settled, nats.js would take its consumer or make yet another.
    this.made = new Promise<ConsumerInfo>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    this.#ask();
  }

  /** Gives this re-make up (`why`: for the log): its create may sit on a gone server; another is made. */
  giveUp(why: string): void {
    if (!this.#live()) return;
    this.ctx.log?.debug?.(`${this.ctx.what}: ${why}; making its consumer under a new name`);
    this.#settle();
    this.#again = this.ctx.again(this.mine);
  }

  #live(): boolean {
    return !this.settled && this.ctx.current(this.mine);
  }

  #ask(): void {
    if (!this.#live()) return;
    const waits = this.ctx.giveUpAfter();
    const askedAt = this.ctx.time.now();
    this.calls.add(this.stream, this.config, REMAKE_ANSWER_MS).then(
      (info) => {
        this.ctx.pace.answered(this.ctx.time.now() - askedAt);
        this.#answered(info);
      },
      (err: Error) => this.#failed(err),
    );
    this.#timer = this.ctx.time.timer(() => this.giveUp(`a create of its consumer went unanswered for ${waits} ms`), waits);
  }

  #answered(info: ConsumerInfo): void {
    // Given up, then answered before its replacement was sent: the consumer is there, on the watch's subject.
    const adopted = this.#again !== undefined && this.#winner === undefined && this.ctx.current(this.mine);
    if (adopted) this.#again!.cancel();
    if (this.#live() || adopted) {
      this.#settle();
      this.#winner = info.name;
      this.ctx.made();
      return this.#resolve(info);
    }
    // A consumer given up, or a replaced re-make's, is one nobody holds.
    if (info.name !== this.#winner) void this.calls.delete(this.stream, info.name).catch(() => {});
  }

  #failed(err: Error): void {
    if (!this.#live()) return;
    // Listened to its end: given up (the give-up wait is never longer).
    if (isTimeout(err)) return this.giveUp(`a create of its consumer went unanswered for ${REMAKE_ANSWER_MS} ms`);
    this.#settle();
    this.#reject(err);
  }

  #settle(): void {
    this.settled = true;
    this.#timer?.cancel();
  }
}
