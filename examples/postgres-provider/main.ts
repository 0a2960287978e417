// The PostgreSQL provider, runnable: flags, wiring and signals. The adapter is in adapter.ts; the
// consumers file, the bound entries and the re-checks are the provider helper's (src/sdk/provider.ts).
import { readFileSync } from 'node:fs';
import { BUS_FLAGS, busOptionsFrom } from '../../src/shared/bus-flags.ts';
import { connectBus } from '../../src/shared/bus.ts';
import { runMain, untilSignalled } from '../../src/shared/entry.ts';
import { describeFlags, openCommand, type FlagTable } from '../../src/shared/flags.ts';
import { createLogger, underSystemd } from '../../src/shared/log.ts';
import { VERSION } from '../../src/shared/version.ts';
import { DEFAULT_CALL_TIMEOUT_MS, DEFAULT_CONCURRENCY, runProvider } from '../../src/sdk/provider.ts';
import { postgresAdapter, type PostgresAdapterOptions } from './adapter.ts';

/** The provider name used when none is given (its bound bucket is `<provider>_bound`). */
export const DEFAULT_PROVIDER = 'postgres';
/** The provision served when none is given. */
export const DEFAULT_PROVISION = 'database';

/** The provider's flags; the administrator's password comes from a file or PGPASSWORD, never argv. */
const FLAGS = [
  { name: 'consumers', env: 'MESH_CONSUMERS_FILE', type: 'string', arg: 'FILE', help: 'the filled ${consumers:<provision>} file (required)' },
  { name: 'provider', env: 'MESH_PROVIDER', type: 'string', arg: 'NAME', help: `provider name (default ${DEFAULT_PROVIDER})` },
  { name: 'provision', env: 'MESH_PROVISION', type: 'string', arg: 'NAME', help: `provision served (default ${DEFAULT_PROVISION})` },
  { name: 'recheck-ms', env: 'MESH_RECHECK_MS', type: 'int', arg: 'MS', help: 'how often what was served is checked (helper default)' },
  {
    name: 'call-timeout-ms',
    env: 'MESH_CALL_TIMEOUT_MS',
    type: 'int',
    arg: 'MS',
    help: `how long one call into PostgreSQL may run before it is cancelled (default ${DEFAULT_CALL_TIMEOUT_MS})`,
  },
  {
    name: 'concurrency',
    env: 'MESH_CONCURRENCY',
    type: 'int',
    arg: 'N',
    help: `consumers served at once, and administrator connections kept (default ${DEFAULT_CONCURRENCY})`,
  },
  { name: 'pg-host', env: 'PGHOST', type: 'string', arg: 'HOST', help: 'PostgreSQL host (default 127.0.0.1)' },
  { name: 'pg-port', env: 'PGPORT', type: 'int', arg: 'PORT', help: 'PostgreSQL port (default 5432)' },
  { name: 'pg-user', env: 'PGUSER', type: 'string', arg: 'NAME', help: 'administrator role (default postgres)' },
  { name: 'pg-password-file', env: 'PGPASSWORD_FILE', type: 'string', arg: 'FILE', help: 'file holding its password (else env PGPASSWORD)' },
  { name: 'pg-database', env: 'PGDATABASE', type: 'string', arg: 'NAME', help: 'database the administrator connects to (default postgres)' },
  { name: 'connect-host', env: 'MESH_PG_CONNECT_HOST', type: 'string', arg: 'HOST', help: 'host served to consumers (default --pg-host)' },
  { name: 'debug', env: 'MESH_DEBUG', type: 'bool', help: 'log debug lines' },
  ...BUS_FLAGS,
] as const satisfies FlagTable;

async function main(): Promise<number> {
  const opened = openCommand(process.argv.slice(2), process.env, FLAGS, () => `postgres-provider [flags]\n${describeFlags(FLAGS)}`);
  if ('answered' in opened) {
    const { answered } = opened;
    if (!answered.ok) return fail(answered.reason);
    const text = answered.value.command === 'help' ? answered.value.text : `postgres-provider ${VERSION}`;
    return (void process.stdout.write(`${text}\n`), 0);
  }
  const { values: f } = opened;
  const consumersFile = f.consumers;
  if (!consumersFile) return fail('--consumers is required');
  const bus = busOptionsFrom(f, 'postgres-provider');
  if (!bus.ok) return fail(bus.reason);
  const passwordFile = f['pg-password-file'];
  const password = passwordFile ? readFileSync(passwordFile, 'utf8').trimEnd() : process.env['PGPASSWORD'];
  if (password === undefined) return fail('no administrator password: give --pg-password-file or PGPASSWORD');
  const connectHost = f['connect-host'];
  const concurrency = f.concurrency ?? DEFAULT_CONCURRENCY;
  const callTimeoutMs = f['call-timeout-ms'] ?? DEFAULT_CALL_TIMEOUT_MS;
  if (concurrency < 1 || callTimeoutMs < 1) return fail('--concurrency and --call-timeout-ms must be at least 1');
  const pgOptions: PostgresAdapterOptions = {
    host: f['pg-host'] ?? '127.0.0.1',
    port: f['pg-port'] ?? 5432,
    user: f['pg-user'] ?? 'postgres',
    password,
    database: f['pg-database'] ?? 'postgres',
    poolSize: concurrency,
    ...(connectHost ? { connectHost } : {}),
  };
  const recheckMs = f['recheck-ms'];

  const log = createLogger({ prefix: underSystemd(), least: f['debug'] ? 'debug' : 'info' });
  const signalled = untilSignalled();
  const nc = await Promise.race([connectBus(bus.value), signalled.then(() => undefined)]);
  if (!nc) return 0;
  const adapter = postgresAdapter(pgOptions);
  const provider = f.provider ?? DEFAULT_PROVIDER;
  const provision = f.provision ?? DEFAULT_PROVISION;
  log.info(`postgres-provider: ${provider}/${provision} on ${pgOptions.host}:${pgOptions.port}, consumers from ${consumersFile}`);
  const running = runProvider({
    nc,
    provider,
    provision,
    consumersFile,
    adapter,
    log,
    concurrency,
    callTimeoutMs,
    ...(recheckMs !== undefined ? { recheckMs } : {}),
  });
  await signalled;
  log.info('draining');
  await running.stop();
  await adapter.close();
  await nc.drain();
  return 0;
}

function fail(reason: string): number {
  process.stderr.write(`postgres-provider: ${reason}\n`);
  return 2;
}

runMain('postgres-provider', main);
