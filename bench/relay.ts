// The topology floor of bench/latency.ts's change row: the same hops as a change through the mesh,
// with none of the mesh's work. Two processes, as a node runs two:
//
//   node --import tsx bench/relay.ts engine SOCKET DIR   a bare engine: each line read on SOCKET is a
//        value, written to DIR/a.conf as the reference engine writes a file (temp file, fsync, rename,
//        directory fsync), then `written <value>` said on stderr and `ok` answered
//   node --import tsx bench/relay.ts watch URL BUCKET KEY SOCKET   a bare client: a plain KV watcher
//        of KEY (the floor's own watcher) whose every value is sent as one line on SOCKET
//
// What a change costs through these two beside the floor is what any client and engine of two
// processes pays on the machine (two more wake-ups, a socket hop, a file's write and a pipe to the
// bench); what the mesh costs above this row is its own work.
import { closeSync, fsyncSync, openSync, renameSync, writeSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { join } from 'node:path';
import { connectBus } from '../src/shared/bus/bus.ts';
import { watchKv } from '../src/shared/bus/watch/watch.ts';

function engine(socket: string, dir: string): void {
  let n = 0;
  const write = (value: string) => {
    const temp = join(dir, `.a.conf.${n++}.tmp`);
    const fd = openSync(temp, 'wx', 0o600);
    writeSync(fd, `# relay a\nvalue ${value}\n`);
    fsyncSync(fd);
    closeSync(fd);
    renameSync(temp, join(dir, 'a.conf'));
    const dirFd = openSync(dir, 'r');
    fsyncSync(dirFd);
    closeSync(dirFd);
    process.stderr.write(`written ${value}\n`);
  };
  createServer((conn) => {
    let buf = '';
    conn.setEncoding('utf8').on('data', (d: string) => {
      buf += d;
      for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
        write(buf.slice(0, nl));
        buf = buf.slice(nl + 1);
        conn.write('ok\n');
      }
    });
  }).listen(socket);
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
else if (role === 'watch') await watch(args[0]!, args[1]!, args[2]!, args[3]!);
else throw new Error(`bench/relay.ts: role "${role}" is neither engine nor watch`);
