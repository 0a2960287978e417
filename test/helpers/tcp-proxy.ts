// A TCP relay on loopback that a test can cut and restore: the WAN link between a site's leaf server
// and the hub, severed (every connection through it reset, new ones refused) without stopping either.
import { createServer, connect, type Socket } from 'node:net';
import { freePort } from './nats.ts';

/** How much of each connection's start carried() keeps. */
const CARRIED_BYTES = 64 * 1024;

/** A running relay from its own port to `127.0.0.1:<target>`. */
export type TcpProxy = {
  /** The port it listens on. */
  port: number;
  /** Resets every connection through it and refuses new ones until restore(). */
  cut(): void;
  /** Refuses new connections while those open go on, until restore(): a server that takes no new connection. */
  refuseNew(): void;
  /** Lets connections through again. */
  restore(): void;
  /** How many connections it has let through, over its life. */
  accepted(): number;
  /** The first bytes each connection sent towards the target (up to 64 KiB each), to check what crossed the link. */
  carried(): Buffer;
  /** Stops listening and resets every connection. */
  close(): Promise<void>;
};

/** Starts a relay to `target` on a free loopback port. */
export async function startTcpProxy(target: number): Promise<TcpProxy> {
  const port = await freePort();
  const open = new Set<Socket>();
  let isCut = false;
  let refusing = false;
  let accepted = 0;
  const firstBytes: Buffer[] = [];
  const server = createServer((inbound) => {
    if (isCut || refusing) return void inbound.destroy();
    accepted += 1;
    const outbound = connect(target, '127.0.0.1');
    let kept = 0;
    inbound.on('data', (d: Buffer) => {
      if (kept < CARRIED_BYTES) firstBytes.push(d.subarray(0, CARRIED_BYTES - kept));
      kept += d.length;
    });
    for (const [a, b] of [
      [inbound, outbound],
      [outbound, inbound],
    ] as const) {
      open.add(a);
      a.pipe(b);
      a.on('error', () => b.destroy());
      a.on('close', () => {
        open.delete(a);
        b.destroy();
      });
    }
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const resetAll = () => {
    for (const s of open) s.destroy();
  };
  return {
    port,
    cut() {
      isCut = true;
      resetAll();
    },
    refuseNew() {
      refusing = true;
    },
    restore() {
      isCut = false;
      refusing = false;
    },
    accepted: () => accepted,
    carried: () => Buffer.concat(firstBytes),
    close: () =>
      new Promise<void>((resolve) => {
        resetAll();
        server.close(() => resolve());
      }),
  };
}
