// The seat daemon's start (`node server.js [flags]`): connect as the seat's login until the bus is
// reached, refuse another login's seed, start the seat, and drain on SIGTERM. What the seat does is
// seat.ts; this is its wiring to the process (logs, signals, systemd).
import { drainBus, watchConnection } from '../../shared/bus/bus.ts';
import { connectWhenReachable } from '../../shared/bus/first-connect.ts';
import { INBOX_PREFIXES } from '../../shared/bus/inbox.ts';
import { permissionRefusal, whichLogin } from '../../shared/bus/login.ts';
import { isTooManyReplicas, tooManyReplicasLine } from '../../shared/bus/replicas-hint.ts';
import { errorText } from '../../shared/base/errors.ts';
import { untilSignalled } from '../../shared/cli/entry.ts';
import { createLogger, underSystemd } from '../../shared/cli/log.ts';
import { notifySystemd } from '../../shared/cli/notify.ts';
import { VERSION } from '../../shared/cli/version.ts';
import { PROVISIONING_VERB } from '../../shared/contract/subjects.ts';
import { USERS } from '../commands/bus-config/users.ts';
import type { ServeOptions } from '../options.ts';
import { anotherSeatAnswers } from './other-seat.ts';
import { startSeat } from './seat.ts';
import { addressText } from '../metrics/listen-address.ts';
import { serveMetrics, type MetricsEndpoint } from '../metrics/endpoint.ts';
import { SeatFigures } from '../metrics/seat-figures.ts';
import type { Logger } from '../../shared/cli/log.ts';

/**
 * Runs the seat until SIGTERM or SIGINT; resolves with the exit code (1 when the bus refuses its
 * login or its replicas, or `--metrics` cannot listen).
 */
export async function runSeat(opts: ServeOptions): Promise<number> {
  const log = createLogger({ prefix: underSystemd(), least: opts.debug ? 'debug' : 'info' });
  const signalled = untilSignalled();
  // Listened on before the bus is reached: a port taken is said at once and the unit fails at start,
  // rather than a seat running that its monitoring cannot see.
  const metrics = opts.metrics ? await listenForScrapes(opts.metrics, log) : undefined;
  if (metrics === 'refused') return 1;
  try {
    return await serve(opts, log, signalled, metrics?.figures);
  } finally {
    await metrics?.endpoint.close();
  }
}

/** The figures and their listener; 'refused' when it cannot listen (said at error). */
async function listenForScrapes(
  metrics: NonNullable<ServeOptions['metrics']>,
  log: Logger,
): Promise<{ figures: SeatFigures; endpoint: MetricsEndpoint } | 'refused'> {
  const figures = new SeatFigures();
  const endpoint = await serveMetrics(metrics.address, figures.registry, log);
  if (endpoint.ok) return { figures, endpoint: endpoint.value };
  log.error(`${metrics.from} ${addressText(metrics.address)}: cannot listen: ${endpoint.reason}`);
  return 'refused';
}

async function serve(opts: ServeOptions, log: Logger, signalled: Promise<void>, figures: SeatFigures | undefined): Promise<number> {
  // The seat's user may subscribe only its own inboxes (DESIGN §11).
  const bus = { ...opts.bus, inboxPrefix: INBOX_PREFIXES.seat };
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
      ...(figures ? { observer: figures.observer } : {}),
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
    figures?.seatReady(seat.rollouts);
    figures?.readLivenessFrom(seat.liveness.memory);
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
