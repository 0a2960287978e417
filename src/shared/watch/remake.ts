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
//   REMAKE_UNSETTLED_MS after the cluster changed (a server left it, the connection moved) creates
//   are hedged: while none has answered, another goes every REMAKE_HEDGE_MS under its own name, so one
//   placed on a live server wins within about 0.3 s of the bus answering.
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

/** How long after the cluster changed creates are hedged under new names (a killed server still looks online ~15 s). */
export const REMAKE_UNSETTLED_MS = 20_000;
/** How long a hedged create waits before it counts as lost. */
export const REMAKE_TIMEOUT_MS = 1000;
/** While the hedged creates in flight are unanswered, another is sent this often. */
export const REMAKE_HEDGE_MS = 300;
/** At most this many hedged creates of one re-make in flight. */
export const REMAKE_IN_FLIGHT = 3;

/** Where the re-make says what it does: lost creates at debug. */
export type RemakeLog = { debug?(line: string): void };

/** A watch's re-makes, stopped with its watch. */
export type Remakes = {
  /** Whether a re-make's create is unanswered: its watch hears nothing meanwhile, and that is no news. */
  busy(): boolean;
  /** The cluster changed (a server left, the connection moved): hedge, the re-make in flight at once. */
  clusterChanged(): void;
  stop(): void;
};

/** What a re-make waits with: the timer of its tries and the clock (tests hand in their own). */
export type RemakeTime = { timer: Timer; now(): number };

const REAL_TIME: RemakeTime = { timer: unrefTimer, now: Date.now };

/**
 * Takes the creates behind `consumer`'s resets: a calm one asked again under its own name after
 * REMAKE_RETRY_MS, doubling to REMAKE_RETRY_MAX_MS, each ask waiting REMAKE_ANSWER_MS; within
 * REMAKE_UNSETTLED_MS of a cluster change, hedged under new names (the same consumer as
 * `<name>_<n>` on the same deliver subject), each waiting REMAKE_TIMEOUT_MS. An answered refusal
 * (the stream gone, not granted) goes to nats.js, which waits longer before its next reset. A
 * create a later reset replaced never settles and its consumer is deleted where the grants allow.
 * `refused` hears each refusal.
 */
export function hastenRemakes(
  consumer: Pick<OrderedConsumer, 'interceptCreates'>,
  what: string,
  log?: RemakeLog,
  time: RemakeTime = REAL_TIME,
  refused?: (err: Error) => void,
): Remakes {
  let latest = 0;
  let stopped = false;
  let unsettledUntil = -Infinity;
  let inFlight: Remake | undefined;
  const calls = consumer.interceptCreates(REMAKE_TIMEOUT_MS, (stream, config) => {
    const remake = new Remake(calls, stream, config, ++latest, { what, log, time, current, unsettled });
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
      if (inFlight && current(inFlight.mine) && !inFlight.settled) inFlight.hedgeNow();
    },
    stop: () => void (stopped = true),
  };
}

/** What one re-make shares with the watch's others. */
type RemakeContext = { what: string; log?: RemakeLog; time: RemakeTime; current(mine: number): boolean; unsettled(): boolean };

/** One reset's create, asked until made, refused, or replaced by a later reset. */
class Remake {
  readonly made: Promise<ConsumerInfo>;
  settled = false;
  #resolve!: (info: ConsumerInfo) => void;
  #reject!: (err: Error) => void;
  readonly #began: number;
  #asks = 0;
  #hedges = 0;
  #hedgesInFlight = 0;
  #timer: { cancel(): void } | undefined;
  /** The name of the consumer this re-make was made as. */
  #winner: string | undefined;

  constructor(
    private readonly calls: ConsumerCalls,
    private readonly stream: string,
    private readonly config: ConsumerConfig,
    readonly mine: number,
    private readonly ctx: RemakeContext,
  ) {
    this.#began = ctx.time.now();
    // A replaced re-make never settles: settled, nats.js would take its consumer or make yet another.
    this.made = new Promise<ConsumerInfo>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    this.#ask();
  }

  /** The cluster changed while this re-make waits: a hedge goes at once. */
  hedgeNow(): void {
    if (this.#asks > 0 && this.#hedgesInFlight < REMAKE_IN_FLIGHT) this.#ask();
  }

  #live(): boolean {
    return !this.settled && this.ctx.current(this.mine);
  }

  #ask(): void {
    this.#timer?.cancel();
    if (!this.#live()) return;
    // The first ask, and every calm one, under the reset's own name; a hedge under its own.
    const hedged = this.ctx.unsettled();
    const name = hedged && this.#asks > 0 ? `${this.config.name}_${++this.#hedges}` : this.config.name;
    this.#asks++;
    if (hedged) this.#hedgesInFlight++;
    this.calls.add(this.stream, { ...this.config, ...(name ? { name } : {}) }, hedged ? REMAKE_TIMEOUT_MS : REMAKE_ANSWER_MS).then(
      (info) => this.#answered(info, hedged),
      (err: Error) => this.#failed(err, hedged),
    );
    this.#arm();
  }

  /** The next ask: a hedge while the cluster is unsettled and fewer are in flight, else a calm retry. */
  #arm(): void {
    if (this.ctx.unsettled()) {
      if (this.#hedgesInFlight < REMAKE_IN_FLIGHT) this.#timer = this.ctx.time.timer(() => this.#ask(), REMAKE_HEDGE_MS);
      return;
    }
    const wait = Math.min(REMAKE_RETRY_MS * 2 ** (this.#asks - 1), REMAKE_RETRY_MAX_MS);
    this.#timer = this.ctx.time.timer(() => this.#ask(), wait);
  }

  #answered(info: ConsumerInfo, hedged: boolean): void {
    if (hedged) this.#hedgesInFlight--;
    if (this.#live()) {
      this.#settle();
      this.#winner = info.name;
      return this.#resolve(info);
    }
    // The same consumer answered twice is no extra; another (a hedge, a replaced re-make's) is.
    if (info.name !== this.#winner) void this.calls.delete(this.stream, info.name).catch(() => {});
  }

  #failed(err: Error, hedged: boolean): void {
    if (hedged) this.#hedgesInFlight--;
    if (!this.#live()) return;
    if (!isTimeout(err)) {
      this.#settle();
      return this.#reject(err);
    }
    if (!hedged) return; // the calm retry is armed already
    this.ctx.log?.debug?.(
      `${this.ctx.what}: a create of its consumer went unanswered (${this.ctx.time.now() - this.#began} ms into the re-make); sending another`,
    );
    if (this.#hedgesInFlight < REMAKE_IN_FLIGHT) this.#ask();
  }

  #settle(): void {
    this.settled = true;
    this.#timer?.cancel();
  }
}
