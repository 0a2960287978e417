// Waiting for what a daemon binds at start (DESIGN §3): buckets not made yet (on a bus with isolation
// only `init` makes them), and a bus whose JetStream does not answer — a cluster electing its meta
// leader, or left without one, answers "JetStream system temporarily unavailable" (503) or nothing
// at all. A daemon waits for both with the one backoff and never exits for them: under systemd's
// start limit a unit that exits for a transient bus is left failed (issue 31).
import { BucketMissingError } from './bucket-bind.ts';
import { errorText } from '../base/errors.ts';
import { isJetStreamUnavailable } from './jetstream-errors.ts';
import { retryWithBackoff } from '../base/retry.ts';
import type { Timer } from '../base/timer.ts';

/** The longest wait between two tries of a bind whose bucket is missing, or whose bus's JetStream does not answer. */
export const MISSING_BUCKET_RETRY_MS = 5000;

/** Where a bind's wait says what it waits for. */
export type BindLog = { warn(line: string): void; notice(line: string): void; debug(line: string): void };

/**
 * Runs `bind` until no bucket it needs is missing and the bus's JetStream answers, the wait doubling
 * up to MISSING_BUCKET_RETRY_MS; any other error — a refused bucket among them — is thrown, and
 * undefined is resolved when `stopped` ends the wait. A missing bucket (BucketMissingError) is said
 * at notice once a reason, its repeats at debug; JetStream not answering (a 503 "temporarily
 * unavailable", a call unanswered, no responders: isJetStreamUnavailable) once at warning for the
 * whole wait, each try's reason after it at debug, and its end at notice. `bind` is handed a `warn`
 * that says each line once, however many tries say it (a bucket's warnings, found again each try);
 * `timer` waits between tries (tests hand in their own).
 */
export async function bindWhenThere<T>(
  bind: (warn: (line: string) => void) => Promise<T>,
  log: BindLog,
  stopped: () => boolean = () => false,
  timer?: Timer,
): Promise<T | undefined> {
  let fatal: unknown;
  let said = '';
  let unavailableSince: number | undefined;
  const warned = new Set<string>();
  const warnOnce = (line: string) => (warned.has(line) ? log.debug(line) : (warned.add(line), log.warn(line)));
  const bound = await retryWithBackoff({
    attempt: () => bind(warnOnce),
    stopped,
    ...(timer ? { timer } : {}),
    maxMs: MISSING_BUCKET_RETRY_MS,
    onFailure: (err) => {
      if (err instanceof BucketMissingError) {
        if (err.message !== said) log.notice(`waiting: ${err.message}`);
        else log.debug(`still waiting: ${err.message}`);
        said = err.message;
        return true;
      }
      if (!isJetStreamUnavailable(err)) return ((fatal = err), false);
      const reason = errorText(err);
      if (unavailableSince === undefined) log.warn(`the bus's JetStream does not answer (${reason}): waiting for it, trying again`);
      else log.debug(`JetStream still does not answer (${reason}); trying again`);
      unavailableSince ??= Date.now();
      return true;
    },
  });
  if (fatal !== undefined) throw fatal;
  if (bound === undefined) return undefined;
  if (unavailableSince !== undefined) log.notice(`the bus's JetStream answers again, after ${((Date.now() - unavailableSince) / 1000).toFixed(1)} s`);
  if (said) log.notice('every bucket is there now');
  return bound;
}
