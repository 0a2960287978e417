// One SDK watch's asks: each answer heard, only the newest ask's; at the watch's start and after a
// reconnect an ask the client is not there to answer (no responders, a timeout) is asked again with a
// backoff until it answers — a module may start before its node's client, and its connection comes
// back before the node's client has subscribed `prov.ask.<node>` again.
import { Backoff, type BackoffLimits } from '../shared/base/backoff.ts';
import { isNoResponders, isTimeout } from '../shared/base/errors.ts';
import { unrefTimer, type Timer } from '../shared/base/timer.ts';

/** How a watch asks again after a reconnect. */
export type WatchAsksOptions = {
  /** The waits between asks while the client is absent. */
  backoff: BackoffLimits;
  /** How long after the reconnect the client may stay absent before the watch's callback hears so, once. */
  absentMs: number;
  /** Waits between asks (default the real one, unref'd: the connection keeps the module running). */
  timer?: Timer;
  /** The clock the absence is measured on (default Date.now). */
  now?: () => number;
};

/** The asks of one watch. */
export type WatchAsks = {
  /** Asks now; `afterReconnect` (or the watch's first ask) asks again while the client is absent. A newer ask makes an older one's answer stale. */
  askNow(afterReconnect: boolean): void;
  /** Asks nothing more and hears no answer still on its way. */
  stop(): void;
};

/** Whether an ask failed because no client was there to answer it, rather than the client answering (an AskError's busError, or the error itself). */
export function isClientAbsent(err: unknown): boolean {
  const bus = err instanceof Error && 'busError' in err ? (err as { busError: unknown }).busError : err;
  return isNoResponders(bus) || isTimeout(bus);
}

/** Makes the asks of one watch: `ask` asks the client once, failing with an `E` (the SDK's AskError); `hear` gets each answer. */
export function watchAsks<E extends Error>(ask: () => Promise<string>, hear: (value: string | E) => void, opts: WatchAsksOptions): WatchAsks {
  const timer = opts.timer ?? unrefTimer;
  const now = opts.now ?? Date.now;
  const backoff = new Backoff(opts.backoff);
  let newest = 0;
  // Since when the client has been absent after a reconnect (undefined: not asking again), and
  // whether the callback was told so: a bus that comes and goes again keeps the first reconnect's clock.
  let absentSince: number | undefined;
  let told = false;
  let waiting: { cancel(): void } | undefined;
  const answered = (mine: number, value: string | E) => {
    if (mine !== newest) return;
    absentSince = undefined;
    told = false;
    hear(value);
  };
  const attempt = (mine: number) =>
    void ask().then(
      (value) => answered(mine, value),
      (err: E) => {
        if (mine !== newest) return;
        if (absentSince === undefined || !isClientAbsent(err)) return answered(mine, err);
        if (!told && now() - absentSince >= opts.absentMs) {
          told = true;
          hear(err);
        }
        waiting = timer(() => attempt(mine), backoff.failed());
      },
    );
  return {
    askNow(afterReconnect) {
      waiting?.cancel();
      const mine = ++newest;
      if (afterReconnect) {
        absentSince ??= now();
        backoff.reset();
      }
      attempt(mine);
    },
    stop() {
      waiting?.cancel();
      newest++;
      absentSince = undefined;
    },
  };
}
