// The client side of the fill socket (DESIGN §9): one lazy persistent connection, replies matched by id
// and checked against what was sent, each request bounded in time, knocks watched.
import type { Logger } from '../../shared/cli/log.ts';
import { FILL_OP, PING_OP, type FillReply, type FillRequest } from '../../shared/contract/fill-protocol.ts';
import type { PingRequest } from '../../shared/contract/fill-ping-knock.ts';
import { MAX_ENGINE_LINE_BYTES } from '../../shared/contract/limits.ts';
import { errorText } from '../../shared/base/errors.ts';
import { dropConnection, openConnection, type Connection } from './engine-connection.ts';
import { engineProof, EngineTimeout, EngineUnavailable } from './engine-errors.ts';
import { watchKnocks } from './knocks.ts';

/** How often the socket path is stat'ed for a knock when the caller does not say. */
export const DEFAULT_KNOCK_POLL_MS = 150;
/** How long a request may go unanswered before it is given up (DESIGN §9, --engine-timeout). */
export const DEFAULT_ENGINE_TIMEOUT_MS = 30_000;

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
  /** Called on a knock line for one module (DESIGN §14: a file of it changed on disk); an engine client that reads none never calls it. */
  onModuleKnock?(fn: (module: string) => void): void;
  /**
   * Asks whether the engine is there (DESIGN §14 `ping`) on the fill connection, made when there is
   * none: `up` on any reply, `down` with no socket or no reply within the timeout, undefined when the
   * client dropped the connection itself meanwhile. An engine client that cannot ping has none.
   */
  ping?(): Promise<EngineProof>;
  /**
   * Hears each fill as it is sent (`sent`: its outcome will say how the engine is) and what each
   * fill's and ping's outcome proves of the engine (`up`, `down`); an engine client without it says nothing.
   */
  onProof?(fn: (proof: 'up' | 'down' | 'sent') => void): void;
  /** Stops watching, drops the connection and rejects every request in flight. */
  close(): void;
};

/** What one exchange with the engine proved: up, down, or nothing. */
export type EngineProof = 'up' | 'down' | undefined;

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
  const moduleKnockHandlers: ((module: string) => void)[] = [];
  link.onModuleKnock = (module) => {
    for (const fn of moduleKnockHandlers) {
      try {
        fn(module);
      } catch (err) {
        log.error(`engine ${socketPath}: knock handler of module ${module} failed: ${errorText(err)}`);
      }
    }
  };
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
  const proofHandlers: ((proof: 'up' | 'down' | 'sent') => void)[] = [];
  const proved = <P extends EngineProof | 'sent'>(proof: P): P => {
    if (proof) for (const fn of proofHandlers) fn(proof);
    return proof;
  };
  return {
    fill(req) {
      proved('sent');
      return link.fill(req).then(
        (reply) => (proved('up'), reply),
        (err: unknown) => {
          proved(engineProof(err));
          throw err;
        },
      );
    },
    ping: () =>
      link.ping().then(
        () => proved('up'),
        (err: unknown) => proved(engineProof(err)),
      ),
    onProof: (fn) => {
      proofHandlers.push(fn);
    },
    onKnock: (fn) => {
      knockHandlers.push(fn);
    },
    onModuleKnock: (fn) => {
      moduleKnockHandlers.push(fn);
    },
    close: () => {
      stopWatching();
      link.close();
    },
  };
}

/**
 * Writes a request line. The lines written in one turn of the event loop go out in one write (the
 * socket corked until the turn's ticks are done): a cold start's fills, 32 at a time, wake the
 * engine and pay a system call once per turn, not once a module; a lone change's line waits no I/O.
 */
function writeLine(conn: Connection, line: string): void {
  const { socket } = conn;
  if (socket.writableCorked === 0) {
    socket.cork();
    process.nextTick(() => socket.uncork());
  }
  socket.write(line);
}

/** The one connection at a time to the engine, made on demand and given up whenever it breaks. */
class EngineLink {
  #current: Connection | undefined;
  #nextId = 1;
  #closed = false;
  /** A ping went unanswered and was said; the next unanswered one is not said again until one is answered. */
  #pingUnanswered = false;
  /** Hears each knock line a connection reads. */
  onModuleKnock: (module: string) => void = () => {};

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
      writeLine(conn, JSON.stringify({ ...req, id, op: FILL_OP }) + '\n');
    });
  }

  /** Sends a ping on the current connection (made when there is none); resolves on its reply, rejects as a fill does. */
  ping(): Promise<void> {
    if (this.#closed) return Promise.reject(new EngineUnavailable('engine client closed'));
    const conn = this.#connection();
    const id = this.#nextId++;
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => this.#pingTimedOut(conn, id), this.timeoutMs);
      const answered = () => {
        this.#pingUnanswered = false;
        resolve();
      };
      conn.pings.set(id, { resolve: answered, reject, timer });
      writeLine(conn, JSON.stringify({ id, op: PING_OP } satisfies PingRequest) + '\n');
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
    const conn = openConnection(
      this.socketPath,
      this.log,
      this.maxLineBytes,
      (err) => this.#drop(conn, err),
      (module) => this.onModuleKnock(module),
    );
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

  // An engine that answers no ping is stuck as one that answers no fill: the connection goes (DESIGN §9).
  #pingTimedOut(conn: Connection, id: number): void {
    const waiter = conn.pings.get(id);
    if (!waiter) return;
    conn.pings.delete(id);
    waiter.reject(new EngineTimeout(this.socketPath, this.timeoutMs, '', true));
    // A fill in flight on the connection keeps it: its own timeout gives it up with the fill's reason.
    const fills = conn.pending.size > 0;
    // A hung engine is pinged every alive period: said once until it answers one again.
    if (!this.#pingUnanswered)
      this.log.warn(`engine ${this.socketPath}: no answer to a ping within ${this.timeoutMs} ms${fills ? '' : '; dropping the connection'}`);
    this.#pingUnanswered = true;
    if (!fills) this.#drop(conn, new EngineUnavailable(`engine ${this.socketPath}: connection dropped after a ping went unanswered for ${this.timeoutMs} ms`));
  }

  #drop(conn: Connection, err: Error): void {
    if (this.#current === conn) this.#current = undefined;
    dropConnection(conn, err);
  }
}
