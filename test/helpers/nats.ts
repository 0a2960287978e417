// Starts a real nats-server with JetStream on 127.0.0.1 and a free port in a temp dir, and stops it.
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { collectStderr, hasExited, spawnQuiet, stopProcess, type Spawn } from './spawn.ts';
import { tempDir } from './temp.ts';

/** A running nats-server. */
export type NatsServer = {
  /** `nats://127.0.0.1:<port>`. */
  url: string;
  port: number;
  /** The running process's id (undefined while stopped). */
  pid(): number | undefined;
  /** The server's temp dir (JetStream store inside). */
  dir: string;
  /** Stops it (SIGTERM, then SIGKILL) and keeps its store for a restart. */
  stop(): Promise<void>;
  /** Kills it with SIGKILL (no shutdown, nothing flushed), waits for its exit and keeps its store for a restart. */
  kill(): Promise<void>;
  /** Starts it again on the same port and store. */
  restart(): Promise<void>;
  /** Stops it and removes its dir. */
  cleanup(): Promise<void>;
};

/** How startNats runs the server beyond its config text. */
export type StartNatsOptions = {
  /** Starts the process (default: quietly, stderr kept for a failure); the demo hands in its own. */
  spawn?: Spawn;
  /** The server's dir, created when missing (default: a fresh temp dir). */
  dir?: string;
  /**
   * Writes the whole configuration file instead of the default one around `config` (a mesh's
   * generated bus-config): it must say `listen` and the JetStream `store_dir` it is given.
   */
  whole?: (where: { listen: string; storeDir: string }) => string;
  /** The client port (default: a free one); a cluster picks its own (nats-cluster.ts says why). */
  port?: number;
};

/** A free TCP port on 127.0.0.1. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

async function waitForPort(port: number, ms: number): Promise<void> {
  const { connect } = await import('node:net');
  const until = Date.now() + ms;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const sock = connect(port, '127.0.0.1');
      sock.once('connect', () => {
        sock.destroy();
        resolve(true);
      });
      sock.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > until) throw new Error(`nats-server did not listen on ${port} within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Starts nats-server with JetStream; `config` is extra config text appended to the file (unless `opts.whole` writes it all). */
export async function startNats(config = '', opts: StartNatsOptions = {}): Promise<NatsServer> {
  const dir = opts.dir ?? tempDir('mesh-nats-');
  mkdirSync(dir, { recursive: true });
  const port = opts.port ?? (await freePort());
  const conf = join(dir, 'nats.conf');
  const where = { listen: `127.0.0.1:${port}`, storeDir: join(dir, 'js') };
  writeFileSync(conf, opts.whole?.(where) ?? `listen: "${where.listen}"\nmax_payload: 1048576\njetstream { store_dir: "${where.storeDir}" }\n${config}\n`);
  const spawn = opts.spawn ?? spawnQuiet;
  let child: ChildProcess | undefined;
  const start = async () => {
    child = spawn('nats-server', 'nats-server', ['-c', conf]);
    const stderr = collectStderr(child);
    try {
      await waitForPort(port, 10_000);
    } catch (e) {
      throw new Error(`${(e as Error).message}: ${stderr().slice(-500)}`);
    }
  };
  const stop = async () => {
    const c = child;
    child = undefined;
    if (c) await stopProcess(c);
  };
  const kill = async () => {
    // Dead before stop() sends its SIGTERM: stop() then only waits for the exit.
    if (child?.pid !== undefined && !hasExited(child)) child.kill('SIGKILL');
    await stop();
  };
  await start();
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    pid: () => child?.pid,
    dir,
    stop,
    kill,
    restart: start,
    async cleanup() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
