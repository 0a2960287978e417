// Connecting to the bus, watching and draining the connection: core NATS only, so that what imports
// it alone (the SDK's asks) carries no JetStream client. Binding KV buckets is bus.ts.
import { connect, credsAuthenticator, errors, nkeyAuthenticator, type NatsConnection, type Status } from '@nats-io/transport-node';
import { errorText, inChain } from '../base/errors.ts';
import { MAX_LOGIN_FILE_BYTES } from '../contract/limits.ts';
import { readRegularFile } from '../base/regular-file.ts';

/** How to reach and authenticate to the bus. */
export type BusOptions = {
  /** Every server of the cluster. */
  servers: string[];
  /** A NATS credentials file (JWT + nkey seed). */
  creds?: string;
  /** A file holding an nkey user seed (`SU…`), as `bus-config` writes one per user. */
  nkey?: string;
  /** A user name (with `pass`). */
  user?: string;
  /** A password. */
  pass?: string;
  /** A token. */
  token?: string;
  /** A CA file to verify the servers' TLS certificates. */
  tlsCa?: string;
  /** The inbox prefix, `_INBOX_node_<node>` for a node's client (DESIGN §11). */
  inboxPrefix?: string;
  /** The connection's name, seen by the server's monitoring. */
  name: string;
  /** What is wrong with the login's files without stopping the program (a seed others may read): the program says each once, at warning. */
  warnings?: string[];
};

/** The wait between two tries to reconnect to one server at first, in ms. */
export const RECONNECT_FIRST_WAIT_MS = 250;
/** The longest wait between two tries to reconnect to one server, in ms. */
export const RECONNECT_MAX_WAIT_MS = 5000;

/**
 * The wait before trying a server again once the connection has been down `downMs`: 250 ms at first,
 * then a quarter of the time down, at most 5 s, each with up to a fifth more at random. A bus back
 * after an outage is reached within about a quarter of it, and a fleet refused or kept out for long
 * (a node taken out of bus-config, a bus down for minutes) tries a server every 5 s, not 4 times a
 * second, nor all its nodes in step.
 */
export function reconnectWait(downMs: number, random: () => number = Math.random): number {
  const base = Math.min(RECONNECT_MAX_WAIT_MS, Math.max(RECONNECT_FIRST_WAIT_MS, downMs / 4));
  return Math.round(base * (1 + random() / 5));
}

/**
 * Connects with reconnects forever: a daemon waits for the bus, it does not give up on it.
 * `once` is for a command a person runs: one try, and an error when the bus is not there; with
 * `reconnect` (a module's asks) the first connection is tried once, and once made it comes back
 * after the bus does, as a daemon's.
 */
export async function connectBus(opts: BusOptions, once = false, { reconnect = !once }: { reconnect?: boolean } = {}): Promise<NatsConnection> {
  if (!reconnect && opts.servers.length > 1) return connectToOneOf(opts);
  return connectTo(opts, opts.servers, once, reconnect);
}

/**
 * A command's one try at each server in turn, the first to answer kept: nats.js with no reconnects
 * tries only the first server of its (shuffled) list — its pool loses the next server as it drops the
 * failed one twice — so a command failed with one server of a cluster down, half the time.
 */
async function connectToOneOf(opts: BusOptions): Promise<NatsConnection> {
  let last: unknown;
  for (const server of opts.servers) {
    try {
      return await connectTo(opts, [server], true, false);
    } catch (err) {
      last = err;
      // A refused login is the same on every server: said at once, not after each of them.
      if (inChain(err, isAuthError)) throw err;
    }
  }
  throw last;
}

async function connectTo(opts: BusOptions, servers: string[], once: boolean, reconnect: boolean): Promise<NatsConnection> {
  // When the connection went down and has not proved itself since (a ping answered after a reconnect).
  const down: { since?: number } = { since: Date.now() };
  const nc = await connect({
    servers,
    name: opts.name,
    ...(opts.creds ? { authenticator: credsAuthenticator(loginFile(opts.creds, 'credentials file')) } : {}),
    ...(opts.nkey
      ? { authenticator: nkeyAuthenticator(new TextEncoder().encode(new TextDecoder().decode(loginFile(opts.nkey, 'nkey seed file')).trim())) }
      : {}),
    ...(opts.user ? { user: opts.user, pass: opts.pass } : {}),
    ...(opts.token ? { token: opts.token } : {}),
    // Read here, not by nats.js (which reads it in one of Node's file threads, where a FIFO would hang the process's exit).
    ...(opts.tlsCa ? { tls: { ca: new TextDecoder().decode(loginFile(opts.tlsCa, 'CA file')) } } : {}),
    ...(opts.inboxPrefix ? { inboxPrefix: opts.inboxPrefix } : {}),
    // No stack trace captured for every request (two Error objects a request, most of a cold
    // start's garbage); an error still says its subject and reason.
    noAsyncTraces: true,
    maxReconnectAttempts: reconnect ? -1 : 0,
    reconnectDelayHandler: () => reconnectWait(down.since === undefined ? 0 : Date.now() - down.since),
    waitOnFirstConnect: !once,
    // nats.js gives up reconnecting for good after two refused logins in a row, and a daemon would
    // then run on with a dead connection: a server reloaded with the node's new key before the node
    // has its seed, or an "Authentication Timeout" while thousands reconnect at once, is a refusal
    // that ends. A daemon keeps trying, each refusal said (watchConnection).
    ignoreAuthErrorAbort: reconnect,
  });
  down.since = undefined;
  if (reconnect) trackDowntime(nc, down);
  return nc;
}

/** The bytes of a login file: a regular file within MAX_LOGIN_FILE_BYTES, else an error naming what it is. */
function loginFile(path: string, what: string): Uint8Array {
  const read = readRegularFile(path, MAX_LOGIN_FILE_BYTES);
  if (!read.ok) throw new Error(`${what}: ${read.reason}`);
  return read.value;
}

/**
 * Keeps `down.since` for the reconnect's wait: set at a disconnect (and kept through the tries
 * after it, a refused login's included), cleared once a reconnect has answered a ping.
 */
function trackDowntime(nc: NatsConnection, down: { since?: number }): void {
  followConnection(nc, {
    down: () => void (down.since ??= Date.now()),
    back: () => void (down.since = undefined),
  });
}

/** What followConnection tells: each disconnect, each return proven by a ping, and every other status. */
type ConnectionFollower = { down(server: string): void; back(server: string): void; other?(s: Status): void };

/**
 * Follows the connection's statuses: a disconnect, and a return only once the server has answered a
 * ping on it — a login the server refuses is reported as a reconnect before the refusal, and a ping
 * answered after the connection went again is no news.
 */
function followConnection(nc: NatsConnection, on: ConnectionFollower): void {
  let generation = 0;
  void (async () => {
    for await (const s of nc.status()) {
      const server = 'server' in s ? ` ${s.server}` : '';
      if (s.type === 'disconnect') {
        generation++;
        on.down(server);
      } else if (s.type === 'reconnect') {
        const mine = ++generation;
        nc.flush().then(
          () => void (mine === generation && on.back(server)),
          () => {},
        );
      } else on.other?.(s);
    }
  })();
}

/**
 * Logs the connection's disconnects and reconnects; `onBack` runs on each reconnect, once the server
 * has answered a ping on it (followConnection): the client would otherwise fill every module again at
 * each refused try.
 */
export function watchConnection(nc: NatsConnection, log: { warn(l: string): void; notice(l: string): void }, onBack?: () => void): void {
  const said = new Set<string>();
  let down = false;
  followConnection(nc, {
    down(server) {
      // Said once until the connection is back: a try refused after its TCP connect is a disconnect too.
      if (!down) log.warn(`bus: disconnected from${server}`);
      down = true;
    },
    back(server) {
      down = false;
      said.clear();
      log.notice(`bus: reconnected to${server}`);
      onBack?.();
    },
    other(s) {
      // A refused login is said once until the connection is back (a permission refused is its caller's to say).
      if (s.type === 'error' && isAuthError(s.error) && !said.has(s.error.message)) {
        said.add(s.error.message);
        log.warn(`bus: the login is refused (${errorText(s.error)}): is it still in the bus's configuration, and is --nkey its own seed? trying again`);
      }
    },
  });
}

/**
 * How long a program's drain waits for the bus before it closes without it: a bus that holds the
 * connection open and answers nothing (a server stopped, not gone; a cut that dropped no socket) never
 * answers the drain's flush, and the connection is only found dead at its second unanswered ping,
 * minutes later: a seat asked to stop was still there 60 s on, past its unit's TimeoutStopSec (30 s).
 * A bus that answers drains in milliseconds.
 */
export const DRAIN_WAIT_MS = 5000;

/**
 * Drains the connection before a program stops; a bus already gone (nothing can be flushed), or one
 * that has not answered within `waitMs`, is said at warning and the connection closed, never an
 * error: the program was asked to stop, and what it had not sent yet is what its next start writes again.
 */
export async function drainBus(nc: NatsConnection, log: { warn(line: string): void }, waitMs = DRAIN_WAIT_MS): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<string>((resolve) => (timer = setTimeout(() => resolve(`no answer within ${waitMs} ms`), waitMs)));
  const failed = await Promise.race([
    nc.drain().then(
      () => undefined,
      (err: unknown) => errorText(err),
    ),
    late,
  ]);
  clearTimeout(timer);
  if (failed === undefined) return;
  log.warn(`bus: not drained (${failed}): closed without it`);
  // Not awaited past a moment: closing waits for a socket the silent bus may never close.
  await Promise.race([nc.close().catch(() => {}), new Promise((resolve) => setTimeout(resolve, 500).unref())]);
}

/** Whether the server refused the login: a bad or unknown key, an expired one, or a CONNECT too late (`Authentication Timeout`). */
/** Whether the bus refused the login itself (its seed, user or password), as opposed to not being reached. */
export function isAuthError(err: unknown): boolean {
  return err instanceof errors.AuthorizationError || err instanceof errors.UserAuthenticationExpiredError;
}
