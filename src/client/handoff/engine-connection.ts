// One connection to the engine's socket (DESIGN §9): requests in flight matched to their replies by id
// and checked against what was sent; whatever breaks it rejects them all.
import { createConnection, type Socket } from 'node:net';
import type { Logger } from '../../shared/cli/log.ts';
import { judgeReplyLine, type FillReply } from '../../shared/contract/fill-protocol.ts';
import { knockedModule, PingReplySchema } from '../../shared/contract/fill-ping-knock.ts';
import * as v from 'valibot';
import { LineReader } from '../../shared/base/ndjson.ts';
import { EngineProtocolError, EngineUnavailable } from './engine-errors.ts';

/** A request in flight on a connection. */
export type Pending = {
  /** The paths sent: the reply may name only these. */
  paths: string[];
  /** When it was sent (ms since the epoch), to compare with a knock's mtime. */
  sentAt: number;
  resolve: (reply: FillReply) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
};

/** A ping in flight on a connection (DESIGN §14): any reply with its id settles it. */
export type PendingPing = {
  resolve: () => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
};

/** One connection to the engine and what is in flight on it. */
export type Connection = {
  socket: Socket;
  pending: Map<number, Pending>;
  /** Pings in flight, apart from the fills: a ping's reply names no file, so it is never judged as a fill's. */
  pings: Map<number, PendingPing>;
  reader: LineReader;
  /** Set once the connection is given up; a dropped connection takes no request. */
  dropped: boolean;
  /** Lines ignored (out of shape, or for no request in flight): the first is said, the rest counted. */
  ignored: number;
};

/** Connects; replies settle the connection's own requests, and anything that breaks it calls `onBroken`. */
export function openConnection(
  socketPath: string,
  log: Logger,
  maxLineBytes: number,
  onBroken: (err: Error) => void,
  onModuleKnock: (module: string) => void = () => {},
): Connection {
  const socket = createConnection(socketPath);
  let connected = false;
  let failure: Error | undefined;
  const conn: Connection = {
    socket,
    pending: new Map(),
    pings: new Map(),
    dropped: false,
    ignored: 0,
    reader: new LineReader(maxLineBytes, {
      onLine: (line) => {
        if (answersPing(conn, line)) return;
        const knocked = knockOf(line);
        if (knocked === undefined) return settle(conn, line, maxLineBytes, socketPath, log, onBroken);
        log.info(`engine ${socketPath}: knock for module ${knocked}`);
        onModuleKnock(knocked);
      },
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
    onBroken(new EngineUnavailable(`engine ${socketPath} ${why}`, { cause: failure, engineGone: true }));
  });
  return conn;
}

/** Gives a connection up: stops reading, rejects every request in flight with `err`, closes the socket. */
export function dropConnection(conn: Connection, err: Error): void {
  if (conn.dropped) return;
  conn.dropped = true;
  conn.reader.stop();
  conn.socket.destroy();
  for (const p of [...conn.pending.values(), ...conn.pings.values()]) {
    clearTimeout(p.timer);
    p.reject(err);
  }
  conn.pending.clear();
  conn.pings.clear();
}

/** Settles the ping a line answers, if it answers one in flight: `{id, ok:true}`, or an error reply with its id (an engine that knows no ping is up too). */
function answersPing(conn: Connection, line: Buffer): boolean {
  if (conn.pings.size === 0 || line.length > MAX_KNOCK_LINE_BYTES) return false;
  let raw: unknown;
  try {
    raw = JSON.parse(line.toString('utf8'));
  } catch {
    return false;
  }
  const reply = v.safeParse(PingReplySchema, raw);
  const id = reply.success ? reply.output.id : null;
  const ping = id === null ? undefined : conn.pings.get(id);
  if (id === null || !ping) return false;
  conn.pings.delete(id);
  clearTimeout(ping.timer);
  ping.resolve();
  return true;
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

/** The longest line read as a possible knock line: a module's name is a token (255 bytes). */
const MAX_KNOCK_LINE_BYTES = 1024;

/** The module a line knocks for (DESIGN §14's one unasked line), or undefined: replies are not parsed twice. */
function knockOf(line: Buffer): string | undefined {
  if (line.length > MAX_KNOCK_LINE_BYTES || !line.includes('"knock"')) return undefined;
  try {
    return knockedModule(JSON.parse(line.toString('utf8')));
  } catch {
    return undefined;
  }
}

function isBlank(line: Buffer): boolean {
  for (const byte of line) if (byte !== 0x20 && byte !== 0x09 && byte !== 0x0d) return false;
  return true;
}
