// How long a watch goes without its consumer after a cluster change, by the give-up rule of
// src/shared/bus/watch/give-up.ts alone: the watch's real re-make code (remake.ts, pace.ts) on a fake
// clock, against a bus that places one create in three on a dead server (never answered, as
// nats-server 2.9 does after a SIGKILL, issue 31) and answers the others `L` to `L + jitter` ms
// after they were asked. A model, not the bus: it isolates the rule from a failover's elections,
// so a change of the rule is judged on thousands of failovers in seconds (an older rule: run this
// on a checkout of it).
//
//   node --import tsx bench/remake-give-up.ts [--trials N]
import type { ConsumerConfig, ConsumerInfo, ConsumerMessages } from '@nats-io/jetstream';
import { orderedConsumer } from '../src/shared/bus/watch/internals.ts';
import { BusPace } from '../src/shared/bus/watch/pace.ts';
import { hastenRemakes } from '../src/shared/bus/watch/remake.ts';
import { fakeClock } from '../test/helpers/clock.ts';
import { numberArg, percentile } from './lib.ts';

const TRIALS = numberArg('trials', 400);
/** The bus's answer to a live create: from `ms` to `ms + jitter` after it was asked. */
const BUSES: { ms: number; jitter: number }[] = [
  { ms: 5, jitter: 25 },
  { ms: 100, jitter: 100 },
  { ms: 200, jitter: 100 },
  { ms: 250, jitter: 100 },
  { ms: 300, jitter: 200 },
  { ms: 500, jitter: 300 },
];
/** How long a trial runs before its watch counts as never made. */
const TRIAL_MS = 20_000;
/** One in this many creates is placed on the dead server. */
const DEAD_ONE_IN = 3;

/** One failover: ms from the cluster change to the watch's consumer made, or undefined when not within TRIAL_MS. */
async function trial(bus: { ms: number; jitter: number }): Promise<number | undefined> {
  const clock = fakeClock();
  let madeAt: number | undefined;
  let serial = 0;
  const api = {
    timeout: 5000,
    add(_stream: string, config: ConsumerConfig): Promise<ConsumerInfo> {
      return new Promise((resolve) => {
        if (Math.random() < 1 / DEAD_ONE_IN) return;
        clock.timer(() => resolve({ name: config.name!, config } as unknown as ConsumerInfo), bus.ms + Math.random() * bus.jitter);
      });
    },
    delete: async () => true,
  };
  // The private parts nats.js's ordered consumer resets through (shared/bus/watch/internals.ts): each reset asks a create under a new name.
  const internals = {
    reset: () => {
      serial++;
      const config = { name: `oc_${serial}`, deliver_subject: `_INBOX.${serial}` } as ConsumerConfig;
      void internals.consumer.api.add('KV_x', config).then(() => (madeAt ??= clock.now()));
    },
    getConsumerOpts: () => ({}),
    cursor: { stream_seq: 0, deliver_seq: 0 },
    consumer: { api },
    monitor: null,
  };
  const consumer = orderedConsumer(internals as unknown as ConsumerMessages);
  const remakes = hastenRemakes(consumer, 'watch', undefined, clock, undefined, new BusPace(clock.now));
  remakes.clusterChanged();
  internals.reset();
  for (let t = 0; t < TRIAL_MS && madeAt === undefined; t += 10) await clock.advance(10);
  remakes.stop();
  return madeAt;
}

console.log(
  `a watch made again after a cluster change, by the give-up rule alone: one create in ${DEAD_ONE_IN} never answered, the others after L + jitter ms; ${TRIALS} failovers a row`,
);
for (const bus of BUSES) {
  const times: number[] = [];
  let never = 0;
  for (let i = 0; i < TRIALS; i++) {
    const t = await trial(bus);
    if (t === undefined) never++;
    else times.push(t);
  }
  times.sort((a, b) => a - b);
  const late = times.filter((t) => t > 2000).length + never;
  const ms = (p: number) => percentile(times, p).toFixed(0).padStart(5);
  console.log(
    `  answers ${String(bus.ms).padStart(3)}–${String(bus.ms + bus.jitter).padEnd(3)} ms: made p50 ${ms(50)} ms, p99 ${ms(99)} ms, max ${ms(100)} ms; past 2 s ${((100 * late) / TRIALS).toFixed(1)}%${never > 0 ? `, ${never} never within ${TRIAL_MS / 1000} s` : ''}`,
  );
}
