// What server.js runs for each thing it can be asked (DESIGN §10): a table from the command to its
// run function, each wired to the process's output and connected with the login it needs. Every
// line a command prints may quote bus text: printed as safe text (DESIGN §3).
import type { NatsConnection } from '@nats-io/transport-node';
import type { BusOptions } from '../shared/bus/bus.ts';
import { connectCommandOnce } from '../shared/bus/first-connect.ts';
import { INBOX_PREFIXES } from '../shared/bus/inbox.ts';
import { printLine } from '../shared/cli/entry.ts';
import { VERSION } from '../shared/cli/version.ts';
import { runAssign, runUnassign } from './commands/assign/command.ts';
import { runBackup, runRestore } from './commands/backup/command.ts';
import { runBusConfig } from './commands/bus-config/command.ts';
import { USERS } from './commands/bus-config/users.ts';
import { prepareConfig, readStreamWithin, runConfig, type ConfigIo } from './commands/config/command.ts';
import { runInit } from './commands/init/command.ts';
import { runPublish } from './commands/publish/command.ts';
import { runQuery } from './commands/query/command.ts';
import { runQueryDrift } from './commands/query/drift.ts';
import { runRollout } from './commands/rollout/command.ts';
import { runStatus } from './commands/status/command.ts';
import { runTrace } from './commands/trace/command.ts';
import { runWhy } from './commands/why/command.ts';
import type { ConfigOptions, OptionsOf, ServerCommand, ServerOptions } from './options.ts';
import { runSeat } from './seat/run.ts';

const out = (line: string) => printLine(process.stdout, line);
const err = (line: string) => printLine(process.stderr, `mesh-provisioner: ${line}`);

/** What each command runs: its options in, its exit code out. */
type Runs = { [C in ServerCommand]: (opts: OptionsOf<C>) => Promise<number> | number };

const RUNS: Runs = {
  help: (opts) => (void process.stdout.write(opts.text + '\n'), 0),
  version: () => (void process.stdout.write(`mesh-provisioner ${VERSION}\n`), 0),
  serve: runSeat,
  'bus-config': (opts) => runBusConfig(opts, (text) => process.stdout.write(text), err),
  init: ({ command: _c, bus, ...req }) => withConnection(asAdmin(bus), USERS.admin, (nc) => runInit(nc, req, out)),
  publish: ({ command: _c, bus, ...req }) => runPublish(req, () => connectCommand(asAdmin(bus)), out, err),
  assign: (opts) => withConnection(asAdmin(opts.bus), USERS.admin, (nc) => runAssign(nc, opts.assignment, opts.replicas, out, err)),
  unassign: (opts) => withConnection(asAdmin(opts.bus), USERS.admin, (nc) => runUnassign(nc, opts, opts.replicas, out, err)),
  config: runConfigCommand,
  // Only the admin login may ask the seat to resume or abort (DESIGN §12); it reads the bucket too.
  rollout: (opts) => withConnection(asAdmin(opts.bus), USERS.admin, (nc) => runRollout(nc, opts, out, err)),
  // Snapshots and restores are JetStream's admin calls: the admin login's alone (DESIGN §11).
  backup: (opts) => runBackup(opts, () => connectCommand(asAdmin(opts.bus)), out, err),
  restore: (opts) => runRestore(opts, () => connectCommand(asAdmin(opts.bus)), out, err),
  // The seat's user may subscribe only its own inboxes (DESIGN §11), for serving and for a query alike.
  query: ({ command: _c, bus, ...args }) =>
    withConnection(asSeat(bus), SEAT_OR_ADMIN, (nc) => (args.what === 'drift' ? runQueryDrift : runQuery)(nc, args, out, err)),
  status: (opts) => withConnection(asSeat(opts.bus), SEAT_OR_ADMIN, (nc) => runStatus(nc, opts, out, err)),
  // They read mesh-config's and every provider's bucket, which only the admin login reads whole (DESIGN §11).
  why: ({ command: _c, bus, ...args }) => withConnection(asAdmin(bus), USERS.admin, (nc) => runWhy(nc, args, out, err)),
  trace: ({ command: _c, bus, ...args }) => withConnection(asAdmin(bus), USERS.admin, (nc) => runTrace(nc, args, out, err)),
};

/** Runs what server.js was asked; resolves with the exit code. */
export function runCommand(opts: ServerOptions): Promise<number> | number {
  // Each key of RUNS takes the options of its own command, which TypeScript cannot follow through the union.
  return (RUNS[opts.command] as (opts: ServerOptions) => Promise<number> | number)(opts);
}

/** The logins `query` and `status` may run with, as a refusal names them. */
const SEAT_OR_ADMIN = `${USERS.seat} or ${USERS.admin}`;

/** The bus as the admin login reaches it: with admin's inbox prefix. */
function asAdmin(bus: BusOptions): BusOptions {
  return { ...bus, inboxPrefix: INBOX_PREFIXES.admin };
}

/** The bus as the seat's login reaches it: with the seat's inbox prefix. */
function asSeat(bus: BusOptions): BusOptions {
  return { ...bus, inboxPrefix: INBOX_PREFIXES.seat };
}

/** Connects a command (one try) as `expected` (the login it needs, as a refusal names it); a bus not reached or a login refused is its one line. */
function connectCommand(bus: BusOptions, expected: string = USERS.admin): Promise<NatsConnection> {
  return connectCommandOnce(bus, expected, err);
}

/** Runs `use` on a connection made for it, closed after. */
async function withConnection(bus: BusOptions, expected: string, use: (nc: NatsConnection) => Promise<number>): Promise<number> {
  const nc = await connectCommand(bus, expected);
  try {
    return await use(nc);
  } finally {
    await nc.close();
  }
}

/** `config` (DESIGN §13): what it reads made ready first (exit 2 when wrong, nothing written), then run as the admin login. */
async function runConfigCommand(opts: ConfigOptions): Promise<number> {
  const io: ConfigIo = {
    out,
    err,
    write: (bytes) => void process.stdout.write(bytes),
    terminal: process.stdout.isTTY === true,
    readStdin: (maxBytes) => readStreamWithin(process.stdin, maxBytes),
  };
  const ready = await prepareConfig(opts.args, io);
  if (!ready.ok) return (err(ready.reason), 2);
  return withConnection(asAdmin(opts.bus), USERS.admin, (nc) => runConfig(nc, ready.value, opts.replicas, io));
}
