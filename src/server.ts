// mesh-provisioner, the seat: flags, wiring and signals. Everything else lives in src/server/.
import type { NatsConnection } from '@nats-io/transport-node';
import { connectBus, drainBus, watchConnection, type BusOptions } from './shared/bus/bus.ts';
import { connectCommandOnce, connectWhenReachable } from './shared/bus/first-connect.ts';
import { permissionRefusal, whichLogin } from './shared/bus/login.ts';
import { USERS } from './server/commands/bus-config/users.ts';
import { printLine, runMain, untilSignalled } from './shared/cli/entry.ts';
import { INBOX_PREFIXES } from './shared/bus/inbox.ts';
import { createLogger, underSystemd } from './shared/cli/log.ts';
import { notifySystemd } from './shared/cli/notify.ts';
import { VERSION } from './shared/cli/version.ts';
import { runBusConfig } from './server/commands/bus-config/command.ts';
import { runInit } from './server/commands/init/command.ts';
import { runPublish } from './server/commands/publish/command.ts';
import { parseServerOptions } from './server/command-line.ts';
import { runQuery } from './server/commands/query/command.ts';
import { isTooManyReplicas, tooManyReplicasLine } from './shared/bus/replicas-hint.ts';
import { startSeat } from './server/seat/seat.ts';
import { anotherSeatAnswers } from './server/seat/other-seat.ts';
import { PROVISIONING_VERB } from './shared/contract/subjects.ts';
import { errorText } from './shared/base/errors.ts';
import { runStatus } from './server/commands/status/command.ts';
import { runAssign, runUnassign } from './server/commands/assign/command.ts';
import { prepareConfig, readStreamWithin, runConfig, type ConfigIo } from './server/commands/config/command.ts';
import type { InputCommandOptions } from './server/options.ts';
import { runRollout } from './server/commands/rollout/command.ts';
import { runBackup, runRestore } from './server/commands/backup/command.ts';

// Every line a command prints may quote bus text: printed as safe text (DESIGN §3).
const out = (line: string) => printLine(process.stdout, line);
const err = (line: string) => printLine(process.stderr, `mesh-provisioner: ${line}`);

async function main(): Promise<number> {
  const parsed = parseServerOptions(process.argv.slice(2), process.env);
  if (!parsed.ok) return (err(parsed.reason), 2);
  const opts = parsed.value;
  if (opts.command === 'help') return (void process.stdout.write(opts.text + '\n'), 0);
  if (opts.command === 'version') return (void process.stdout.write(`mesh-provisioner ${VERSION}\n`), 0);
  if (opts.command === 'bus-config') return runBusConfig(opts, (text) => process.stdout.write(text), err);
  if (opts.command === 'init') {
    const nc = await connectCommand({ ...opts.bus, inboxPrefix: INBOX_PREFIXES.admin });
    try {
      const { command: _c, bus: _b, ...req } = opts;
      return await runInit(nc, req, out);
    } finally {
      await nc.close();
    }
  }
  if (opts.command === 'publish') {
    const { command: _c, bus: _b, ...req } = opts;
    const connect = () => connectCommand({ ...opts.bus, inboxPrefix: INBOX_PREFIXES.admin });
    return runPublish(req, connect, out, err);
  }
  if (opts.command === 'assign' || opts.command === 'unassign' || opts.command === 'config') return runInputCommand(opts);
  if (opts.command === 'rollout') {
    // Only the admin login may ask the seat to resume or abort (DESIGN §12); it reads the bucket too.
    const nc = await connectCommand({ ...opts.bus, inboxPrefix: INBOX_PREFIXES.admin });
    try {
      return await runRollout(nc, opts, out, err);
    } finally {
      await nc.close();
    }
  }
  if (opts.command === 'backup' || opts.command === 'restore') {
    // Snapshots and restores are JetStream's admin calls: the admin login's alone (DESIGN §11).
    const connect = () => connectCommand({ ...opts.bus, inboxPrefix: INBOX_PREFIXES.admin });
    return opts.command === 'backup' ? runBackup(opts, connect, out, err) : runRestore(opts, connect, out, err);
  }
  // The seat's user may subscribe only its own inboxes (DESIGN §11), for serving and for a query alike.
  const bus = { ...opts.bus, inboxPrefix: INBOX_PREFIXES.seat };

  if (opts.command === 'query' || opts.command === 'status') {
    const nc = await connectCommand(bus, `${USERS.seat} or ${USERS.admin}`);
    try {
      if (opts.command === 'status') return await runStatus(nc, opts, out, err);
      const { command: _c, bus: _b, ...args } = opts;
      return await runQuery(nc, args, out, err);
    } finally {
      await nc.close();
    }
  }

  const log = createLogger({ prefix: underSystemd(), least: opts.debug ? 'debug' : 'info' });
  const signalled = untilSignalled();
  log.info(`mesh-provisioner ${VERSION} connecting to ${opts.bus.servers.join(',')}`);
  const login = whichLogin(bus, USERS.seat);
  const nc = await connectWhenReachable({ bus, log, signalled, login });
  if (!nc) return 0;
  // Another login's seed: said at error and exit 1 (journalctl -p err, a failed unit), not a wait, as the
  // client does; JetStream's account info is what every bucket call of the seat asks first. docs/decisions.md.
  const refusal = await permissionRefusal(nc, '$JS.API.INFO');
  if (refusal) {
    log.error(`the bus refuses the seat's requests (${refusal.message}) for ${login}`);
    await nc.close();
    return 1;
  }
  if (await anotherSeatAnswers(nc))
    log.warn(`another seat already answers ${PROVISIONING_VERB} on this bus: run one seat per mesh (two write the same plans, and both would move a rollout)`);
  watchConnection(nc, log);
  const seat = await Promise.race([
    startSeat({
      nc,
      log,
      archives: opts.archives,
      replicas: opts.replicas,
      inboxPrefix: INBOX_PREFIXES.seat,
      ...(opts.rollout ? { rollout: opts.rollout } : {}),
    }).catch(async (err: unknown) => {
      // Said at error with what to set, not as a bare line: the number came from a flag or a unit's env file.
      if (!isTooManyReplicas(err)) throw err;
      log.error(tooManyReplicasLine(opts.replicas, opts.replicasFrom, errorText(err)));
      await nc.close();
      return 'refused' as const;
    }),
    signalled.then(() => undefined),
  ]);
  if (seat === 'refused') return 1;
  if (seat) {
    log.info('seat ready');
    notifySystemd(log, signalled);
    await signalled;
    log.info('draining');
    await seat.stop();
  }
  await drainBus(nc, log);
  log.info('stopped');
  return 0;
}

/** Connects a command (one try) as `expected` (the login it needs, as a refusal names it); a bus not reached or a login refused is its one line. */
function connectCommand(bus: BusOptions, expected: string = USERS.admin): Promise<NatsConnection> {
  return connectCommandOnce(bus, expected, err);
}

/** The input commands (DESIGN §13): what they read made ready first (exit 2 when wrong, nothing written), then run as the admin login. */
async function runInputCommand(opts: InputCommandOptions): Promise<number> {
  const io: ConfigIo = {
    out,
    err,
    write: (bytes) => void process.stdout.write(bytes),
    terminal: process.stdout.isTTY === true,
    readStdin: (maxBytes) => readStreamWithin(process.stdin, maxBytes),
  };
  const ready = opts.command === 'config' ? await prepareConfig(opts.args, io) : undefined;
  if (ready && !ready.ok) return (err(ready.reason), 2);
  const nc = await connectCommand({ ...opts.bus, inboxPrefix: INBOX_PREFIXES.admin });
  try {
    if (opts.command === 'assign') return await runAssign(nc, opts.assignment, opts.replicas, out, err);
    if (opts.command === 'unassign') return await runUnassign(nc, opts, opts.replicas, out, err);
    return await runConfig(nc, ready!.value, opts.replicas, io);
  } finally {
    await nc.close();
  }
}

runMain('mesh-provisioner', main);
