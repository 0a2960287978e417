// The client's alive message (DESIGN §3, §14): `prov.alive.<node>` at start and every period, with
// its version, its period, its plans' count and its engine's state — a plain publish, nothing stored,
// on a timer of its own so it never waits on a fill nor a fill on it.
import type { NatsConnection } from '@nats-io/transport-node';
import { sleepOn, unrefTimer, type Timer } from '../../shared/base/timer.ts';
import { errorText } from '../../shared/base/errors.ts';
import type { Logger } from '../../shared/cli/log.ts';
import type { Alive } from '../../shared/contract/alive.ts';
import { aliveSubject } from '../../shared/contract/subjects.ts';
import type { EngineWatch } from './engine-state.ts';
import { HubWatch, probeHub, type HubReach } from './hub.ts';
import { lastHeardOn } from '../../shared/bus/watch/heard.ts';

/** The longest wait for the hub's answer (and for a round trip to the site's server after it), in ms. */
const HUB_PROBE_TIMEOUT_MS = 5000;

/** What the alive tick needs. */
export type AliveOptions = {
  /** The node's connection: the message goes out on it, and the hub is probed through it. */
  nc: NatsConnection;
  /** The node whose alive subject it publishes on. */
  node: string;
  /** The client's version (shared/cli/version.ts). */
  version: string;
  /** The period, in ms (--alive). */
  everyMs: number;
  /** The engine's state, pinged when no fill proved it within the period. */
  engine: EngineWatch;
  /** The count of the node's plans now. */
  modules: () => number;
  /** Where a message not published, or the hub out of reach, is said. */
  log: Logger;
  /** When each wait ends (the unref'd real timer by default: the bus connection keeps the client running). */
  timer?: Timer;
  /** The clock, ms since the epoch (Date.now by default). */
  now?: () => number;
  /** Probes the hub's JetStream (hub.ts probeHub over `nc` by default). */
  probe?: () => Promise<HubReach>;
  /** When the connection's watches last heard from JetStream (shared/bus/watch/heard.ts by default): a word in the period spares the probe. */
  heardFromHub?: () => number | undefined;
};

/** A running alive tick. */
export type AliveTick = {
  /** Stops the tick: nothing is published after it returns, even by a tick waiting on its ping. */
  stop(): void;
};

/** Publishes the alive message now and every `everyMs` after each tick began. */
export function startAlive(o: AliveOptions): AliveTick {
  const timer = o.timer ?? unrefTimer;
  const now = o.now ?? Date.now;
  const nc = o.nc;
  const probe = o.probe ?? (() => probeHub(nc, Math.min(o.everyMs, HUB_PROBE_TIMEOUT_MS)));
  const heardFromHub = o.heardFromHub ?? (() => lastHeardOn(nc));
  const hub = new HubWatch(o.log);
  let stopped = false;
  let next: { cancel(): void } | undefined;
  // The first tick asks the engine unless a fill since the start has said how it is.
  let lastTick = 0;
  let hubSince = 0;

  const tick = async () => {
    const began = now();
    // A fill's reply or failure in the period already said how the engine is; only silence asks it. The
    // message waits for the answer half a period at most: a ping still unanswered then (a hung engine,
    // with --engine-timeout past it) is taken when it ends, and the next message says it.
    if (!o.engine.heardSince(lastTick)) await Promise.race([o.engine.ping(), sleepOn(timer, o.everyMs / 2)]);
    // The next period begins after this one's ping: its own answer is no word of the next.
    lastTick = now();
    if (stopped) return;
    const alive: Alive = {
      node: o.node,
      version: o.version,
      every: o.everyMs / 1000,
      engine: o.engine.current(),
      modules: o.modules(),
      at: new Date(now()).toISOString(),
    };
    try {
      o.nc.publish(aliveSubject(o.node), JSON.stringify(alive));
    } catch (err) {
      o.log.warn(`${aliveSubject(o.node)}: not published: ${errorText(err)}`);
    }
    // An idle fleet's watches hear a heartbeat every 30 s: that word is proof enough, and costs the bus nothing more.
    const reach: HubReach = (heardFromHub() ?? -Infinity) >= hubSince ? { reached: true } : await probe();
    hubSince = began;
    if (!stopped) hub.found(reach);
  };

  const loop = () => {
    if (stopped) return;
    const began = now();
    void tick()
      .catch((err: unknown) => o.log.error(`${aliveSubject(o.node)}: ${errorText(err, { stack: true })}`))
      .finally(() => {
        if (stopped) return;
        next = timer(loop, Math.max(0, o.everyMs - (now() - began)));
      });
  };
  loop();
  return {
    stop() {
      stopped = true;
      next?.cancel();
    },
  };
}
