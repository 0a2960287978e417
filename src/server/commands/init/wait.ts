// How `init` waits for a bus not ready to answer yet (issue 31 item 7): a cluster electing its
// JetStream leader answers "JetStream system temporarily unavailable" (503) or nothing at all, for
// seconds, and init run just after its servers started meets that. Each bucket's calls are asked
// again with the one backoff (shared/base/retry.ts), each reason said once, until `--timeout` has passed
// since init began; then init gives up, naming the bucket it waited on and the bus's last answer.
import { errorText, isTimeout } from '../../../shared/base/errors.ts';
import { isTemporarilyUnavailable } from '../../../shared/bus/jetstream-errors.ts';
import { isTooManyReplicas } from '../../../shared/bus/replicas-hint.ts';
import { retryWithBackoff } from '../../../shared/base/retry.ts';
import type { Timer } from '../../../shared/base/timer.ts';

/** The longest wait between two tries of a bucket the bus does not answer yet. */
export const INIT_RETRY_MAX_MS = 5000;

/** The shortest time a call is given, even with the deadline nearer. */
const LEAST_CALL_MS = 250;

/**
 * Whether the bus may answer later: the call went unanswered, or JetStream is temporarily
 * unavailable. Unlike a daemon's wait (shared/bus/bind-wait.ts), no responders is not waited for: to the
 * admin's init it says JetStream is not enabled on the server, which waiting does not mend.
 */
export function isNotReadyYet(err: unknown): boolean {
  return isTimeout(err) || isTemporarilyUnavailable(err);
}

/** How long after init began a cluster's refusal to place copies is asked again: its servers may still be joining. */
export const PEERS_GRACE_MS = 15_000;

/**
 * Whether JetStream refused the copies asked because it knows too few servers to place them on (no
 * suitable peers, insufficient resources): on a cluster whose servers just started, the meta leader
 * is elected before every peer has joined, so init run at once meets it for a few seconds. A lone
 * server's "replicas > 1 not supported in non-clustered mode" is not this: it never mends.
 */
export function isPeersNotJoined(err: unknown): boolean {
  return isTooManyReplicas(err) && !/non-clustered mode/i.test(errorText(err));
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
  /** Until when a refusal to place the copies asked (isPeersNotJoined) is asked again, in the clock's ms. */
  peersUntil?: number;
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
      const peers = isPeersNotJoined(err) && clock.now() + waitMs < (clock.peersUntil ?? -Infinity);
      if (!(isNotReadyYet(err) || peers) || clock.now() + waitMs >= clock.deadline) return ((fatal = err), false);
      const reason = isTimeout(err) ? `unanswered within ${lastCallMs} ms` : `the bus answered "${errorText(err)}"`;
      const until = peers
        ? `while its cluster's servers may still be joining (${secondsLeft({ ...clock, deadline: clock.peersUntil! })} s more at most)`
        : `until init's --timeout (${secondsLeft(clock)} s left)`;
      if (reason !== said) say(`bucket ${bucket}: ${reason}; asking again ${until}`);
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
