// The client side of the fill socket (DESIGN §9): one lazy persistent connection, replies matched by id, knocks watched.
import { unwatchFile, watchFile, type Stats } from 'node:fs';
import { createConnection, type Socket } from 'node:net';
import type { Logger } from '../shared/log.ts';
import { FILL_OP, FillReplySchema, type FillReply, type FillRequest } from '../shared/fill-protocol.ts';
import { decodeJson } from '../shared/schemas.ts';

/** How often the socket path is stat'ed for a knock when the caller does not say. */
export const DEFAULT_KNOCK_POLL_MS = 150;

/** The engine's socket is absent, refused the connection, or dropped it before replying. */
export class EngineUnavailable extends Error {
  override name = 'EngineUnavailable';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** The client's end of the fill socket. */
export type EngineClient = {
  /** Sends one fill request and resolves with its reply; rejects with EngineUnavailable when the socket is absent or drops before replying. */
  fill(req: Omit<FillRequest, 'id' | 'op'>): Promise<FillReply>;
  /** Called on a knock: the socket path created or its mtime changed (after start). */
  onKnock(fn: () => void): void;
  /** Stops watching, drops the connection and rejects every request in flight. */
  close(): void;
};

/** Options of createEngineClient. */
export type EngineClientOptions = {
  /** The engine's unix socket. */
  socketPath: string;
  /** Where connection and knock events are said. */
  log: Logger;
  /** How often the socket path is stat'ed for a knock (DEFAULT_KNOCK_POLL_MS). */
  pollMs?: number;
};

type Pending = { resolve: (reply: FillReply) => void; reject: (err: Error) => void };
type Connection = { socket: Socket; pending: Map<number, Pending> };

/** Makes the client's end of the fill socket; it never throws when the engine is absent. */
export function createEngineClient(opts: EngineClientOptions): EngineClient {
  const { socketPath, log } = opts;
  const knockHandlers: (() => void)[] = [];
  let nextId = 1;
  let current: Promise<Connection> | undefined;
  let closed = false;

  const fill = async (req: Omit<FillRequest, 'id' | 'op'>): Promise<FillReply> => {
    if (closed) throw new EngineUnavailable('engine client closed');
    const attempt = current ??= openConnection(socketPath, log, () => {
      if (current === attempt) current = undefined;
    });
    let conn: Connection;
    try {
      conn = await attempt;
    } catch (err) {
      if (current === attempt) current = undefined;
      throw err;
    }
    if (closed || conn.socket.destroyed) throw new EngineUnavailable(`engine ${socketPath} closed the connection before replying`);
    const id = nextId++;
    return new Promise<FillReply>((resolve, reject) => {
      conn.pending.set(id, { resolve, reject });
      conn.socket.write(JSON.stringify({ ...req, id, op: FILL_OP }) + '\n');
    });
  };

  const stopWatching = watchKnocks(socketPath, opts.pollMs ?? DEFAULT_KNOCK_POLL_MS, log, knockHandlers);
  return {
    fill,
    onKnock: (fn) => { knockHandlers.push(fn); },
    close: () => {
      if (closed) return;
      closed = true;
      stopWatching();
      void current?.then((conn) => {
        dropAll(conn, new EngineUnavailable('engine client closed'));
        conn.socket.destroy();
      }, () => {});
      current = undefined;
    },
  };
}

/** Connects once; replies settle the connection's own requests, and its close rejects those still in flight. */
function openConnection(socketPath: string, log: Logger, onClose: () => void): Promise<Connection> {
  const conn: Connection = { socket: createConnection(socketPath), pending: new Map() };
  const { socket } = conn;
  let buffered = '';
  let connected = false;
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    buffered += chunk;
    let newline: number;
    while ((newline = buffered.indexOf('\n')) >= 0) {
      settle(conn, buffered.slice(0, newline), socketPath, log);
      buffered = buffered.slice(newline + 1);
    }
  });
  // 'close' follows every 'error', so the connection is forgotten in one place.
  socket.on('close', () => {
    if (connected) log.warn(`engine ${socketPath}: connection closed`);
    onClose();
    dropAll(conn, new EngineUnavailable(`engine ${socketPath} closed the connection before replying`));
  });
  return new Promise((resolve, reject) => {
    socket.once('connect', () => {
      connected = true;
      log.info(`engine ${socketPath}: connected`);
      resolve(conn);
    });
    socket.on('error', (err) => {
      reject(new EngineUnavailable(`engine ${socketPath} unavailable: ${err.message}`, { cause: err }));
    });
  });
}

function settle(conn: Connection, line: string, socketPath: string, log: Logger): void {
  if (line.trim() === '') return;
  const reply = decodeJson(FillReplySchema, line);
  if (!reply.ok) {
    log.warn(`engine ${socketPath}: reply out of shape: ${reply.reason}`);
    return;
  }
  const id = reply.value.id;
  const waiter = id === null ? undefined : conn.pending.get(id);
  if (!waiter || id === null) {
    log.warn(`engine ${socketPath}: reply for no request in flight: ${line.slice(0, 200)}`);
    return;
  }
  conn.pending.delete(id);
  waiter.resolve(reply.value);
}

function dropAll(conn: Connection, err: Error): void {
  for (const p of conn.pending.values()) p.reject(err);
  conn.pending.clear();
}

/** Polls the socket path; a new inode or mtime on a present path is a knock. Returns the stop. */
function watchKnocks(socketPath: string, pollMs: number, log: Logger, handlers: readonly (() => void)[]): () => void {
  // A zero inode means the path is absent: the engine went away, which is no knock.
  const onStat = (curr: Stats, prev: Stats) => {
    if (curr.ino === 0) return;
    if (curr.ino === prev.ino && curr.mtimeMs === prev.mtimeMs) return;
    log.info(`engine ${socketPath}: knock`);
    for (const fn of handlers) {
      try {
        fn();
      } catch (err) {
        log.error(`engine ${socketPath}: knock handler failed: ${(err as Error).message}`);
      }
    }
  };
  watchFile(socketPath, { interval: pollMs, persistent: false }, onStat);
  return () => unwatchFile(socketPath, onStat);
}
