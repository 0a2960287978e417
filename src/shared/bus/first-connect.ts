// A daemon's first connection to the bus (issue 22): nats.js waiting on a first connect says nothing
// until it connects, so a bus that is not there at start looked like a program that hung. Each try
// is nats.js's own (every server once); between tries the one backoff, and what happened is said.
import { errors, type NatsConnection } from '@nats-io/transport-node';
import { connectBus, type BusOptions } from './connect.ts';
import { errorText, inChain } from '../base/errors.ts';
import { whichLogin } from './login.ts';
import { retryWithBackoff } from '../base/retry.ts';
import { refTimer, type Timer } from '../base/timer.ts';

/** The longest wait between two tries to reach the bus at start, in ms. */
export const MAX_FIRST_CONNECT_WAIT_MS = 5000;

/** Where the first connection says what happens. */
export type FirstConnectLog = { warn(line: string): void; notice(line: string): void; info(line: string): void; debug(line: string): void };

/** How the first connection is made; `attempt` and `timer` are for tests. */
export type FirstConnect = {
  /** Where the bus is and how to log in. */
  bus: BusOptions;
  /** Where each failure and the connection are said. */
  log: FirstConnectLog;
  /** Resolves when the program is asked to stop: no more tries, and a connection made after it is closed. */
  signalled: Promise<void>;
  /** The login as a refusal names it (shared/bus/login.ts `whichLogin`). */
  login?: string;
  /** One try (default: connectBus once, reconnecting forever once connected, as a daemon does). */
  attempt?: () => Promise<NatsConnection>;
  /** Waits between tries (default refTimer: nothing else keeps the program running meanwhile). */
  timer?: Timer;
};

/**
 * Connects, trying again until the bus is reached or the program stops (undefined then), having said
 * the login's warnings (a seed others may read) at warning. A new reason is said once at warning
 * (`cannot reach the bus at URL (reason); trying again`), its repeats at debug; the connection is
 * said at notice after a failure, at info otherwise.
 */
export async function connectWhenReachable(o: FirstConnect): Promise<NatsConnection | undefined> {
  let stopped = false;
  let waiting: { cancel(): void } | undefined;
  const base = o.timer ?? refTimer;
  // The wait between tries is cancelled at the stop: a referenced timer would hold the exit up to 5 s.
  const timer: Timer = (fn, ms) => (waiting = base(fn, ms));
  void o.signalled.then(() => {
    stopped = true;
    waiting?.cancel();
  });
  const connecting = tryUntilConnected({ ...o, timer }, () => stopped);
  const nc = await Promise.race([connecting, o.signalled.then(() => undefined)]);
  // A try still in flight when the stop came: its connection, if made, is closed.
  if (!nc) void connecting.then((late) => late?.close().catch(() => {}));
  return nc;
}

async function tryUntilConnected(o: FirstConnect, stopped: () => boolean): Promise<NatsConnection | undefined> {
  for (const warning of o.bus.warnings ?? []) o.log.warn(warning);
  const where = o.bus.servers.join(',');
  const attempt = o.attempt ?? (() => connectBus(o.bus, true, { reconnect: true }));
  let said = '';
  let failures = 0;
  const nc = await retryWithBackoff({
    attempt,
    stopped,
    maxMs: MAX_FIRST_CONNECT_WAIT_MS,
    ...(o.timer ? { timer: o.timer } : {}),
    onFailure: (err, waitMs) => {
      failures++;
      const line = unreachableLine(where, err, o.login);
      if (line !== said) o.log.warn(`${line}; trying again`);
      else o.log.debug(`${line}; trying again in ${waitMs} ms`);
      said = line;
      return !stopped();
    },
  });
  if (!nc || stopped()) return nc;
  const server = nc.getServer();
  if (failures > 0) o.log.notice(`bus: connected to ${server} after ${failures} failed ${failures === 1 ? 'try' : 'tries'}`);
  else o.log.info(`bus: connected to ${server}`);
  return nc;
}

/**
 * A command's one try to reach the bus (a person runs it), having said what is wrong with its login's
 * files; a failure is thrown as its one line: a refused login names the login it needs (`expected`,
 * as shared/bus/login.ts `whichLogin` says it), not "cannot reach".
 */
export async function connectCommandOnce(bus: BusOptions, expected: string, warn: (line: string) => void): Promise<NatsConnection> {
  for (const warning of bus.warnings ?? []) warn(warning);
  return connectBus(bus, true).catch((err: unknown) => {
    throw new Error(unreachableLine(bus.servers.join(','), err, whichLogin(bus, expected)));
  });
}

/** What a failed try is, as an operator acts on it: a refused login names the login, anything else the reason. */
function unreachableLine(where: string, err: unknown, login?: string): string {
  if (inChain(err, (e) => e instanceof errors.AuthorizationError || e instanceof errors.UserAuthenticationExpiredError)) {
    return `the bus at ${where} refuses ${login ?? 'this login'} (${errorText(err)})`;
  }
  return `cannot reach the bus at ${where} (${errorText(err, { cause: true })})`;
}
