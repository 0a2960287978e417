// How a watch's consumer is made again (shared/watch/keeper.ts) while the bus fails over. A consumer create
// is answered in milliseconds or not at all: not while the cluster elects a JetStream meta leader,
// and not when the meta leader places the consumer on a server that is gone — nats-server 2.9 still
// counted a killed server online 15 s later (until its missing statsz mark it gone) and placed about
// one create in three there. nats.js alone waits 5 s for each unanswered create, then up to 5 s more: a watch
// came back up to 10 s after the bus did. Here creates are hedged: while none has answered, another
// goes every REMAKE_HEDGE_MS, each under its own name, so one placed on a live server wins.
import type { ConsumerConfig, ConsumerInfo } from '@nats-io/jetstream';
import { unrefTimer, type Timer } from '../timer.ts';
import type { OrderedConsumer } from './internals.ts';
import { isTimeout } from '../errors.ts';

/** How long one create waits for the bus's answer before it counts as lost. */
export const REMAKE_TIMEOUT_MS = 1000;

/**
 * How long the creates in flight may go unanswered before another is sent, and at most how many are
 * in flight. The cost: while the bus answers no create (a meta election, 2–8 s), a watch being made
 * again asks about three creates a second where nats.js would ask one in 5 s; that is each watch of
 * the clients of a lost server and each watch whose consumer lived on it. A create answered once the
 * cluster is back costs nothing more: the hedges stop at the first answer, and a late second success
 * is deleted where the grants allow (the seat) or left to its 5-minute inactivity threshold (a node).
 * The gain: a watch is back within about 0.3 s of the bus answering creates, not up to 10 s after.
 */
export const REMAKE_HEDGE_MS = 300;
/** At most this many creates of one re-make in flight. */
export const REMAKE_IN_FLIGHT = 3;

/** Where the re-make says what it does: lost creates at debug. */
export type RemakeLog = { debug?(line: string): void };

/** A hastened re-make, stopped with its watch. */
export type Remakes = { stop(): void };

/** What a re-make waits with: the timer of its hedges and the clock of its debug lines (tests hand in their own). */
export type RemakeTime = { timer: Timer; now(): number };

const REAL_TIME: RemakeTime = { timer: unrefTimer, now: Date.now };

/**
 * Hedges the creates behind `consumer`'s resets: each waits REMAKE_TIMEOUT_MS; while none has
 * answered, another (the same consumer under the name `<name>_<n>`, on the same deliver subject)
 * is sent every REMAKE_HEDGE_MS, at most REMAKE_IN_FLIGHT at once, until one is made. An answered
 * refusal (the stream gone, not granted) goes to nats.js, which waits longer before its next reset.
 * A create a later reset replaced is dropped, so the watch never ends on an older consumer.
 */
export function hastenRemakes(consumer: Pick<OrderedConsumer, 'interceptCreates'>, what: string, log?: RemakeLog, time: RemakeTime = REAL_TIME): Remakes {
  let latest = 0;
  let stopped = false;
  const calls = consumer.interceptCreates(REMAKE_TIMEOUT_MS, (stream, config) => hedge(stream, config, ++latest));

  const current = (mine: number) => !stopped && mine === latest;
  const drop = (stream: string, info: ConsumerInfo) => void calls.delete(stream, info.name).catch(() => {});

  // A replaced re-make never settles: settled, nats.js would take its consumer or make yet another.
  const hedge = (stream: string, config: ConsumerConfig, mine: number) =>
    new Promise<ConsumerInfo>((resolve, reject) => {
      const began = time.now();
      let made = false;
      let inFlight = 0;
      let sent = 0;
      let timer: { cancel(): void } | undefined;
      const send = () => {
        timer?.cancel();
        if (made || !current(mine)) return;
        const name = sent === 0 ? config.name : `${config.name}_${sent}`;
        sent++;
        inFlight++;
        calls.add(stream, { ...config, ...(name ? { name } : {}) }).then(
          (info) => {
            inFlight--;
            if (made || !current(mine)) return drop(stream, info);
            made = true;
            timer?.cancel();
            resolve(info);
          },
          (err: Error) => {
            inFlight--;
            if (made || !current(mine)) return;
            if (!isTimeout(err)) {
              timer?.cancel();
              made = true;
              return reject(err);
            }
            log?.debug?.(`${what}: a create of its consumer went unanswered (${time.now() - began} ms into the re-make); sending another`);
            if (inFlight < REMAKE_IN_FLIGHT) send();
          },
        );
        if (inFlight < REMAKE_IN_FLIGHT) timer = time.timer(send, REMAKE_HEDGE_MS);
      };
      send();
    });

  return { stop: () => void (stopped = true) };
}
