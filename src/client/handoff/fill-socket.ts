// The client side of the fill socket (DESIGN §9): one lazy persistent connection, replies matched by id
// and checked against what was sent, each request bounded in time, knocks watched.
import { unwatchFile, watchFile, type Stats } from 'node:fs';
import { createConnection, type Socket } from 'node:net';
import type { Logger } from '../../shared/cli/log.ts';
import { FILL_OP, judgeReplyLine, type FillReply, type FillRequest } from '../../shared/contract/fill-protocol.ts';
import { MAX_ENGINE_LINE_BYTES } from '../../shared/contract/limits.ts';
import { LineReader } from '../../shared/base/ndjson.ts';
import { errorText } from '../../shared/base/errors.ts';

/** How often the socket path is stat'ed for a knock when the caller does not say. */
export const DEFAULT_KNOCK_POLL_MS = 150;
/** How long a request may go unanswered before it is given up (DESIGN §9, --engine-timeout). */
export const DEFAULT_ENGINE_TIMEOUT_MS = 30_000;

/** The engine's socket is absent, refused the connection, or dropped it before replying. */
export class EngineUnavailable extends Error {
  override name = 'EngineUnavailable';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** The engine kept the connection but did not answer a request in time; the connection was dropped. */
export class EngineTimeout extends Error {
  override name = 'EngineTimeout';
  /** The engine's socket. */
  readonly socketPath: string;
  /** How long the request waited, in ms. */
  readonly timeoutMs: number;
  constructor(socketPath: string, timeoutMs: number, module: string) {
    super(`engine ${socketPath} did not answer the fill of ${module} within ${timeoutMs} ms`);
    this.socketPath = socketPath;
    this.timeoutMs = timeoutMs;
  }
}

/** The engine broke the protocol: a reply out of shape or naming a file it was not sent, or a line past the limit. */
export class EngineProtocolError extends Error {
  override name = 'EngineProtocolError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** The client's end of the fill socket. */
export type EngineClient = {
  /**
   * Sends one fill request and resolves with its reply: `ok:false`, or `ok:true` naming only files
   * sent, each at most once as sent; a file it leaves out is the caller's to wait on, and the
   * connection is kept (DESIGN §9). Rejects with EngineUnavailable (no socket, or the connection
   * dropped), EngineTimeout (no answer in time) or EngineProtocolError (a reply that breaks §9).
   */
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
  /** How long a request may go unanswered, in ms (DEFAULT_ENGINE_TIMEOUT_MS). */
  timeoutMs?: number;
  /** The longest reply line taken, in bytes (MAX_ENGINE_LINE_BYTES); tests make it small. */
  maxLineBytes?: number;
};

/** Makes the client's end of the fill socket; it never throws when the engine is absent. */
export function createEngineClient(opts: EngineClientOptions): EngineClient {
  const { socketPath, log } = opts;
  const link = new EngineLink(socketPath, log, opts.timeoutMs ?? DEFAULT_ENGINE_TIMEOUT_MS, opts.maxLineBytes ?? MAX_ENGINE_LINE_BYTES);
  const knockHandlers: (() => void)[] = [];
  const stopWatching = watchKnocks(socketPath, opts.pollMs ?? DEFAULT_KNOCK_POLL_MS, log, (mtimeMs) => {
    // The stale connection goes before the handlers run, so what they send again takes a fresh one.
    link.knocked(mtimeMs);
    for (const fn of knockHandlers) {
      try {
        fn();
      } catch (err) {
        log.error(`engine ${socketPath}: knock handler failed: ${errorText(err)}`);
      }
    }
  });
  return {
    fill: (req) => link.fill(req),
    onKnock: (fn) => {
      knockHandlers.push(fn);
    },
    close: () => {
      stopWatching();
      link.close();
    },
  };
}

type Pending = {
  /** The paths sent: the reply may name only these. */
  paths: string[];
  /** When it was sent (ms since the epoch), to compare with a knock's mtime. */
  sentAt: number;
  resolve: (reply: FillReply) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
};

type Connection = {
  socket: Socket;
  pending: Map<number, Pending>;
  reader: LineReader;
  /** Set once the connection is given up; a dropped connection takes no request. */
  dropped: boolean;
  /** Lines ignored (out of shape, or for no request in flight): the first is said, the rest counted. */
  ignored: number;
};

/** The one connection at a time to the engine, made on demand and given up whenever it breaks. */
class EngineLink {
  #current: Connection | undefined;
  #nextId = 1;
  #closed = false;

  constructor(
    readonly socketPath: string,
    readonly log: Logger,
    readonly timeoutMs: number,
    readonly maxLineBytes: number,
  ) {}

  /** Sends a request on the current connection (made when there is none) and waits for its reply. */
  fill(req: Omit<FillRequest, 'id' | 'op'>): Promise<FillReply> {
    if (this.#closed) return Promise.reject(new EngineUnavailable('engine client closed'));
    const conn = this.#connection();
    const id = this.#nextId++;
    return new Promise<FillReply>((resolve, reject) => {
      const timer = setTimeout(() => this.#timedOut(conn, id, req.module), this.timeoutMs);
      conn.pending.set(id, { paths: req.files.map((f) => f.path), sentAt: Date.now(), resolve, reject, timer });
      conn.socket.write(JSON.stringify({ ...req, id, op: FILL_OP }) + '\n');
    });
  }

  /**
   * A knock says the engine is ready as of the socket's mtime, and its handlers send everything
   * again. A request sent before that and still unanswered may sit on a connection the engine will
   * never answer, so that connection is dropped. A request sent after the knock (which is seen up
   * to a poll late) reached the engine that knocked and is left alone.
   */
  knocked(mtimeMs: number): void {
    const conn = this.#current;
    const stale = conn ? [...conn.pending.values()].filter((p) => p.sentAt < mtimeMs).length : 0;
    if (!conn || stale === 0) return;
    this.log.info(`engine ${this.socketPath}: knocked while ${stale} request(s) sent before it went unanswered; dropping the connection`);
    this.#drop(conn, new EngineUnavailable(`engine ${this.socketPath} knocked while the request went unanswered; it goes again`));
  }

  /** Drops the connection, rejecting what is in flight; later requests are rejected at once. */
  close(): void {
    this.#closed = true;
    if (this.#current) this.#drop(this.#current, new EngineUnavailable('engine client closed'));
  }

  #connection(): Connection {
    const current = this.#current;
    if (current && !current.dropped && !current.socket.destroyed) return current;
    const conn = openConnection(this.socketPath, this.log, this.maxLineBytes, (err) => this.#drop(conn, err));
    this.#current = conn;
    return conn;
  }

  #timedOut(conn: Connection, id: number, module: string): void {
    const waiter = conn.pending.get(id);
    if (!waiter) return;
    conn.pending.delete(id);
    waiter.reject(new EngineTimeout(this.socketPath, this.timeoutMs, module));
    this.log.warn(`engine ${this.socketPath}: no answer to the fill of ${module} within ${this.timeoutMs} ms; dropping the connection`);
    this.#drop(conn, new EngineUnavailable(`engine ${this.socketPath}: connection dropped after a request went unanswered for ${this.timeoutMs} ms`));
  }

  #drop(conn: Connection, err: Error): void {
    if (this.#current === conn) this.#current = undefined;
    dropConnection(conn, err);
  }
}

/** Connects; replies settle the connection's own requests, and anything that breaks it calls `onBroken`. */
function openConnection(socketPath: string, log: Logger, maxLineBytes: number, onBroken: (err: Error) => void): Connection {
  const socket = createConnection(socketPath);
  let connected = false;
  let failure: Error | undefined;
  const conn: Connection = {
    socket,
    pending: new Map(),
    dropped: false,
    ignored: 0,
    reader: new LineReader(maxLineBytes, {
      onLine: (line) => settle(conn, line, maxLineBytes, socketPath, log, onBroken),
      onTooLong: (bytes) => {
        log.warn(`engine ${socketPath}: a reply line of ${bytes} bytes and more; dropping the connection`);
        onBroken(new EngineProtocolError(`engine ${socketPath} sent a reply line past the limit of ${maxLineBytes} bytes`));
      },
    }),
  };
  socket.on('data', (chunk: Buffer) => conn.reader.push(chunk));
  socket.once('connect', () => {
    connected = true;
    log.info(`engine ${socketPath}: connected`);
  });
  socket.on('error', (err) => {
    failure = err;
  });
  // 'close' follows every 'error', so what is in flight is rejected in one place.
  socket.on('close', () => {
    if (conn.dropped) return;
    if (connected) log.warn(`engine ${socketPath}: connection closed`);
    const why = connected ? 'closed the connection before replying' : `unavailable: ${failure?.message ?? 'connection closed'}`;
    onBroken(new EngineUnavailable(`engine ${socketPath} ${why}`, { cause: failure }));
  });
  return conn;
}

/** Gives a connection up: stops reading, rejects every request in flight with `err`, closes the socket. */
function dropConnection(conn: Connection, err: Error): void {
  if (conn.dropped) return;
  conn.dropped = true;
  conn.reader.stop();
  conn.socket.destroy();
  for (const p of conn.pending.values()) {
    clearTimeout(p.timer);
    p.reject(err);
  }
  conn.pending.clear();
}

// A protocol error (a reply out of shape, or naming a file it was not sent) rejects its own request with the
// reason and drops the connection: nothing later on it can be trusted. A reply that leaves a file out is
// no such error: the engine said nothing false, so the other requests on the connection go on.
function settle(conn: Connection, line: Buffer, maxLineBytes: number, socketPath: string, log: Logger, onBroken: (err: Error) => void): void {
  if (conn.dropped || isBlank(line)) return;
  const verdict = judgeReplyLine(line, (id) => conn.pending.get(id)?.paths, maxLineBytes);
  if (verdict.kind === 'ignored') {
    conn.ignored++;
    if (conn.ignored === 1) log.warn(`engine ${socketPath}: ${verdict.why}: ${line.subarray(0, 200).toString('utf8')} (further such lines are counted)`);
    else if (/^10+$/.test(String(conn.ignored))) log.warn(`engine ${socketPath}: ${conn.ignored} lines ignored on this connection so far`);
    return;
  }
  const waiter = conn.pending.get(verdict.id)!;
  conn.pending.delete(verdict.id);
  clearTimeout(waiter.timer);
  if (verdict.kind === 'resolved') return waiter.resolve(verdict.reply);
  waiter.reject(new EngineProtocolError(verdict.reason));
  log.warn(`engine ${socketPath}: ${verdict.reason}; dropping the connection`);
  onBroken(new EngineUnavailable(`engine ${socketPath}: connection dropped after a protocol error (${verdict.reason})`));
}

function isBlank(line: Buffer): boolean {
  for (const byte of line) if (byte !== 0x20 && byte !== 0x09 && byte !== 0x0d) return false;
  return true;
}

/** Polls the socket path; a new inode or mtime on a present path is a knock, handed its mtime. Returns the stop. */
function watchKnocks(socketPath: string, pollMs: number, log: Logger, onKnock: (mtimeMs: number) => void): () => void {
  // A zero inode means the path is absent: the engine went away, which is no knock.
  const onStat = (curr: Stats, prev: Stats) => {
    if (curr.ino === 0) return;
    if (curr.ino === prev.ino && curr.mtimeMs === prev.mtimeMs) return;
    log.info(`engine ${socketPath}: knock`);
    onKnock(curr.mtimeMs);
  };
  watchFile(socketPath, { interval: pollMs, persistent: false }, onStat);
  return () => unwatchFile(socketPath, onStat);
}
