// How a watch's consumer is made again (shared/bus/watch/keeper.ts). A create is answered in milliseconds,
// late, or never, and a watch cannot tell late from never until the answer comes:
// - Never: while the cluster has no meta leader every create is dropped; and a meta leader places a
//   new consumer on a random peer of its stream, counting a killed server online long after it died
//   (nats-server 2.9: still 35 s after a SIGKILL, about one new consumer in three placed there). A
//   create placed on the dead server is never answered, and asked again under the same name it goes
//   to the same placement: a watch made just after a kill waited for ever (issue 31). Only a new name
//   is placed anew. So a create left unanswered is given up and the consumer reset under a new name on
//   a new deliver subject (when: shared/bus/watch/give-up.ts; 1.5 s on a calm cluster, 0.25 s once one
//   was given up or while the cluster fails over, which is what keeps a watch within the bus's
//   failover + 2 s with one name in three on a dead peer) — unless, on a calm cluster, a look at its
//   stream finds every replica current and heard from: no server is gone, and the create is most
//   likely late; it waits 1.5 s more, twice that after each give-up in a row (a whole look is no
//   promise: a create lost on the way is asked again), 10 s at most. A stream of one server whose
//   look that server answered (and any stream of a bus in no cluster) has no other server to place
//   the consumer on: its create waits for its answer, 10 s at most (1,000 clients starting on one
//   server had a third to a half of their first creates given up at 3 s, each one a create more).
// - Late: a bus busy with a fleet's creates answers them a second or more late, and a late answer of
//   a create given up is a consumer nobody holds. It delivers to a subject nobody listens on any more,
//   never a message to the watch (hedges on the watch's own subject each set off a reset, which filled
//   the streams' max_consumers at a hundred nodes: docs/scale.md), and costs a consumer until its
//   5-minute inactivity threshold (deleted at once where the grants allow). To keep that cost small a
//   create given up is still listened to for REMAKE_ANSWER_MS, and every answer sets the connection's
//   pace (shared/bus/watch/pace.ts): no create is given up sooner than twice the median recent answer
//   (halved for each give-up since the last), nor while the connection's other creates wait
//   unanswered too, nor while the connection is down (give-up.ts).
import type { ConsumerConfig, ConsumerInfo } from '@nats-io/jetstream';
import { unrefTimer, type Timer } from '../../base/timer.ts';
import type { ConsumerCalls, OrderedConsumer } from './internals.ts';
import { isTimeout } from '../../base/errors.ts';
import { isTemporarilyUnavailable } from '../jetstream-errors.ts';
import { GiveUpRule } from './give-up.ts';
import { BusPace } from './pace.ts';

/** How long a create's answer is listened for: a late one sets the pace, and its consumer is deleted. */
export const REMAKE_ANSWER_MS = 10_000;

/** Where the re-make says what it does: lost creates at debug. */
export type RemakeLog = { debug?(line: string): void };

/** A watch's re-makes, stopped with its watch. */
export type Remakes = {
  /** Whether a re-make's create is unanswered: its watch hears nothing meanwhile, and that is no news. */
  busy(): boolean;
  /** The cluster changed (a server left, the connection moved): the re-make in flight is given up at once. */
  clusterChanged(): void;
  /** The connection went down (`true`) or came back: while it is down nothing is given up. */
  disconnected(down: boolean): void;
  stop(): void;
};

/** What a re-make waits with: the timer of its tries and the clock (tests hand in their own). */
export type RemakeTime = { timer: Timer; now(): number };

/** How long the consumer's other calls (a reset's delete, a delete of one nobody holds) wait for their answer. */
const OTHER_CALLS_MS = 500;

const REAL_TIME: RemakeTime = { timer: unrefTimer, now: Date.now };

/**
 * Takes the creates behind `consumer`'s resets: each asked once, given up as give-up.ts says (`pace`:
 * the connection's) and the consumer reset again. An answered refusal (the stream gone, not granted)
 * goes to nats.js, which waits longer before its next reset; `refused` hears it. A create a later
 * reset replaced, or given up, never settles, and its consumer is deleted where the grants allow.
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
  const rule = new GiveUpRule(pace, REMAKE_ANSWER_MS, time.now);
  const current = (mine: number) => !stopped && mine === latest;
  // A re-make given up: the consumer is reset again (a new name, a new subject) unless another reset came first.
  const again = (mine: number) => time.timer(() => current(mine) && consumer.reset(), rule.gaveUp());
  const calls = consumer.interceptCreates(OTHER_CALLS_MS, (stream, config) => {
    const remake = new Remake(calls, stream, config, ++latest, { what, log, time, pace, rule, current, again });
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
    disconnected: (down) => rule.disconnected(down),
    stop() {
      stopped = true;
      rule.waiting(false);
    },
  };
}

/** What one re-make shares with the watch's others. */
type RemakeContext = {
  what: string;
  log?: RemakeLog;
  time: RemakeTime;
  pace: BusPace;
  rule: GiveUpRule;
  current(mine: number): boolean;
  /** Resets the consumer again soon, this re-make given up; cancelled, it is not. */
  again(mine: number): { cancel(): void };
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
    const askedAt = this.ctx.time.now();
    this.calls.add(this.stream, this.config, REMAKE_ANSWER_MS).then(
      (info) => {
        this.ctx.pace.answered(this.ctx.time.now() - askedAt);
        this.#answered(info);
      },
      (err: Error) => this.#failed(err),
    );
    this.ctx.rule.waiting(true);
    this.#due(askedAt, this.ctx.rule.firstWait());
  }

  /**
   * Gives the create asked at `askedAt` up after `wait`, unless the rule says to wait on, or its
   * stream looks whole (every replica current and heard from): then it waits the rule's patience
   * more (the cluster changing gives it up sooner), and is given up without another look. A stream
   * of one server that answered the look (or a bus in no cluster) waits for the create's answer.
   */
  #due(askedAt: number, wait: number): void {
    this.#timer = this.ctx.time.timer(() => {
      if (!this.#live()) return;
      const waited = this.ctx.time.now() - askedAt;
      const more = this.ctx.rule.waitMore(askedAt, waited, wait);
      if (more !== undefined) return this.#due(askedAt, more);
      if (!this.ctx.rule.looksFirst()) return this.giveUp(`a create of its consumer went unanswered for ${waited} ms`);
      void this.ctx.rule.look(this.stream).then((found) => {
        if (!this.#live()) return;
        // Its one server answered the look: the create comes late, or its own timeout
        // (REMAKE_ANSWER_MS) gives it up; the cluster changing meanwhile gives it up at once.
        if (found === 'alone' && this.ctx.rule.looksFirst()) return;
        if (found === 'whole' && this.ctx.rule.looksFirst()) return this.#lastWait(askedAt, this.ctx.rule.patience());
        this.giveUp(
          `a create of its consumer went unanswered for ${this.ctx.time.now() - askedAt} ms, and stream ${this.stream} has a replica gone, or its look was refused`,
        );
      });
    }, wait);
  }

  /** A whole stream's create: waits `wait` more, then is given up without another look. */
  #lastWait(askedAt: number, wait: number): void {
    this.#timer = this.ctx.time.timer(() => {
      if (this.#live()) this.giveUp(`a create of its consumer went unanswered for ${this.ctx.time.now() - askedAt} ms, its stream ${this.stream} whole`);
    }, wait);
  }

  #answered(info: ConsumerInfo): void {
    // Given up, then answered before its replacement was sent: the consumer is there, on the watch's subject.
    const adopted = this.#again !== undefined && this.#winner === undefined && this.ctx.current(this.mine);
    if (adopted) this.#again!.cancel();
    if (this.#live() || adopted) {
      this.#settle();
      this.#winner = info.name;
      const before = this.ctx.rule.made();
      // After give-ups, said: how long a watch went without its consumer through a failover.
      if (before)
        this.ctx.log?.debug?.(
          `${this.ctx.what}: its consumer made${info.cluster?.leader ? ` on ${info.cluster.leader}` : ''} after ${before.givenUp} create${before.givenUp === 1 ? '' : 's'} given up, the first ${this.ctx.time.now() - before.firstAt} ms before`,
        );
      return this.#resolve(info);
    }
    // A consumer given up, or a replaced re-make's, is one nobody holds.
    if (info.name !== this.#winner) void this.calls.delete(this.stream, info.name).catch(() => {});
  }

  #failed(err: Error): void {
    if (!this.#live()) return;
    // Listened to its end and still live: given up, unless the connection is down (its reconnect makes the consumer again).
    if (isTimeout(err)) return this.ctx.rule.down ? undefined : this.giveUp(`a create of its consumer went unanswered for ${REMAKE_ANSWER_MS} ms`);
    // JetStream choosing a leader answers 503 at once: no refusal, the create is asked again once it has one.
    if (isTemporarilyUnavailable(err)) return this.giveUp(`a create of its consumer was answered that JetStream is choosing a leader`);
    this.#settle();
    this.#reject(err);
  }

  #settle(): void {
    this.settled = true;
    this.#timer?.cancel();
    this.ctx.rule.waiting(false);
  }
}
