// The PostgreSQL provider, runnable (`dist/postgres-provider.js`, DESIGN §13): flags, wiring and signals.
// Its flags are options.ts; the adapter is adapter.ts; the consumers file, the bound entries and the
// re-checks are the provider helper's (src/sdk/provider.ts).
import { watchConnection } from '../../src/shared/bus/bus.ts';
import { connectWhenReachable } from '../../src/shared/bus/first-connect.ts';
import { whichLogin } from '../../src/shared/bus/login.ts';
import { printLine, runMain, untilSignalled } from '../../src/shared/cli/entry.ts';
import { errorText } from '../../src/shared/base/errors.ts';
import { createLogger, underSystemd, type Logger } from '../../src/shared/cli/log.ts';
import { VERSION } from '../../src/shared/cli/version.ts';
import { DEFAULT_STOP_TIMEOUT_MS, runProvider } from '../../src/sdk/provider.ts';
import { postgresAdapter } from './adapter.ts';
import { parseProviderOptions } from './options.ts';

/**
 * How long a stop may take from SIGTERM: the helper's own bound on the work under way, then a little
 * for the administrator connections and the bus to close. Past it the process exits all the same.
 */
const STOP_BOUND_MS = DEFAULT_STOP_TIMEOUT_MS + 3000;

async function main(): Promise<number> {
  const parsed = parseProviderOptions(process.argv.slice(2), process.env);
  if (!parsed.ok) return (printLine(process.stderr, `postgres-provider: ${parsed.reason}`), 2);
  const opts = parsed.value;
  if (opts.command === 'help') return (void process.stdout.write(`${opts.text}\n`), 0);
  if (opts.command === 'version') return (void process.stdout.write(`postgres-provider ${VERSION}\n`), 0);

  const log = createLogger({ prefix: underSystemd(), least: opts.debug ? 'debug' : 'info' });
  const signalled = untilSignalled();
  log.info(
    `postgres-provider ${VERSION}: ${opts.provider}/${opts.provision} on ${opts.pg.host}:${opts.pg.port}, consumers from ${opts.consumersFile}, bus ${opts.bus.servers.join(',')}`,
  );
  const login = whichLogin(opts.bus, `provider.${opts.provider}`);
  const nc = await connectWhenReachable({ bus: opts.bus, log, signalled, login });
  if (!nc) return 0;
  watchConnection(nc, log);
  const adapter = postgresAdapter(opts.pg);
  const running = runProvider({
    nc,
    provider: opts.provider,
    provision: opts.provision,
    consumersFile: opts.consumersFile,
    adapter,
    log,
    login,
    concurrency: opts.concurrency,
    callTimeoutMs: opts.callTimeoutMs,
    ...(opts.recheckMs !== undefined ? { recheckMs: opts.recheckMs } : {}),
  });
  // The helper stops by itself, having touched nothing, when another serves this name and provision or
  // the bus refuses the login: it said why at error; the unit fails (exit 1), as a configuration error does.
  const ended = await Promise.race([signalled.then(() => undefined), running.ended]);
  log.info(ended === undefined ? 'draining' : 'exiting: the helper stopped (said above)');
  await stopWithin(STOP_BOUND_MS, log, [
    ['the helper', () => running.stop()],
    ['the administrator connections', () => adapter.close()],
    ['the bus', () => nc.drain()],
  ]);
  log.info('stopped');
  return ended === undefined ? 0 : 1;
}

/** Runs each step in turn, a failing one said and passed; past `ms` in all, says which step it was on and resolves. */
async function stopWithin(ms: number, log: Logger, steps: [string, () => Promise<void>][]): Promise<void> {
  let at = steps[0]?.[0] ?? '';
  const all = (async () => {
    for (const [what, step] of steps) {
      at = what;
      await step().catch((err: unknown) => log.warn(`stopping ${what}: ${errorText(err)}`));
    }
  })();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), ms)));
  if ((await Promise.race([all, late])) === 'late') log.warn(`stopping took longer than ${ms} ms (at ${at}): exiting all the same`);
  clearTimeout(timer);
}

runMain('postgres-provider', main);
