// The bus side of a mesh: the seat (its bundle as a process, or in this process), the input buckets the
// catalogue, mesh-config and the controller write, and the wait until the seat's buckets are there.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { KV } from '@nats-io/kv';
import { jetstream } from '@nats-io/jetstream';
import { Objm, type ObjectStore } from '@nats-io/obj';
import type { NatsConnection } from '@nats-io/transport-node';
import { ensureKv, openKv } from '../../src/shared/bus/bus.ts';
import { APPLIED, ASSIGNMENTS, CONFIG, DEFAULT_ARCHIVES, MODULES, NEEDS, PLANS } from '../../src/shared/contract/buckets.ts';
import { memoryLogger } from '../../src/shared/cli/log.ts';
import { startSeat } from '../../src/server/seat/seat.ts';
import { ROOT } from './bundle.ts';
import { collectStderr, spawnQuiet, stopProcess, type Spawn } from './spawn.ts';
import { waitFor } from './wait.ts';

/** How long a mesh waits for the seat's buckets and archive store. */
export const SEAT_START_MS = 15_000;

/** A user and password on the bus. */
export type Login = { user: string; pass: string } | { nkey: string };

/** The bundle flags of a login. */
export function loginArgs(login: Login | undefined): string[] {
  if (!login) return [];
  return 'nkey' in login ? ['--nkey', login.nkey] : ['--user', login.user, '--password', login.pass];
}

/** Where the seat runs: its bundle `dist/server.js` as a child process, or startSeat in this process. */
export type SeatKind = 'process' | 'in-process';

/** A running seat, whichever kind. */
export type RunningSeat = {
  /** The child's pid (a process seat only). */
  pid?: number;
  /** What the seat has said so far (its stderr, or its log lines). */
  said(): string;
  /** Stops it: SIGTERM for a process, stop() in process. */
  stop(): Promise<void>;
};

/** The buckets the catalogue, mesh-config and the controller write. */
export type InputBuckets = { assignments: KV; modules: KV; config: KV };

/** What the seat creates that a test reads, plus the archive store the catalogue writes. */
export type SeatBuckets = { plans: KV; applied: KV; needs: KV; archives: ObjectStore };

/** Starts the seat bundle against `url` (every server, comma-separated; as `login` when given) through `spawn`, `args` appended. */
export function startSeatProcess(url: string, opts: { spawn?: Spawn; login?: Login; args?: string[] } = {}): RunningSeat {
  const bundle = join(ROOT, 'dist', 'server.js');
  if (!existsSync(bundle)) throw new Error('dist/server.js missing: run `node build.mjs` first');
  const login = loginArgs(opts.login);
  const child = (opts.spawn ?? spawnQuiet)('seat', process.execPath, [bundle, '--nats', url, ...login, ...(opts.args ?? [])]);
  const said = collectStderr(child);
  return { ...(child.pid !== undefined ? { pid: child.pid } : {}), said, stop: () => stopProcess(child) };
}

/** Starts the seat of `kind`: a process reaches the bus at `url`, an in-process one uses `nc`. */
export async function startMeshSeat(kind: SeatKind, opts: { url: string; nc: NatsConnection; login?: Login; spawn?: Spawn }): Promise<RunningSeat> {
  if (kind === 'process') return startSeatProcess(opts.url, opts);
  const log = memoryLogger();
  const seat = await startSeat({ nc: opts.nc, log, archives: DEFAULT_ARCHIVES, replicas: 1 });
  return { said: () => log.lines.join('\n'), stop: () => seat.stop() };
}

/**
 * Creates the input buckets when missing, hardened as the reference creates every shared bucket, each
 * keeping `replicas` copies (3 on a three-server cluster), and opens them.
 */
export async function createInputBuckets(nc: NatsConnection, replicas = 1): Promise<InputBuckets> {
  const [assignments, modules, config] = await Promise.all([ASSIGNMENTS, MODULES, CONFIG].map((b) => ensureKv(nc, b, replicas)));
  return { assignments: assignments!, modules: modules!, config: config! };
}

/** Waits until the seat has made its buckets and the archive store, and opens them; the error adds what the seat said. */
export async function waitForSeat(nc: NatsConnection, seat: RunningSeat, ms = SEAT_START_MS): Promise<SeatBuckets> {
  const archives = await waitFor(
    'the seat’s buckets and archive store',
    async () => {
      try {
        await openKv(nc, APPLIED).then((b) => b.status());
        const store = await new Objm(jetstream(nc)).open(DEFAULT_ARCHIVES);
        await store.status();
        return store;
      } catch {
        return undefined;
      }
    },
    ms,
  ).catch((err: Error) => {
    throw new Error(`${err.message}; the seat said: ${seat.said().slice(-2000)}`);
  });
  const [plans, applied, needs] = await Promise.all([PLANS, APPLIED, NEEDS].map((b) => openKv(nc, b)));
  return { plans: plans!, applied: applied!, needs: needs!, archives };
}
