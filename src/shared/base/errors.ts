// One vocabulary for what went wrong (issue 19): whatever was thrown, said as one line; and what a
// bus error is, told by nats.js's error classes and codes, never by matching its words. Core NATS
// only, so the SDK's asks carry no JetStream client: JetStream's own errors are jetstream-errors.ts.
import { errors } from '@nats-io/transport-node';

/** How much of an error `errorText` says. */
export type ErrorTextOptions = {
  /** Prefix the error's class (`TypeError: …`): for a failure nothing expected, in a log. */
  name?: boolean;
  /** Follow the `cause` chain (`fetch failed: connect ECONNREFUSED`): where the reason is in the cause. */
  cause?: boolean;
  /** The stack as the error holds it (its name and message first): for a failure of the program itself. */
  stack?: boolean;
};

/**
 * Whatever was thrown, as one line: an Error's message (with its class, or its causes, when asked),
 * anything else as its string. Never throws, even for a value that cannot print itself.
 */
export function errorText(err: unknown, opts: ErrorTextOptions = {}): string {
  try {
    if (!(err instanceof Error)) return String(err);
    if (opts.stack && err.stack) return err.stack;
    const head = opts.name ? `${err.name}: ${err.message}` : err.message;
    if (!opts.cause) return head;
    const causes: string[] = [];
    for (let c = err.cause; c instanceof Error && causes.length < 5; c = c.cause) causes.push(c.message);
    return [head, ...causes].join(': ');
  } catch {
    return 'an unprintable error';
  }
}

/** Whether `err`, or an error it was caused by, is one that `is` accepts. */
export function inChain(err: unknown, is: (e: Error) => boolean): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 8; e = e.cause, depth++) if (is(e)) return true;
  return false;
}

/** Whether nobody answered a request: nats.js's no responders, or the "JetStream not enabled" its JetStream clients make of it. */
export function isNoResponders(err: unknown): boolean {
  // JetStreamNotEnabled is not exported by @nats-io/jetstream; it sets its name, and its cause is the request's error.
  return inChain(
    err,
    (e) => e instanceof errors.NoRespondersError || e.name === 'JetStreamNotEnabled' || (e instanceof errors.RequestError && e.isNoResponders()),
  );
}

/** Whether a request or an operation ran out of time (nats.js's TimeoutError, or a fetch's timeout signal). */
export function isTimeout(err: unknown): boolean {
  return inChain(err, (e) => e instanceof errors.TimeoutError || e.name === 'TimeoutError');
}

/** Whether the server refused a publish or a subscription to this login. */
export function isPermissionViolation(err: unknown): boolean {
  return inChain(err, (e) => e instanceof errors.PermissionViolationError);
}

/**
 * Says a bus error the way an operator can act on it. Across accounts a call that is not granted
 * comes back as no responders; quoted names (a consumer's random name) are left out so that one
 * reason reads the same on every retry.
 */
export function describeBusError(err: unknown): string {
  if (isNoResponders(err)) return 'no responders: the bucket is missing or not granted to this account';
  return errorText(err).replace(/"[^"]*"/g, '"…"');
}
