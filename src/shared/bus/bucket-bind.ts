// Binding a bucket of the mesh (DESIGN §3): its stream is read and refused when it holds more than
// its bucket (bucket-spec.ts); a missing one is created only where the login may create streams (a
// bus without isolation) — on a bus with isolation only `init`, run with the admin login, creates.
import type { NatsConnection } from '@nats-io/transport-node';
import { JetStreamApiError, jetstreamManager, type JetStreamManager, type StreamConfig, type StreamInfo } from '@nats-io/jetstream';
import { retryWithBackoff } from '../base/retry.ts';
import { bucketProblems, bucketWarnings, describeProblems, streamConfigOf, streamOf, type BucketSize, type BucketSpec } from '../contract/bucket-spec.ts';
import { errorText, isPermissionViolation, isTimeout } from '../base/errors.ts';
import { isTemporarilyUnavailable, isStreamNotFound } from './jetstream-errors.ts';
import { paceOf } from './watch/pace.ts';

/** A bucket whose stream holds more than its bucket: no program uses it. */
export class BucketRefusedError extends Error {
  override name = 'BucketRefusedError';
}

/** A bucket that is not there, and that this login may not create. */
export class BucketMissingError extends Error {
  override name = 'BucketMissingError';
}

/** What reading a bucket's stream found. */
export type BucketState =
  /** As it should be; `warnings` say what is not refused but should change; `created`: when the stream was made. */
  | { state: 'ok'; config: StreamConfig; warnings: string[]; created: string }
  /** No such stream. */
  | { state: 'missing' }
  /** The stream's configuration is not this login's to read (a node's share of a per-node bucket lists every key). */
  | { state: 'unchecked'; reason: string; cause: unknown };

/** How long reading or creating a stream may take. */
export const BUCKET_API_TIMEOUT_MS = 5000;

/** A JetStream manager that does not ask `$JS.API.INFO` first (a node may not be granted it everywhere); each call waits `timeoutMs`. */
export function bucketManager(nc: NatsConnection, timeoutMs = BUCKET_API_TIMEOUT_MS): Promise<JetStreamManager> {
  return jetstreamManager(nc, { checkAPI: false, timeout: timeoutMs });
}

/**
 * How long one read of a stream's info waits before it is asked again, within the bucket's timeout:
 * a stream choosing a new leader drops every read until it has one (4–9 s on nats-server 2.9), and a
 * program started then waited out a whole 5 s read past it.
 */
export const STREAM_READ_ASK_MS = 500;

/**
 * Reads a bucket's stream and says its state; throws BucketRefusedError, naming the bucket and
 * every difference, when it holds more than its bucket (a second subject, a mirror, a source, a
 * republish, a key/value bucket without its hardening). A read left unanswered, or answered that the
 * stream is choosing its leader (503), is asked again every STREAM_READ_ASK_MS until `timeoutMs`; what its answer says of the stream's replicas tells the
 * connection's watches whether the cluster is failing over (shared/bus/watch/pace.ts).
 */
export async function inspectBucket(nc: NatsConnection, spec: BucketSpec, timeoutMs = BUCKET_API_TIMEOUT_MS): Promise<BucketState> {
  let info: StreamInfo;
  try {
    info = await streamInfoAskedAgain(nc, streamOf(spec), timeoutMs);
  } catch (err) {
    if (isStreamNotFound(err)) return { state: 'missing' };
    if (err instanceof JetStreamApiError) throw err;
    // Answered, not left unanswered: not this login's to read (DESIGN §11), so no look at it either.
    if (!isTimeout(err)) paceOf(nc).refusedRead(streamOf(spec));
    return { state: 'unchecked', reason: errorText(err), cause: err };
  }
  paceOf(nc).sawStream(info.cluster, streamOf(spec));
  const problems = bucketProblems(spec, info.config);
  if (problems.length > 0) throw new BucketRefusedError(describeProblems(spec, problems));
  return { state: 'ok', config: info.config, warnings: bucketWarnings(info.config), created: info.created };
}

/**
 * Asks a stream's info again every STREAM_READ_ASK_MS while no ask has an answer, each ask listened
 * to until the deadline: a stream choosing its leader drops reads, and a cluster without a meta
 * leader answers 503 only after a while (past one short ask). The first info wins; anything but a
 * timeout or a 503 ends it at once; at the deadline the last 503, or the timeout, is thrown.
 */
function streamInfoAskedAgain(nc: NatsConnection, stream: string, timeoutMs: number): Promise<StreamInfo> {
  const until = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    let settled = false;
    let unavailable: unknown;
    let last: unknown;
    const timers: ReturnType<typeof setTimeout>[] = [];
    const settle = (end: () => void): void => {
      if (settled) return;
      settled = true;
      timers.forEach(clearTimeout);
      end();
    };
    const ask = (): void => {
      const left = until - Date.now();
      if (settled || left <= 0) return;
      bucketManager(nc, left)
        .then((jsm) => jsm.streams.info(stream))
        .then(
          (info) => settle(() => resolve(info)),
          (err: unknown) => {
            last = err;
            if (isTemporarilyUnavailable(err)) unavailable = err;
            else if (!isTimeout(err)) settle(() => reject(err));
          },
        );
      if (left > STREAM_READ_ASK_MS) timers.push(setTimeout(ask, STREAM_READ_ASK_MS));
    };
    // Every ask ends by the deadline; a little after it, what they said is the answer.
    timers.push(
      setTimeout(() => settle(() => reject(unavailable ?? last ?? new Error(`stream ${stream}: unanswered within ${timeoutMs} ms`))), timeoutMs + 50),
    );
    ask();
  });
}

/**
 * How long a check of a bucket answers for the same connection's next one, from its answer: a
 * client's start checks its buckets, then each watch checks its own as it binds, a stream info
 * apiece that a fleet started together pays for at once (docs/scale.md).
 */
export const CHECK_REUSE_MS = 5000;

/** A check of one bucket: its outcome, and when it was answered (undefined while it waits). */
type Check = { done: Promise<string | undefined>; answeredAt?: number };

const recentChecks = new WeakMap<NatsConnection, Map<string, Check>>();

/**
 * Throws BucketRefusedError when a bucket holds more than it should; a missing or unreadable one
 * passes (it is waited for, or not this login's to read). A check of the same bucket on `nc` still
 * waiting for its answer, or answered within CHECK_REUSE_MS and not failed, is its answer (its
 * warnings said once): counted from the ask, a check the bus answered only at its timeout was
 * asked again by every watch binding just after. Resolves with the stream's creation time when its
 * info was read (a watch resuming from a record checks it is the same stream, watch.ts `resume`).
 */
export function refuseBadBucket(nc: NatsConnection, spec: BucketSpec, warn?: (line: string) => void): Promise<string | undefined> {
  const checks = recentChecks.get(nc) ?? new Map<string, Check>();
  recentChecks.set(nc, checks);
  const recent = checks.get(spec.name);
  if (recent && (recent.answeredAt === undefined || Date.now() - recent.answeredAt < CHECK_REUSE_MS)) return recent.done;
  const done = (async () => {
    const found = await inspectBucket(nc, spec);
    if (found.state !== 'ok') return undefined;
    for (const w of found.warnings) warn?.(`bucket ${spec.name}: ${w}`);
    return found.created;
  })();
  const entry: Check = { done };
  checks.set(spec.name, entry);
  // A check that failed answers for nothing: the next one asks the bus again.
  done.then(
    () => void (entry.answeredAt = Date.now()),
    () => checks.get(spec.name) === entry && checks.delete(spec.name),
  );
  return done;
}

/** How many times a stream's read or creation the bus leaves unanswered is asked in all (askedAgain). */
export const BUCKET_ASKS = 3;

/** How a bucket's calls wait: each answer's timeout, and how many times a call is asked (tests make both small). */
export type BucketTiming = { timeoutMs: number; asks: number };

/** The timing every program uses. */
export const BUCKET_TIMING: BucketTiming = { timeoutMs: BUCKET_API_TIMEOUT_MS, asks: BUCKET_ASKS };

/** A daemon's bind inside bindWhenThere (or a loop of its own that tries again): one ask a try, since its wait asks again for as long as it takes. */
export const BIND_TIMING: BucketTiming = { timeoutMs: BUCKET_API_TIMEOUT_MS, asks: 1 };

/**
 * Runs `attempt` (a bucket's look, then its creation) again while the bus leaves it unanswered — a
 * cluster still forming its replicas' groups, or busy making others' (`init` run just after the
 * servers started) — up to `timing.asks` in all, saying each retry through `say`. The attempt looks
 * first, so an unanswered create that made the stream is found, never made twice.
 */
export async function askedAgain<T>(bucket: string, timing: BucketTiming, say: ((line: string) => void) | undefined, attempt: () => Promise<T>): Promise<T> {
  for (let ask = 1; ; ask++) {
    try {
      return await attempt();
    } catch (err) {
      if (!isTimeout(err) || ask >= timing.asks) throw err;
      say?.(`bucket ${bucket}: unanswered within ${timing.timeoutMs} ms; asking again (${timing.asks - ask} more at most)`);
    }
  }
}

/**
 * Binds a bucket the caller keeps (the seat its six, a provider its `<provider>_bound`): checked
 * when there, created as `init` would when missing and the login may create streams, and a
 * BucketMissingError (saying to run `init`) when it may not. Resolves whether it was created. A
 * look or a create the bus leaves unanswered is asked again (askedAgain).
 */
export async function ensureBucket(
  nc: NatsConnection,
  spec: BucketSpec,
  size: BucketSize,
  warn?: (line: string) => void,
  timing: BucketTiming = BUCKET_TIMING,
): Promise<'found' | 'created'> {
  const jsm = await bucketManager(nc, timing.timeoutMs);
  return askedAgain(spec.name, timing, warn, () => ensureOnce(nc, jsm, spec, size, timing.timeoutMs, warn));
}

async function ensureOnce(
  nc: NatsConnection,
  jsm: JetStreamManager,
  spec: BucketSpec,
  size: BucketSize,
  timeoutMs: number,
  warn?: (line: string) => void,
): Promise<'found' | 'created'> {
  const found = await inspectBucket(nc, spec, timeoutMs);
  // A bucket the caller keeps is one its login may read the stream of: not reading it is a failure.
  if (found.state === 'unchecked') throw new Error(`bucket ${spec.name}: its stream could not be read: ${found.reason}`, { cause: found.cause });
  if (found.state === 'ok') {
    for (const w of found.warnings) warn?.(`bucket ${spec.name}: ${w}`);
    return 'found';
  }
  try {
    await jsm.streams.add(streamConfigOf(spec, size));
    return 'created';
  } catch (err) {
    // Made at the same time by another program: check what it made.
    if (err instanceof JetStreamApiError && err.code === STREAM_NAME_IN_USE) return ensureOnce(nc, jsm, spec, size, timeoutMs, warn);
    if (isPermissionViolation(err)) {
      throw new BucketMissingError(`bucket ${spec.name} is missing and this login may not create it: run \`server.js init\` with the admin login`, {
        cause: err,
      });
    }
    throw err;
  }
}

/** nats-server's error code for a stream created with a name already in use. */
const STREAM_NAME_IN_USE = 10058;
