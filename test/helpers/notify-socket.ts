// A stand-in for systemd's notification socket: a unix datagram socket (a path, or abstract when the
// name starts with @) held by python3, since node has no AF_UNIX datagram sockets. Each datagram is
// kept with the moment it arrived, and what `mark` returned at that moment.
import { spawn, type ChildProcess } from 'node:child_process';
import { waitFor } from './wait.ts';

/** One datagram: its text, and what the test's `mark` said when it arrived. */
export type Notification<M> = { text: string; mark: M };

/** A listening notification socket. */
export type NotifySocket<M> = {
  /** What NOTIFY_SOCKET is set to: the path, or `@name`. */
  address: string;
  /** Every datagram so far, BARRIER=1 (systemd-notify's handshake) left out. */
  received(): Notification<M>[];
  /** Resolves with the first datagram holding the line `assignment`; rejects after `ms`. */
  waitFor(assignment: string, ms?: number): Promise<Notification<M>>;
  /** Stops the listener. */
  close(): Promise<void>;
};

// Prints each datagram as a JSON string on a line of its own. recv() without room for ancillary data
// makes the kernel close the fd systemd-notify's barrier sends, which is how systemd answers it.
const LISTENER = `
import json, socket, sys
address = sys.argv[1]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind('\\0' + address[1:] if address.startswith('@') else address)
print('listening', flush=True)
while True:
    print(json.dumps(s.recv(65536).decode()), flush=True)
`;

/** Listens on `address`; `mark` is called as each datagram arrives (e.g. to snapshot a process's log). */
export async function listenForNotifications<M>(address: string, mark: () => M): Promise<NotifySocket<M>> {
  const child: ChildProcess = spawn('python3', ['-u', '-c', LISTENER, address], { stdio: ['ignore', 'pipe', 'pipe'] });
  const got: Notification<M>[] = [];
  let listening = false;
  let err = '';
  let rest = '';
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    const lines = (rest + d).split('\n');
    rest = lines.pop() ?? '';
    for (const line of lines) {
      if (line === 'listening') listening = true;
      else if (line !== '') got.push({ text: JSON.parse(line) as string, mark: mark() });
    }
  });
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  await waitFor(`python3 listening on ${address}`, () => listening || child.exitCode !== null, 5000);
  if (!listening) throw new Error(`python3 could not listen on ${address}: ${err}`);
  const received = () => got.filter((n) => n.text !== 'BARRIER=1');
  return {
    address,
    received,
    waitFor: (assignment, ms = 15_000) => waitFor(`${assignment} on ${address}`, () => received().find((n) => n.text.split('\n').includes(assignment)), ms),
    async close() {
      if (child.exitCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}
