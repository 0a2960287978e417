// How a watch's consumer is made again (shared/watch/keeper.ts). A create is answered in milliseconds,
// late, or not at all, and each needs its own answer:
// - Late: a bus busy with a fleet's starts answers creates seconds late. A late answer is the
//   consumer, so a calm re-make waits REMAKE_ANSWER_MS for it and asks again under the same name
//   (the server answers a create of an existing consumer with the same config with that consumer):
//   one consumer however late the answers. Hedging under new names here made every late answer a
//   consumer nobody held, delivering on the watch's subject, which re-made the watch again, until the
//   streams' max_consumers were full and no fleet of a hundred clients started together converged
//   (docs/scale.md).
// - Never: while the cluster elects a meta leader, or when the meta leader places the consumer on a
//   server that is gone — nats-server 2.9 still counted a killed server online 15 s later and placed
//   about one create in three there, where a create of that name stays unanswered. So for
//   REMAKE_UNSETTLED_MS after the cluster changed (a server left it, the connection moved) a create
//   unanswered after REMAKE_TIMEOUT_MS is given up and the consumer reset again, under a new name on
//   a new deliver subject, at once the first time and REMAKE_AGAIN_MS later after that (nats.js's
//   own backoff grows to 5 s, which left a node 9 s behind the bus). While the cluster has no meta
//   leader every create is dropped, so the cycle is what a watch waits past the bus's failover. A
//   late answer of one given up delivers to a subject nobody listens on any more: it costs a
//   consumer for its 5-minute inactivity threshold, never a message to the watch. (Hedges on the
//   watch's own subject, tried first, filled a stream's max_consumers at a hundred nodes in
//   bench/fleet-failover.ts: each late one delivered there and set off a reset.)
import type { ConsumerConfig, ConsumerInfo } from '@nats-io/jetstream';
import { unrefTimer, type Timer } from '../timer.ts';
import type { ConsumerCalls, OrderedConsumer } from './internals.ts';
import { isTimeout } from '../errors.ts';

/** How long a calm re-make's create waits for its answer: a busy bus's late answer is still the consumer. */
export const REMAKE_ANSWER_MS = 10_000;
/** The first wait before a calm re-make asks again under the same name; it doubles up to REMAKE_RETRY_MAX_MS. */
export const REMAKE_RETRY_MS = 1000;
/** The longest wait between a calm re-make's asks. */
export const REMAKE_RETRY_MAX_MS = 4000;

/** How long after the cluster changed an unanswered create is given up (a killed server still looks online ~15 s). */
export const REMAKE_UNSETTLED_MS = 20_000;
/** How long a create waits, while the cluster is unsettled, before it is given up. */
export const REMAKE_TIMEOUT_MS = 500;
/** The wait before a consumer given up is reset again, from the second give-up in a row on (the first: none). */
export const REMAKE_AGAIN_MS = 100;

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

const REAL_TIME: RemakeTime = { timer: unrefTimer, now: Date.now };

/**
 * Takes the creates behind `consumer`'s resets: a calm one asked again under its own name after
 * REMAKE_RETRY_MS, doubling to REMAKE_RETRY_MAX_MS, each ask waiting REMAKE_ANSWER_MS; within
 * REMAKE_UNSETTLED_MS of a cluster change, one ask given up after REMAKE_TIMEOUT_MS and the consumer
 * reset again (at once, then after REMAKE_AGAIN_MS). An answered refusal (the stream gone, not granted)
 * goes to nats.js, which waits longer before its next reset; `refused` hears it. A create a later
 * reset replaced, or given up, never settles and its consumer is deleted where the grants allow.
 */
export function hastenRemakes(
  consumer: Pick<OrderedConsumer, 'interceptCreates' | 'reset'>,
  what: string,
  log?: RemakeLog,
  time: RemakeTime = REAL_TIME,
  refused?: (err: Error) => void,
): Remakes {
  let latest = 0;
  let stopped = false;
  let unsettledUntil = -Infinity;
  let inFlight: Remake | undefined;
  let givenUp = 0;
  // A re-make given up: the consumer is reset again (a new name, a new subject) unless another reset came first.
  const again = (mine: number) => {
    const wait = givenUp === 0 ? 0 : REMAKE_AGAIN_MS;
    givenUp++;
    return time.timer(() => current(mine) && consumer.reset(), wait);
  };
  const made = () => void (givenUp = 0);
  const calls = consumer.interceptCreates(REMAKE_TIMEOUT_MS, (stream, config) => {
    const remake = new Remake(calls, stream, config, ++latest, { what, log, time, current, unsettled, again, made });
    inFlight = remake;
    if (refused) remake.made.catch(refused);
    return remake.made;
  });
  const current = (mine: number) => !stopped && mine === latest;
  const unsettled = () => time.now() < unsettledUntil;
  return {
    busy: () => inFlight !== undefined && current(inFlight.mine) && !inFlight.settled,
    clusterChanged() {
      unsettledUntil = time.now() + REMAKE_UNSETTLED_MS;
      if (inFlight && current(inFlight.mine) && !inFlight.settled) inFlight.giveUp();
    },
    stop: () => void (stopped = true),
  };
}

/** What one re-make shares with the watch's others. */
type RemakeContext = {
  what: string;
  log?: RemakeLog;
  time: RemakeTime;
  current(mine: number): boolean;
  unsettled(): boolean;
  /** Resets the consumer again soon, this re-make given up; cancelled, it is not. */
  again(mine: number): { cancel(): void };
  /** A re-make was made. */
  made(): void;
};

/** One reset's create, asked until made, refused, given up, or replaced by a later reset. */
class Remake {
  readonly made: Promise<ConsumerInfo>;
  settled = false;
  #resolve!: (info: ConsumerInfo) => void;
  #reject!: (err: Error) => void;
  #asks = 0;
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

  /** The cluster changed while this re-make waits: its ask may sit on a gone server; another is made. */
  giveUp(): void {
    if (!this.#live()) return;
    this.ctx.log?.debug?.(`${this.ctx.what}: the cluster changed while its consumer was being made; making it under a new name`);
    this.#settle();
    this.#again = this.ctx.again(this.mine);
  }

  #live(): boolean {
    return !this.settled && this.ctx.current(this.mine);
  }

  #ask(): void {
    this.#timer?.cancel();
    if (!this.#live()) return;
    const unsettled = this.ctx.unsettled();
    this.#asks++;
    const waits = unsettled ? REMAKE_TIMEOUT_MS : REMAKE_ANSWER_MS;
    this.calls.add(this.stream, this.config, waits).then(
      (info) => this.#answered(info),
      (err: Error) => this.#failed(err, unsettled, waits),
    );
    if (unsettled) return;
    const wait = Math.min(REMAKE_RETRY_MS * 2 ** (this.#asks - 1), REMAKE_RETRY_MAX_MS);
    this.#timer = this.ctx.time.timer(() => this.#ask(), wait);
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
    // The same consumer answered twice is no extra; another (one given up, a replaced re-make's) is.
    if (info.name !== this.#winner) void this.calls.delete(this.stream, info.name).catch(() => {});
  }

  #failed(err: Error, unsettled: boolean, waited: number): void {
    if (!this.#live()) return;
    // A calm ask's timeout is no news: the next ask is armed already.
    if (isTimeout(err) && !unsettled) return;
    this.#settle();
    if (!isTimeout(err)) return this.#reject(err);
    this.ctx.log?.debug?.(`${this.ctx.what}: a create of its consumer went unanswered for ${waited} ms after a cluster change; making it under a new name`);
    this.#again = this.ctx.again(this.mine);
  }

  #settle(): void {
    this.settled = true;
    this.#timer?.cancel();
  }
}
