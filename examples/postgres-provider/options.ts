// The PostgreSQL provider's command line (DESIGN §10, §13): its flag table, --help, and the parser that
// fills its options, refusing what is wrong in one line that names the flag.
import { BUS_FLAGS, busOptionsFrom } from '../../src/shared/cli/bus-flags.ts';
import type { BusOptions } from '../../src/shared/bus/bus.ts';
import { describeFlags, openCommand, unexpectedArgument, valueSource, type Asked, type FlagTable, type FlagValues } from '../../src/shared/cli/flags.ts';
import { INBOX_PREFIXES } from '../../src/shared/bus/inbox.ts';
import { isName, segmentNameProblem } from '../../src/shared/contract/keys.ts';
import { limitText, presentFileProblem, readRegularFile } from '../../src/shared/base/regular-file.ts';
import { fail, ok, type Parsed } from '../../src/shared/base/result.ts';
import { MAX_CONSUMERS_FILE_BYTES } from '../../src/sdk/consumers-file.ts';
import { DEFAULT_CALL_TIMEOUT_MS, DEFAULT_CONCURRENCY } from '../../src/sdk/provider.ts';
import type { PostgresAdapterOptions } from './adapter.ts';

/** The provider name used when none is given (its bound bucket is `<provider>_bound`). */
export const DEFAULT_PROVIDER = 'postgres';
/** The provision served when none is given. */
export const DEFAULT_PROVISION = 'database';
/** The PostgreSQL server reached when none is given. */
export const DEFAULT_PG = { host: '127.0.0.1', port: 5432, user: 'postgres', database: 'postgres' } as const;
/** The largest administrator's password file read: a password is a line; a file far larger is none. */
export const MAX_PASSWORD_FILE_BYTES = 64 * 1024;

/**
 * The provider's flags, each with its variable. The administrator's password has no flag: a command
 * line is anyone's to read (`ps`, /proc/<pid>/cmdline), so it comes from a file or PGPASSWORD.
 */
const FLAGS = [
  {
    name: 'consumers',
    env: 'MESH_CONSUMERS_FILE',
    type: 'string',
    arg: 'FILE',
    help: `the filled \${consumers:<provision>} file (required; a regular file of at most ${limitText(MAX_CONSUMERS_FILE_BYTES)})`,
  },
  {
    name: 'provider',
    env: 'MESH_PROVIDER',
    type: 'string',
    arg: 'NAME',
    help: `provider name: its bucket <provider>_bound, its login provider.<provider> (default ${DEFAULT_PROVIDER})`,
  },
  { name: 'provision', env: 'MESH_PROVISION', type: 'string', arg: 'NAME', help: `provision served (default ${DEFAULT_PROVISION})` },
  { name: 'recheck-ms', env: 'MESH_RECHECK_MS', type: 'int', arg: 'MS', help: 'check everything served every MS ms (default: only on a change)' },
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
  { name: 'pg-host', env: 'PGHOST', type: 'string', arg: 'HOST', help: `PostgreSQL host (default ${DEFAULT_PG.host})` },
  { name: 'pg-port', env: 'PGPORT', type: 'int', arg: 'PORT', help: `PostgreSQL port (default ${DEFAULT_PG.port})` },
  { name: 'pg-user', env: 'PGUSER', type: 'string', arg: 'NAME', help: `administrator role (default ${DEFAULT_PG.user})` },
  {
    name: 'pg-password-file',
    env: 'PGPASSWORD_FILE',
    type: 'string',
    arg: 'FILE',
    help: `file holding its password (else the variable PGPASSWORD; a regular file of at most ${limitText(MAX_PASSWORD_FILE_BYTES)})`,
  },
  { name: 'pg-database', env: 'PGDATABASE', type: 'string', arg: 'NAME', help: `database the administrator connects to (default ${DEFAULT_PG.database})` },
  { name: 'connect-host', env: 'MESH_PG_CONNECT_HOST', type: 'string', arg: 'HOST', help: 'host served to consumers (default --pg-host)' },
  { name: 'debug', env: 'MESH_DEBUG', type: 'bool', help: 'log debug lines' },
  ...BUS_FLAGS,
] as const satisfies FlagTable;

/** What the provider runs with. */
export type ProviderProgramOptions = {
  /** The consumers file the node's engine writes. */
  consumersFile: string;
  /** The provider's name. */
  provider: string;
  /** The provision served. */
  provision: string;
  /** A re-check of everything served every so many ms (absent: only on a change). */
  recheckMs?: number;
  /** How long one adapter call may run. */
  callTimeoutMs: number;
  /** Consumers served at once, and administrator connections kept. */
  concurrency: number;
  /** How the adapter reaches PostgreSQL. */
  pg: PostgresAdapterOptions;
  /** How to reach the bus, with the provider's own inbox prefix. */
  bus: BusOptions;
  /** Whether debug lines are logged. */
  debug: boolean;
};

/** The text of --help. */
export function providerHelp(): string {
  return [
    'postgres-provider — serves a provision of the mesh from a PostgreSQL server: a login role and a database per consumer.',
    '',
    'usage: node postgres-provider.js --consumers FILE --provider NAME --nkey FILE [flags]',
    '',
    'flags:',
    describeFlags(FLAGS),
    '',
    'The administrator’s password is read from --pg-password-file (PGPASSWORD_FILE), else from PGPASSWORD;',
    'never from the command line, which every user of the machine can read. On the bus bus-config generates',
    'it logs in as provider.<provider> (--nkey) with the inbox prefix _INBOX_provider_<provider>.',
    'SIGTERM stops serving, ends its connections and exits 0. It exits 2 on a bad flag or file (a FIFO, a device,',
    'past its limit), and 1 when another helper serves this provider and provision or the bus refuses its login',
    'its bucket (a seed that is not provider.<provider>’s). A PostgreSQL it cannot reach is said once at warning',
    'and once at notice when it answers again; the retries between are debug lines (--debug).',
    'Logs go to stderr, with sd-daemon prefixes under systemd.',
  ].join('\n');
}

/** Parses argv and env; a reason names the flag and what is wrong. */
export function parseProviderOptions(argv: readonly string[], env: NodeJS.ProcessEnv): Parsed<Asked | ({ command: 'run' } & ProviderProgramOptions)> {
  const opened = openCommand(argv, env, FLAGS, providerHelp);
  if ('answered' in opened) return opened.answered;
  const {
    values: f,
    positional: [extra],
    onCommandLine,
  } = opened;
  // A file's refusal names where the path came from: the flag, or the variable a unit's env file set.
  const from = (name: 'consumers' | 'pg-password-file') => valueSource(FLAGS, name, onCommandLine, env);
  if (extra !== undefined) return unexpectedArgument(extra);
  const consumersFile = f.consumers;
  if (!consumersFile) return fail('--consumers is required (or MESH_CONSUMERS_FILE)');
  // Not there yet is how a provider starts before its module's first fill; anything else but a regular file is refused now.
  const consumersProblem = presentFileProblem(consumersFile, MAX_CONSUMERS_FILE_BYTES);
  if (consumersProblem !== undefined) return fail(`${from('consumers')}: ${consumersProblem}`);
  const provider = f.provider ?? DEFAULT_PROVIDER;
  if (!isName(provider)) return fail(`--provider: "${provider}" is not a valid module name`);
  const provision = f.provision ?? DEFAULT_PROVISION;
  const provisionProblem = segmentNameProblem(provision);
  if (provisionProblem) return fail(`--provision: ${provisionProblem}`);
  const numbers = servingNumbers(f);
  if (!numbers.ok) return numbers;
  const { concurrency, callTimeoutMs, recheckMs, port } = numbers.value;
  const password = adminPassword(f['pg-password-file'], from('pg-password-file'), env);
  if (!password.ok) return password;
  const bus = busOptionsFrom(f, `postgres-provider ${provider}`, INBOX_PREFIXES.provider(provider));
  if (!bus.ok) return bus;
  const connectHost = f['connect-host'];
  return ok({
    command: 'run',
    consumersFile,
    provider,
    provision,
    ...(recheckMs !== undefined ? { recheckMs } : {}),
    callTimeoutMs,
    concurrency,
    pg: {
      host: f['pg-host'] ?? DEFAULT_PG.host,
      port,
      user: f['pg-user'] ?? DEFAULT_PG.user,
      password: password.value,
      database: f['pg-database'] ?? DEFAULT_PG.database,
      poolSize: concurrency,
      ...(connectHost ? { connectHost } : {}),
    },
    bus: bus.value,
    debug: f.debug === true,
  });
}

/** The numbers of the flags, defaults filled in, each within its range. */
function servingNumbers(f: FlagValues<typeof FLAGS>): Parsed<{ concurrency: number; callTimeoutMs: number; recheckMs?: number; port: number }> {
  const concurrency = f.concurrency ?? DEFAULT_CONCURRENCY;
  const callTimeoutMs = f['call-timeout-ms'] ?? DEFAULT_CALL_TIMEOUT_MS;
  const recheckMs = f['recheck-ms'];
  for (const [flag, value] of [
    ['--concurrency', concurrency],
    ['--call-timeout-ms', callTimeoutMs],
    ['--recheck-ms', recheckMs ?? 1],
  ] as const) {
    if (value < 1) return fail(`${flag} must be at least 1`);
  }
  const port = f['pg-port'] ?? DEFAULT_PG.port;
  if (port < 1 || port > 65535) return fail(`--pg-port must be a port from 1 to 65535, got ${port}`);
  return ok({ concurrency, callTimeoutMs, ...(recheckMs !== undefined ? { recheckMs } : {}), port });
}

/** The administrator's password: the file's text without its last line end, else PGPASSWORD; `from` names the file's flag or variable. */
function adminPassword(file: string | undefined, from: string, env: NodeJS.ProcessEnv): Parsed<string> {
  if (file === undefined) {
    const fromEnv = env['PGPASSWORD'];
    return fromEnv ? ok(fromEnv) : fail('no administrator password: give --pg-password-file (PGPASSWORD_FILE) or PGPASSWORD');
  }
  // A regular file within its limit: a FIFO would hang the start, /dev/zero fill the memory.
  const read = readRegularFile(file, MAX_PASSWORD_FILE_BYTES);
  if (!read.ok) return fail(`${from}: ${read.reason}`);
  const text = Buffer.from(read.value).toString('utf8');
  // One line end is the file's, not the password's: `echo pw > file` must work, a trailing space must stay.
  const password = text.replace(/\r?\n$/, '');
  return password === '' ? fail(`${from}: ${file} is empty`) : ok(password);
}
