// Wires the seat: its buckets, the registry, the verb, and the composer fed by watches.
import { HEALTH_SUBJECT } from '../../shared/contract/subjects.ts';
import type { NatsConnection } from '@nats-io/transport-node';
import { BIND_TIMING, ensureBucket, refuseBadBucket } from '../../shared/bus/bucket-bind.ts';
import { bindWhenThere } from '../../shared/bus/bind-wait.ts';
import { DEFAULT_MESH_NODES, kvBucket, maxConsumersFor, objBucket } from '../../shared/contract/bucket-spec.ts';
import { ensureKv } from '../../shared/bus/bus.ts';
import { jsonBytes } from '../../shared/base/bytes.ts';
import { watchBucket } from '../../shared/bus/watch/bucket.ts';
import { APPLIED, ASSIGNMENTS, MODULES, PLANS, REGISTRY_BUCKET, ROLLOUTS, SEAT_BUCKETS } from '../../shared/contract/buckets.ts';
import type { Logger } from '../../shared/cli/log.ts';
import { Composer, type PassSummary } from './composer.ts';
import { KvPublisher } from '../../shared/bus/kv-publisher.ts';
import { REGISTRY_INTERVAL_MS, syncRegistry } from './registry-sync.ts';
import { readerOf } from '../verb/read.ts';
import { serveProvisioning } from '../verb/serve.ts';
import { errorText } from '../../shared/base/errors.ts';
import type { Rollout } from '../../shared/contract/rollout-schema.ts';
import type { Health } from '../../shared/contract/verb.ts';
import { RolloutDirector } from './rollout/director.ts';
import { withRollouts } from './health-source.ts';
import { serveRolloutRequests } from './rollout/requests.ts';
import type { Turn } from './rollout/soon.ts';
import type { Timer } from '../../shared/base/timer.ts';
import { loadRolloutStates, StateWriter } from './rollout/store.ts';
import { Heard, settleSeat } from './settled.ts';

/** What the seat needs to run. */
export type SeatOptions = {
  nc: NatsConnection;
  log: Logger;
  /** The object-store bucket holding module archives. */
  archives: string;
  /** Copies each created bucket keeps. */
  replicas: number;
  /** Called after each pass (tests, logs). */
  onPass?: (summary: PassSummary) => void;
  /** The inbox prefix `nc` was made with, for the acks of plan writes and the verb's reads (default `_INBOX`). */
  inboxPrefix?: string;
  /** The rollout of a composition without its own (`--rollout`, DESIGN §12); none: every plan at once. */
  rollout?: Rollout;
  /** The clock, timer and turn of the composer and the rollouts (Date.now, unrefTimer, setImmediate); tests hand in their own. */
  time?: { now?: () => number; timer?: Timer; turn?: Turn };
};

/** A running seat; `settled` resolves once it has handled every change stored so far in what it watches (settled.ts). */
export type Seat = { composer: Composer; rollouts: RolloutDirector; settled(): Promise<void>; stop(): Promise<void> };

/**
 * Starts the seat; resolves once its buckets are bound, the registry is written and the rollouts are
 * read. A bucket that is missing and not the seat's to create (a bus with isolation, before `init`)
 * is waited for, and so is a bus whose JetStream does not answer (a cluster without a meta leader:
 * said once at warning); one that holds more than its bucket rejects (DESIGN §3: the seat refuses
 * to run on it).
 */
export async function startSeat(opts: SeatOptions): Promise<Seat> {
  const { nc, log } = opts;
  const size = { replicas: opts.replicas, maxConsumers: maxConsumersFor(DEFAULT_MESH_NODES) };
  // Every JetStream call of the start is in the one wait: a 503 on the registry's read, after the
  // buckets were bound, ended the seat as surely as one on a bucket's check (issue 31).
  const bind = async (warn: (line: string) => void) => {
    // The inputs it watches are checked too (a missing one is waited for by its watch).
    await Promise.all([ASSIGNMENTS, MODULES].map((b) => refuseBadBucket(nc, kvBucket(b), warn)));
    const kvs = new Map(await Promise.all(SEAT_BUCKETS.map(async (b) => [b, await ensureKv(nc, b, opts.replicas, warn, BIND_TIMING)] as const)));
    await ensureBucket(nc, objBucket(opts.archives), size, warn, BIND_TIMING);
    await syncRegistry(nc, kvs.get(REGISTRY_BUCKET)!, log);
    // Read before the first pass: a restarted seat goes on with each rollout where it was.
    return { kvs, states: await loadRolloutStates(nc, log) };
  };
  const bound = await bindWhenThere(bind, log, () => nc.isClosed());
  if (!bound) throw new Error("the connection closed before the seat's buckets were there");
  const { kvs, states } = bound;

  const registry = kvs.get(REGISTRY_BUCKET)!;
  const timer = setInterval(() => {
    syncRegistry(nc, registry, log).catch((err) => log.error(`registry: ${errorText(err)}`));
  }, REGISTRY_INTERVAL_MS);

  const plans = kvs.get(PLANS)!;
  const say = (line: Health) => nc.publish(HEALTH_SUBJECT, jsonBytes(line));
  const time = opts.time ?? {};
  // What the seat was handed, for `settled`.
  const heard = new Heard();
  const watched: { bucket: string; caughtUp: Promise<void> }[] = [];
  const rollouts = new RolloutDirector(StateWriter.of(kvs.get(ROLLOUTS)!, log, time.timer), say, log, {
    ...(opts.rollout ? { policy: opts.rollout } : {}),
    ...time,
  });
  rollouts.load(states);
  const publisher = new KvPublisher(nc, PLANS, opts.inboxPrefix === undefined ? {} : { inboxPrefix: opts.inboxPrefix });
  // The seat routes between the two: compositions and passes to the rollouts, which the composer
  // asks per key; the passes the rollouts ask to the composer.
  const composer = new Composer(
    {
      putPlan: (key, value) => publisher.put(key, value),
      deletePlan: (key) => plans.delete(key),
      health: say,
    },
    log,
    (summary) => {
      rollouts.passed(summary.failed);
      heard.passed();
      opts.onPass?.(summary);
    },
    {
      select: rollouts,
      onComposition: (module, composition) => rollouts.compositionChanged(module, composition),
      ...(time.now ? { now: time.now } : {}),
      ...(time.timer ? { retry: { timer: time.timer } } : {}),
    },
  );
  rollouts.attach({ ...composer.view, recompose: (module, nodes) => composer.recompose(module, nodes) });
  const verb = serveProvisioning(nc, log, readerOf(nc, opts.inboxPrefix), withRollouts(composer.healthBook, rollouts));
  const requests = serveRolloutRequests(nc, log, rollouts);
  // The subscription reaches the server before the seat says it is ready: a request right after is answered.
  await nc.flush();

  const watches = (
    [
      ['plans', PLANS],
      ['assignments', ASSIGNMENTS],
      ['modules', MODULES],
    ] as const
  ).map(([input, bucket]) => {
    const watch = watchBucket(
      nc,
      bucket,
      '>',
      (e) => {
        if (input === 'plans') rollouts.seePlan(e.key, e.value, e.at);
        composer.update(input, e.key, e.value, e.revision);
        heard.saw(bucket, e.revision);
      },
      log,
    );
    void watch.caughtUp.then(() => composer.loaded(input));
    watched.push({ bucket, caughtUp: watch.caughtUp });
    return watch;
  });
  // The nodes' reports are an input of rollouts only: they never start a pass.
  const reports = watchBucket(
    nc,
    APPLIED,
    '>',
    (e) => {
      rollouts.seeReport(e.key, e.value, e.revision);
      heard.saw(APPLIED, e.revision);
    },
    log,
  );
  void reports.caughtUp.then(() => rollouts.reportsRead());
  watches.push(reports);
  watched.push({ bucket: APPLIED, caughtUp: reports.caughtUp });

  return {
    composer,
    rollouts,
    settled: () => settleSeat({ nc, heard, watched, passesIdle: () => composer.idle(), rolloutsIdle: () => rollouts.idle() }),
    async stop() {
      clearInterval(timer);
      await verb.stop();
      await requests.stop();
      rollouts.close();
      for (const w of watches) w.stop();
      composer.close();
      await composer.idle();
      publisher.close();
    },
  };
}
