// Watching a bucket that may not be there yet (DESIGN §11): a node's client starts before the seat
// has made its buckets, or before its grants reach them, and waits for them with the one backoff.
import type { NatsConnection } from '@nats-io/transport-node';
import { BucketRefusedError, refuseBadBucket } from '../bucket-bind.ts';
import { kvBucket } from '../../contract/bucket-spec.ts';
import { describeBusError, isTimeout } from '../../base/errors.ts';
import { retryWithBackoff } from '../../base/retry.ts';
import type { Timer } from '../../base/timer.ts';
import { NatsInternalsError } from './internals.ts';
import type { Watch, WatchEvent } from './types.ts';
import { watchKv, type WatchOptions } from './watch.ts';

/** How long a watch of a missing bucket waits between tries, at most. */
export const MAX_WATCH_RETRY_MS = 5000;

/**
 * Watches `filter` of `bucket` (from its start or its tail, `opts`), waiting for the bucket while it is missing (or not yet granted), or
 * holds more than its bucket (refused, bucket-bind.ts): a new reason is logged once, and the wait
 * doubles up to MAX_WATCH_RETRY_MS.
 */
export function watchBucket(
  nc: NatsConnection,
  bucket: string,
  filter: string,
  onEvent: (event: WatchEvent) => void,
  log: { notice(line: string): void; debug(line: string): void; warn(line: string): void; error(line: string): void },
  opts: WatchOptions = {},
): Watch {
  return waitForWatch(`bucket ${bucket} (${filter})`, log, {
    // Checked at each bind: a stream that holds more than its bucket is never watched.
    open: async () => {
      const created = await refuseBadBucket(nc, kvBucket(bucket), (line) => log.warn(line));
      return watchKv(nc, bucket, filter, onEvent, log, created === undefined ? opts : { ...opts, created });
    },
    closed: () => nc.isClosed(),
  });
}

/** What waiting for a watch is made of besides the bus, handed in so tests drive it without time or a server. */
export type WatchWait = {
  /** Opens the watch; a throw means its bucket is missing or not granted yet. */
  open(): Promise<Watch>;
  /** Whether the connection is closed, which ends the wait for good. */
  closed(): boolean;
  /** Waits between tries (default unrefTimer). */
  timer?: Timer;
};

/**
 * Opens a watch of `what` (`bucket B (F)`), trying again while it fails with a wait doubling up to
 * MAX_WATCH_RETRY_MS; a new reason is logged once at notice, its repeats at debug. It is settled once
 * caught up or once a try is answered with a refusal (the bucket missing, not granted). A nats.js
 * without the private parts the watch relies on is not waited out: caughtUp rejects with its NatsInternalsError.
 */
export function waitForWatch(what: string, log: { notice(line: string): void; debug(line: string): void; error?(line: string): void }, wait: WatchWait): Watch {
  let stopped = false;
  let watch: Watch | undefined;
  let said = '';
  let fatal: NatsInternalsError | undefined;
  let answeredMissing!: () => void;
  const missing = new Promise<void>((resolve) => (answeredMissing = resolve));
  const caughtUp = (async () => {
    const opened = await retryWithBackoff({
      attempt: wait.open,
      timer: wait.timer,
      stopped: () => stopped,
      maxMs: MAX_WATCH_RETRY_MS,
      onFailure: (err) => {
        if (err instanceof NatsInternalsError) return ((fatal = err), false);
        if (wait.closed()) return false;
        // An answer (a refusal, not a timeout) says there is nothing this login can read there yet.
        if (!isTimeout(err)) answeredMissing();
        // A bucket not created yet, or no responders under a node's grants, looks the same: wait,
        // saying it once per reason and the retries only at debug.
        const refused = err instanceof BucketRefusedError;
        const line = `waiting for ${what}: ${refused ? err.message : describeBusError(err)}`;
        if (line !== said) (refused && log.error ? log.error : log.notice)(line);
        else log.debug(`${line} (retrying)`);
        said = line;
        return true;
      },
    });
    if (fatal) throw fatal;
    if (!opened) return;
    watch = opened;
    if (stopped) opened.stop();
    if (said) log.notice(`${what} is there now`);
    return opened.caughtUp;
  })();
  const settled = Promise.race([caughtUp, missing]);
  // Most callers never read it: caughtUp's rejection is theirs to hear, not an unhandled one here.
  settled.catch(() => {});
  return {
    caughtUp,
    settled,
    hold: (key, revision) => watch?.hold?.(key, revision),
    stop: () => {
      stopped = true;
      watch?.stop();
    },
  };
}
