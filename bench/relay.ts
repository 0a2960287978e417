// The topology floor of bench/latency.ts's change row: the same hops as a change through the mesh,
// with none of the mesh's work. Two processes, as a node runs two:
//
//   node --import tsx bench/relay.ts engine SOCKET DIR   a bare engine: each line read on SOCKET is a
//        value, written to DIR/a.conf as the reference engine writes a file (temp file, fsync, rename,
//        directory fsync), then `written <value>` said on stderr and `ok` answered
//   node --import tsx bench/relay.ts watch URL BUCKET KEY SOCKET   a bare client: a plain KV watcher
//        of KEY (the floor's own watcher) whose every value is sent as one line on SOCKET
//   node --import tsx bench/relay.ts fill-engine SOCKET   a bare engine speaking the fill socket's
//        protocol (DESIGN §9): each request's files written where they name, the same way, their
//        directories synced once, `written <value>` said on stderr, every file answered `written`;
//        the client before it, the same hops with the mesh's client alone in them
//
// What a change costs through these two beside the floor is what any client and engine of two
// processes pays on the machine (two more wake-ups, a socket hop, a file's write and a pipe to the
// bench); what the mesh costs above this row is its own work.
import { closeSync, fsyncSync, mkdirSync, openSync, renameSync, writeSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { connectBus } from '../src/shared/bus/bus.ts';
import { watchKv } from '../src/shared/bus/watch/watch.ts';

let temps = 0;

/** Writes `content` to `path` as the reference engine writes a file: a temp file, fsync, rename (the directory's sync is the caller's). */
function writeFile(path: string, content: string): void {
  const temp = join(dirname(path), `.relay.${temps++}.tmp`);
  const fd = openSync(temp, 'wx', 0o600);
  writeSync(fd, content);
  fsyncSync(fd);
  closeSync(fd);
  renameSync(temp, path);
}

function syncDir(dir: string): void {
  const dirFd = openSync(dir, 'r');
  fsyncSync(dirFd);
  closeSync(dirFd);
}

/** Serves `socket`, handing each line to `answer` and writing back what it returns. */
function serveLines(socket: string, answer: (line: string) => string): void {
  createServer((conn) => {
    let buf = '';
    conn.setEncoding('utf8').on('data', (d: string) => {
      buf += d;
      for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        conn.write(answer(line));
      }
    });
  }).listen(socket);
}

function engine(socket: string, dir: string): void {
  serveLines(socket, (value) => {
    writeFile(join(dir, 'a.conf'), `# relay a\nvalue ${value}\n`);
    syncDir(dir);
    process.stderr.write(`written ${value}\n`);
    return 'ok\n';
  });
}

/** A fill request as the bare engine reads it. */
type FillLine = { id: number; op: string; files?: { path: string; content: unknown }[] };

function fillEngine(socket: string): void {
  serveLines(socket, (line) => {
    const req = JSON.parse(line) as FillLine;
    const files = req.files ?? [];
    const dirs = new Set<string>();
    for (const f of files) {
      if (typeof f.content !== 'string') continue;
      mkdirSync(dirname(f.path), { recursive: true });
      writeFile(f.path, f.content);
      dirs.add(dirname(f.path));
    }
    for (const dir of dirs) syncDir(dir);
    for (const f of files) if (typeof f.content === 'string') process.stderr.write(`written ${/^value (.*)$/m.exec(f.content)?.[1] ?? ''}\n`);
    const answered = req.op === 'fill' ? { id: req.id, ok: true, files: files.map((f) => ({ path: f.path, action: 'written' })) } : { id: req.id, ok: true };
    return `${JSON.stringify(answered)}\n`;
  });
}

async function watch(url: string, bucket: string, key: string, socket: string): Promise<void> {
  const conn = createConnection(socket);
  conn.on('data', () => {});
  const nc = await connectBus({ servers: [url], name: 'bench-relay' });
  const watched = await watchKv(nc, bucket, key, (e) => {
    if (e.value) conn.write(`${new TextDecoder().decode(e.value)}\n`);
  });
  await watched.caughtUp;
  process.stdout.write('watching\n');
  process.once('SIGTERM', () => {
    watched.stop();
    void nc.close().then(() => process.exit(0));
  });
}

const [role, ...args] = process.argv.slice(2);
if (role === 'engine') engine(args[0]!, args[1]!);
else if (role === 'fill-engine') fillEngine(args[0]!);
else if (role === 'watch') await watch(args[0]!, args[1]!, args[2]!, args[3]!);
else throw new Error(`bench/relay.ts: role "${role}" is none of engine, fill-engine, watch`);
