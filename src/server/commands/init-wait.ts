// How `init` waits for a bus not ready to answer yet (issue 31 item 7): a cluster electing its
// JetStream leader answers "JetStream system temporarily unavailable" (503) or nothing at all, for
// seconds, and init run just after its servers started meets that. Each bucket's calls are asked
// again with the one backoff (shared/retry.ts), each reason said once, until `--timeout` has passed
// since init began; then init gives up, naming the bucket it waited on and the bus's last answer.
import { errorText, isTimeout } from '../../shared/errors.ts';
import { isTemporarilyUnavailable } from '../../shared/jetstream-errors.ts';
import { retryWithBackoff } from '../../shared/retry.ts';
import type { Timer } from '../../shared/timer.ts';

/** The longest wait between two tries of a bucket the bus does not answer yet. */
export const INIT_RETRY_MAX_MS = 5000;

/** The shortest time a call is given, even with the deadline nearer. */
const LEAST_CALL_MS = 250;

/**
 * Whether the bus may answer later: the call went unanswered, or JetStream is temporarily
 * unavailable. Unlike a daemon's wait (shared/bind-wait.ts), no responders is not waited for: to the
 * admin's init it says JetStream is not enabled on the server, which waiting does not mend.
 */
export function isNotReadyYet(err: unknown): boolean {
  return isTimeout(err) || isTemporarilyUnavailable(err);
}

/** init gave up: the bus did not answer for a bucket before the deadline. */
export class InitGaveUp extends Error {
  override name = 'InitGaveUp';

  constructor(
    /** The bucket waited on. */
    readonly bucket: string,
    /** The bus's last answer, as one line. */
    readonly lastAnswer: string,
  ) {
    super(`bucket ${bucket}: ${lastAnswer}`);
  }
}

/** Where a wait stands in the run: its deadline, and the clock and timer it is measured by. */
export type InitClock = {
  /** When init gives up, in the clock's ms. */
  deadline: number;
  /** The time now, in ms. */
  now(): number;
  /** Waits between tries (tests hand in their own). */
  timer?: Timer;
};

/**
 * Runs `attempt` for `bucket` until the bus answers it: a failure the bus may answer later
 * (isNotReadyYet) is said through `say` once per reason and tried again, after the backoff's wait,
 * while the deadline is ahead; any other failure is thrown as it is, and the deadline an InitGaveUp.
 * `attempt` is handed how long its call may wait: `callMs`, or less as the deadline nears.
 */
export async function untilAnswered<T>(
  bucket: string,
  clock: InitClock,
  callMs: number,
  say: (line: string) => void,
  attempt: (timeoutMs: number) => Promise<T>,
): Promise<T> {
  let fatal: unknown;
  let said = '';
  let lastCallMs = callMs;
  const answered = await retryWithBackoff({
    attempt: () => attempt((lastCallMs = Math.max(LEAST_CALL_MS, Math.min(callMs, clock.deadline - clock.now())))),
    stopped: () => false,
    maxMs: INIT_RETRY_MAX_MS,
    ...(clock.timer ? { timer: clock.timer } : {}),
    onFailure: (err, waitMs) => {
      if (!isNotReadyYet(err) || clock.now() + waitMs >= clock.deadline) return ((fatal = err), false);
      const reason = isTimeout(err) ? `unanswered within ${lastCallMs} ms` : `the bus answered "${errorText(err)}"`;
      if (reason !== said) say(`bucket ${bucket}: ${reason}; asking again until init's --timeout (${secondsLeft(clock)} s left)`);
      said = reason;
      return true;
    },
  });
  if (answered !== undefined) return answered;
  if (!isNotReadyYet(fatal)) throw fatal;
  throw new InitGaveUp(bucket, isTimeout(fatal) ? `unanswered within ${lastCallMs} ms` : errorText(fatal));
}

function secondsLeft(clock: InitClock): number {
  return Math.max(0, Math.ceil((clock.deadline - clock.now()) / 1000));
}
