// Starts a real PostgreSQL (Debian's packages) on 127.0.0.1 and a free port in a temp dir, with real
// scram-sha-256 password authentication, and stops it.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFileSync, chownSync, existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from './nats.ts';
import { envWithoutMesh } from './spawn.ts';
import pg from 'pg';
import { tempDir } from './temp.ts';

/** A running PostgreSQL cluster. */
export type Postgres = {
  /** Always `127.0.0.1`. */
  host: string;
  /** The TCP port it listens on. */
  port: number;
  /** The superuser: `postgres`. */
  adminUser: string;
  /** The superuser's random password. */
  adminPassword: string;
  /** The server's log (statements too when `log_statement` is set). */
  logPath: string;
  /** Stops it (`pg_ctl stop -m fast`) and removes its dir; a second call does nothing. */
  stop(): Promise<void>;
};

/** How startPostgres configures the server beyond what it always sets. */
export type StartPostgresOptions = {
  /** Extra `postgresql.conf` settings, e.g. `{ log_statement: "'all'" }` (values written as given). */
  settings?: Record<string, string | number>;
};

/** Where Debian installs each PostgreSQL version's programs. */
export const DEFAULT_POSTGRES_ROOT = '/usr/lib/postgresql';

/** The user PostgreSQL runs as when the tests run as root (it refuses to run as root). */
const UNPRIVILEGED_USER = 'nobody';

/** The newest `<root>/<version>/bin` holding initdb, or an error naming what was looked for. */
export function findPostgresBin(root = DEFAULT_POSTGRES_ROOT): string {
  const versions = existsSync(root) ? readdirSync(root) : [];
  const found = versions
    .filter((v) => existsSync(join(root, v, 'bin', 'initdb')) && existsSync(join(root, v, 'bin', 'pg_ctl')))
    .sort((a, b) => Number.parseFloat(b) - Number.parseFloat(a));
  if (found[0] === undefined) throw new Error(`PostgreSQL is not installed: no ${root}/<version>/bin/initdb (apt-get install postgresql)`);
  return join(root, found[0], 'bin');
}

/** Runs `command` as the unprivileged user when we are root, else as ourselves; rejects with its output. */
function run(command: string, args: string[], cwd: string): Promise<void> {
  const asRoot = process.getuid?.() === 0;
  const [file, argv] = asRoot ? ['runuser', ['-u', UNPRIVILEGED_USER, '--', command, ...args]] : [command, args];
  return new Promise((resolve, reject) => {
    execFile(file, argv, { cwd, env: envWithoutMesh(), timeout: 60_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${command} ${args[0] ?? ''} failed: ${err.message}\n${stdout}${stderr}`.trim()));
      else resolve();
    });
  });
}

/** The uid and gid of the unprivileged user, from /etc/passwd. */
function unprivilegedIds(): { uid: number; gid: number } {
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${UNPRIVILEGED_USER}:`));
  const [, , uid, gid] = line?.split(':') ?? [];
  if (uid === undefined || gid === undefined) throw new Error(`no user ${UNPRIVILEGED_USER} to run PostgreSQL as`);
  return { uid: Number(uid), gid: Number(gid) };
}

/** The conf lines every test cluster gets: loopback only, socket in its own dir, no durability (speed). */
function baseSettings(dir: string, port: number): Record<string, string | number> {
  return {
    listen_addresses: "'127.0.0.1'",
    port,
    unix_socket_directories: `'${dir}'`,
    fsync: 'off',
    synchronous_commit: 'off',
    full_page_writes: 'off',
    password_encryption: "'scram-sha-256'",
  };
}

/** Starts a fresh cluster; throws with the reason (never skips) when PostgreSQL cannot be started. */
export async function startPostgres(opts: StartPostgresOptions = {}): Promise<Postgres> {
  const bin = findPostgresBin();
  const dir = tempDir('mesh-pg-');
  const data = join(dir, 'data');
  const logPath = join(dir, 'server.log');
  const pwfile = join(dir, 'pw');
  const adminPassword = randomBytes(18).toString('base64url');
  const owner = process.getuid?.() === 0 ? unprivilegedIds() : undefined;
  // mkdtemp makes the dir 0700 and ours: when we are root, the unprivileged user must own what it uses.
  const handOver = (path: string) => owner && chownSync(path, owner.uid, owner.gid);
  let started = false;
  const stop = async () => {
    if (started) {
      started = false;
      await run(join(bin, 'pg_ctl'), ['stop', '-D', data, '-m', 'fast', '-w'], dir).catch(() => undefined);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    writeFileSync(pwfile, `${adminPassword}\n`, { mode: 0o600 });
    handOver(dir);
    handOver(pwfile);
    await run(join(bin, 'initdb'), ['-D', data, '-U', 'postgres', `--pwfile=${pwfile}`, '-A', 'scram-sha-256', '-E', 'UTF8', '--locale=C', '--no-sync'], dir);
    rmSync(pwfile);
    const port = await freePort();
    const settings = { ...baseSettings(dir, port), ...opts.settings };
    appendFileSync(
      join(data, 'postgresql.conf'),
      Object.entries(settings)
        .map(([k, v]) => `${k} = ${v}\n`)
        .join(''),
    );
    // Only password logins, on the socket and on loopback: a wrong password really fails.
    writeFileSync(join(data, 'pg_hba.conf'), 'local all all scram-sha-256\nhost all all 127.0.0.1/32 scram-sha-256\n');
    started = true;
    await run(join(bin, 'pg_ctl'), ['start', '-D', data, '-l', logPath, '-w', '-t', '30'], dir).catch((e: Error) => {
      const log = existsSync(logPath) ? readFileSync(logPath, 'utf8').slice(-1000) : '';
      throw new Error(`${e.message}\n${log}`);
    });
    return { host: '127.0.0.1', port, adminUser: 'postgres', adminPassword, logPath, stop };
  } catch (e) {
    await stop();
    throw new Error(`PostgreSQL could not be started: ${(e as Error).message}`);
  }
}

/** What a login names. */
export type LoginSettings = { host?: string; port?: string | number; user?: string; database?: string; password?: string };

/** Whether a login with these settings reaches the database and runs a query: true, or the error's code (its message when it has none). */
export async function tryLogin(s: LoginSettings): Promise<true | string> {
  const client = new pg.Client({ host: s.host, port: Number(s.port), user: s.user, database: s.database, password: s.password, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch (err) {
    return (err as { code?: string }).code ?? (err as Error).message;
  } finally {
    await client.end().catch(() => {});
  }
}
