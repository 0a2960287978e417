// The adapter's administrator sessions, each honouring the helper's AbortSignal (Adapter in
// src/sdk/types.ts): on an abort no further statement is sent, PostgreSQL is asked to cancel the one
// under way (a CancelRequest, as psql's Ctrl-C sends), and the connection is ended soon after even
// when the server does not answer — so a call the helper gave up on does not go on in the server.
import { connect } from 'node:net';
import pg from 'pg';
import { Unavailable } from '../../src/sdk/types.ts';

/** How long after an abort the session's connection is ended, cancelled statement or not. */
export const CANCEL_GRACE_MS = 1000;

/** Sends one statement of a session (refused once the session was aborted). */
export type Query = <R extends pg.QueryResultRow = pg.QueryResultRow>(sql: string, params?: unknown[]) => Promise<pg.QueryResult<R>>;

/** Where cancel requests go: the server the sessions are connected to. */
export type Server = { host: string; port: number };

/** A connected client's backend key, which a cancel request names (node-postgres keeps it, untyped). */
type BackendKey = { processID: number | null; secretKey: number | null };

/**
 * SQLSTATEs with which PostgreSQL refuses a login whose role, password or database no longer holds:
 * invalid_authorization_specification (no such role, or NOLOGIN), invalid_password,
 * invalid_catalog_name (no such database). Any other failure to log in is not an answer about the
 * login: PostgreSQL could not be reached, or would not take a connection (starting up, too many).
 */
const LOGIN_DOES_NOT_HOLD = new Set(['28000', '28P01', '3D000']);

/** Where the adapter reaches PostgreSQL: `host:port`, `[v6]:port`, or the socket file under a directory host. */
export function postgresAddress(server: Server): string {
  if (server.host.startsWith('/')) return `${server.host.replace(/\/+$/, '')}/.s.PGSQL.${server.port}`;
  return server.host.includes(':') ? `[${server.host}]:${server.port}` : `${server.host}:${server.port}`;
}

/**
 * A connection PostgreSQL did not take, said with its address: never mistaken for what a check found,
 * and an outage to the helper (Unavailable: said once, not at error on every try).
 */
export function cannotConnect(server: Server, err: unknown, what = ''): Error {
  const e = err as Error & { code?: string };
  const state = typeof e.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code) ? ` (SQLSTATE ${e.code})` : '';
  return new Unavailable(`cannot connect to PostgreSQL at ${postgresAddress(server)}${what}: ${e?.message ?? String(err)}${state}`, { cause: err });
}

/** Runs `work` on one connection of `pool`; see the file's comment. */
export async function withSession<T>(pool: pg.Pool, server: Server, signal: AbortSignal | undefined, work: (query: Query) => Promise<T>): Promise<T> {
  const client = await untilAborted(
    pool.connect().catch((err: unknown) => {
      throw cannotConnect(server, err);
    }),
    signal,
    (late) => late.release(),
  );
  let aborted = false;
  let ender: NodeJS.Timeout | undefined;
  const onAbort = () => {
    aborted = true;
    sendCancel(server, client as unknown as BackendKey);
    ender = setTimeout(() => destroy(client), CANCEL_GRACE_MS).unref();
  };
  signal?.addEventListener('abort', onAbort, { once: true });
  const query: Query = (sql, params) => {
    signal?.throwIfAborted();
    return client.query(sql, params);
  };
  try {
    return await work(query);
  } finally {
    signal?.removeEventListener('abort', onAbort);
    clearTimeout(ender);
    // Released with an error, the pool ends the connection instead of handing it out again.
    client.release(aborted ? new Error('aborted') : undefined);
  }
}

/**
 * Whether `user` logs in to `database` with `password` over a connection of its own, given up on an
 * abort: false only when PostgreSQL answers that the login does not hold; a connection it does not
 * take is an error naming its address (the check cannot tell, so nothing drifted).
 */
export async function canLogin(
  server: Server,
  login: { user: string; password: string; database: string },
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<boolean> {
  signal?.throwIfAborted();
  const client = new pg.Client({ ...server, ...login, connectionTimeoutMillis: timeoutMs });
  client.on('error', () => undefined);
  const end = () => destroy(client);
  signal?.addEventListener('abort', end, { once: true });
  try {
    await client.connect();
    return (await client.query<{ me: string }>('SELECT current_user AS me')).rows[0]?.me === login.user;
  } catch (err) {
    signal?.throwIfAborted();
    if (LOGIN_DOES_NOT_HOLD.has((err as { code?: string }).code ?? '')) return false;
    throw cannotConnect(server, err, ` to check the login of ${login.user}`);
  } finally {
    signal?.removeEventListener('abort', end);
    await client.end().catch(() => undefined);
  }
}

/** Resolves with `pending`'s value, or rejects at once on an abort (a value that comes late is handed to `late`). */
function untilAborted<T>(pending: Promise<T>, signal: AbortSignal | undefined, late: (value: T) => void): Promise<T> {
  if (!signal) return pending;
  signal.throwIfAborted();
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    pending.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        if (signal.aborted) late(value);
        else resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(err);
      },
    );
  });
}

/** Asks the server to cancel the statement the backend runs (protocol CancelRequest); best effort, the connection's end follows. */
function sendCancel(server: Server, key: BackendKey): void {
  if (key.processID === null || key.secretKey === null) return;
  const request = Buffer.alloc(16);
  request.writeInt32BE(16, 0);
  request.writeInt32BE(80877102, 4);
  request.writeInt32BE(key.processID, 8);
  request.writeInt32BE(key.secretKey, 12);
  const socket = connect(server.port, server.host, () => socket.end(request));
  socket.on('error', () => undefined);
  socket.setTimeout(CANCEL_GRACE_MS, () => socket.destroy());
}

/** Ends a client's connection at once (its pending queries fail), without waiting for the server. */
function destroy(client: pg.Client | pg.PoolClient): void {
  (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
}
