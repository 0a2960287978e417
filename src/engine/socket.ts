// The fill socket's plumbing: taking over a stale path, newline framing per connection, and the knock (a touch).
import { lstat, mkdir, unlink, utimes } from 'node:fs/promises';
import { createConnection, type Server, type Socket } from 'node:net';
import { dirname } from 'node:path';
import { LineReader } from '../shared/base/ndjson.ts';

/** A request line longer than this (in bytes) closes its connection: no module's files come near it. */
export const MAX_REQUEST_LINE_BYTES = 64 * 1024 * 1024;

/** Makes the path free for a new socket: a stale socket is removed; a live one or a non-socket is an error. */
export async function claimSocketPath(path: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  let info;
  try {
    info = await lstat(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  if (!info.isSocket()) throw new Error(`${path} exists and is not a socket`);
  if (await answers(path)) throw new Error(`${path} is in use by a running engine`);
  await unlink(path);
}

function answers(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createConnection(path);
    probe.once('connect', () => {
      probe.destroy();
      resolve(true);
    });
    probe.once('error', () => resolve(false));
  });
}

/** Touches the socket (mtime forward): a knock for every client watching it. */
export async function touchSocket(path: string): Promise<void> {
  const info = await lstat(path);
  // Forward by at least a millisecond, so two knocks in one clock tick still differ.
  const mtime = Math.max(Date.now(), info.mtimeMs + 1) / 1000;
  await utimes(path, mtime, mtime);
}

/**
 * Serves newline-delimited lines on every connection; replies go back in the order their lines came,
 * and `answer` is told which connection a line came on (a knock goes back on it, knock-lines.ts).
 * A connection is not read while one of its lines waits for its answer, so what a client sends
 * ahead waits in its own buffers and the kernel's, not here: one connection holds at most the
 * lines of one chunk being answered and one line being read, refused past `maxLineBytes`.
 */
export function serveLines(
  server: Server,
  answer: (line: string, connection: Socket) => Promise<string>,
  onError: (message: string) => void,
  maxLineBytes = MAX_REQUEST_LINE_BYTES,
): Set<Socket> {
  const open = new Set<Socket>();
  server.on('connection', (socket) => {
    open.add(socket);
    socket.on('close', () => open.delete(socket));
    socket.on('error', (err) => onError(`connection: ${err.message}`));
    let waiting = 0;
    let replies = Promise.resolve();
    const reader = new LineReader(maxLineBytes, {
      onLine: (bytes) => {
        const line = bytes.toString('utf8');
        if (line.trim() === '') return;
        const reply = answer(line, socket);
        waiting++;
        socket.pause();
        replies = replies
          .then(async () => {
            const text = await reply;
            if (!socket.destroyed) socket.write(text + '\n');
          })
          .catch((err: Error) => onError(`connection: ${err.message}`))
          .finally(() => {
            if (--waiting === 0 && !socket.destroyed) socket.resume();
          });
      },
      onTooLong: (bytes) => {
        onError(`connection: a line of ${bytes} bytes and more, past the limit of ${maxLineBytes} bytes: closing it`);
        socket.destroy();
      },
    });
    socket.on('data', (chunk: Buffer) => reader.push(chunk));
    socket.on('close', () => reader.stop());
  });
  return open;
}
