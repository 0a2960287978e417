// A TCP relay on loopback that a test can cut and restore: the WAN link between a site's leaf server
// and the hub, severed (every connection through it reset, new ones refused) without stopping either.
import { createServer, connect, type Socket } from 'node:net';
import { freePort } from './nats.ts';

/** A running relay from its own port to `127.0.0.1:<target>`. */
export type TcpProxy = {
  /** The port it listens on. */
  port: number;
  /** Resets every connection through it and refuses new ones until restore(). */
  cut(): void;
  /** Lets connections through again. */
  restore(): void;
  /** How many connections it has let through, over its life. */
  accepted(): number;
  /** Stops listening and resets every connection. */
  close(): Promise<void>;
};

/** Starts a relay to `target` on a free loopback port. */
export async function startTcpProxy(target: number): Promise<TcpProxy> {
  const port = await freePort();
  const open = new Set<Socket>();
  let isCut = false;
  let accepted = 0;
  const server = createServer((inbound) => {
    if (isCut) return void inbound.destroy();
    accepted += 1;
    const outbound = connect(target, '127.0.0.1');
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
    restore() {
      isCut = false;
    },
    accepted: () => accepted,
    close: () =>
      new Promise<void>((resolve) => {
        resetAll();
        server.close(() => resolve());
      }),
  };
}
