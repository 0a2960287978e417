// A PostgreSQL adapter for the provider helper (DESIGN §1): one login role and one database per
// consumer, the role's password being the credential the vault minted for that consumer.
import { createHash, createHmac, pbkdf2, randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import pg from 'pg';
import { Refused, type Grant, type Served } from '../../src/sdk/types.ts';

/** How the adapter reaches PostgreSQL as an administrator, and what it tells consumers. */
export type PostgresAdapterOptions = {
  /** The server's host, as the provider reaches it. */
  host: string;
  /** The server's port. */
  port: number;
  /** An administrator role: a superuser, or one with CREATEROLE and CREATEDB that is a member of the roles it creates. */
  user: string;
  /** That role's password. */
  password: string;
  /** The database the administrator connects to (default `postgres`). */
  database?: string;
  /** The host consumers connect to, when it differs from `host` (default: `host`). */
  connectHost?: string;
  /** How long a connection may take before it is given up (default DEFAULT_CONNECT_TIMEOUT_MS). */
  connectTimeoutMs?: number;
};

/** The adapter (its signals optional, for callers other than the helper) and the way to end its administrator connections. */
export type PostgresAdapter = {
  /** Adapter.create. */
  create(grant: Grant, signal?: AbortSignal): Promise<Served>;
  /** Adapter.remove. */
  remove(as: string, signal?: AbortSignal): Promise<void>;
  /** Adapter.check. */
  check(grant: Grant, served: Served, signal?: AbortSignal): Promise<boolean>;
  /** Ends the administrator connections; the adapter is unusable afterwards. */
  close(): Promise<void>;
};

/** How long the adapter waits for a connection, the administrator's or a check's login. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 5000;

/** What a database name asked for in `values.name` must look like. */
export const DATABASE_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** PostgreSQL's longest identifier, in bytes: a longer one is cut silently, so it is refused instead. */
const MAX_IDENTIFIER_BYTES = 63;

/** The SCRAM iteration count PostgreSQL itself uses (`scram_iterations` default). */
const SCRAM_ITERATIONS = 4096;

/** The mark left on a database this adapter created, naming the login it serves. */
const markFor = (as: string) => `mesh-provisioner postgres adapter: served to ${as}`;

const { escapeIdentifier: ident, escapeLiteral: literal } = pg;
const pbkdf2Async = promisify(pbkdf2);

/** The database a grant asks for: `values.name` when given (refused unless a valid name), else the login. */
export function databaseName(grant: Pick<Grant, 'as' | 'values'>): string {
  const name = grant.values.name;
  if (name === undefined) return grant.as;
  if (typeof name !== 'string' || !DATABASE_NAME.test(name)) {
    throw new Refused(`values.name ${JSON.stringify(name)} is not a database name: it must match ${DATABASE_NAME.source}`);
  }
  return name;
}

/**
 * The password as a SCRAM-SHA-256 verifier, so neither the server's statement log nor its error log
 * ever holds the credential. PostgreSQL applies SASLprep to a password, which leaves ASCII as it is;
 * anything else is sent as it is for the server to hash, rather than risk a verifier it would not match.
 */
async function passwordLiteral(credential: string): Promise<string> {
  if (!/^[\x01-\x7f]*$/.test(credential)) return literal(credential);
  const salt = randomBytes(16);
  const salted = await pbkdf2Async(credential, salt, SCRAM_ITERATIONS, 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  const storedKey = createHash('sha256').update(clientKey).digest();
  const serverKey = createHmac('sha256', salted).update('Server Key').digest();
  const b64 = (b: Buffer) => b.toString('base64');
  return literal(`SCRAM-SHA-256$${SCRAM_ITERATIONS}:${b64(salt)}$${b64(storedKey)}:${b64(serverKey)}`);
}

/** Refuses a grant the adapter cannot serve safely, before anything is touched. */
function refuseUnservable(grant: Grant, admin: string): void {
  if (Buffer.byteLength(grant.as) > MAX_IDENTIFIER_BYTES) throw new Refused(`login "${grant.as}" is longer than ${MAX_IDENTIFIER_BYTES} bytes`);
  if (grant.as === admin) throw new Refused(`login "${grant.as}" is the provider's administrator`);
  if (grant.credential === '') throw new Refused('the credential is empty');
  if (grant.credential.includes('\0')) throw new Refused('the credential holds a NUL character');
}

/** Builds the adapter; its administrator connections are pooled and opened on first use. */
export function postgresAdapter(opts: PostgresAdapterOptions): PostgresAdapter {
  const timeout = opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  const pool = new pg.Pool({ host: opts.host, port: opts.port, user: opts.user, password: opts.password,
    database: opts.database ?? 'postgres', max: 2, connectionTimeoutMillis: timeout, idleTimeoutMillis: 10_000 });
  // An idle connection that breaks (server restart) is dropped; the next query opens another.
  pool.on('error', () => undefined);

  const roleOf = async (as: string) =>
    (await pool.query<{ super: boolean }>('SELECT rolsuper AS super FROM pg_roles WHERE rolname = $1', [as])).rows[0];
  const databaseOf = async (name: string) =>
    (await pool.query<{ owner: string; mark: string | null }>(
      'SELECT pg_get_userbyid(datdba) AS owner, shobj_description(oid, \'pg_database\') AS mark FROM pg_database WHERE datname = $1',
      [name])).rows[0];
  const served = (as: string, database: string): Served =>
    ({ user: as, values: { host: opts.connectHost ?? opts.host, port: opts.port, database } });

  /** Sets the role's password and login; errors name the role and SQLSTATE, never the statement. */
  const ensureRole = async (grant: Grant) => {
    const role = await roleOf(grant.as);
    if (role?.super) throw new Refused(`login "${grant.as}" is a superuser role`);
    const verb = role ? `ALTER ROLE ${ident(grant.as)} WITH` : `CREATE ROLE ${ident(grant.as)}`;
    const sql = `${verb} LOGIN PASSWORD ${await passwordLiteral(grant.credential)} VALID UNTIL 'infinity' CONNECTION LIMIT -1`;
    await pool.query(sql).catch((e: Error & { code?: string }) => {
      throw new Error(`setting the password of role "${grant.as}" failed (SQLSTATE ${e.code ?? 'unknown'})`);
    });
  };

  /** Creates the database owned by the role, or takes back one this adapter made for it whose owner drifted. */
  const ensureDatabase = async (as: string, name: string, db: Awaited<ReturnType<typeof databaseOf>>) => {
    if (!db) await pool.query(`CREATE DATABASE ${ident(name)} OWNER ${ident(as)}`);
    else if (db.owner !== as) await pool.query(`ALTER DATABASE ${ident(name)} OWNER TO ${ident(as)}`);
    if (db?.mark !== markFor(as)) await pool.query(`COMMENT ON DATABASE ${ident(name)} IS ${literal(markFor(as))}`);
  };

  /** Whether `as` logs in to `database` with `credential`, over a connection of its own. */
  const canLogin = async (as: string, credential: string, database: string) => {
    const client = new pg.Client({ host: opts.host, port: opts.port, user: as, password: credential, database,
      connectionTimeoutMillis: timeout });
    client.on('error', () => undefined);
    try {
      await client.connect();
      return (await client.query<{ me: string }>('SELECT current_user AS me')).rows[0]?.me === as;
    } catch {
      return false;
    } finally {
      await client.end().catch(() => undefined);
    }
  };

  return {
    async create(grant) {
      const name = databaseName(grant);
      refuseUnservable(grant, opts.user);
      const db = await databaseOf(name);
      if (db && db.owner !== grant.as && db.mark !== markFor(grant.as)) {
        throw new Refused(`database "${name}" already exists, owned by another role`);
      }
      await ensureRole(grant);
      await ensureDatabase(grant.as, name, db);
      return served(grant.as, name);
    },

    async remove(as) {
      const role = await roleOf(as);
      if (!role) return;
      if (role.super || as === opts.user) throw new Error(`refusing to remove role "${as}": it is a superuser or the administrator`);
      // No new session may start while the role's are ended and its databases dropped.
      await pool.query(`ALTER ROLE ${ident(as)} NOLOGIN`);
      await pool.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1', [as]);
      const owned = await pool.query<{ name: string }>(
        'SELECT datname AS name FROM pg_database WHERE datdba = (SELECT oid FROM pg_roles WHERE rolname = $1)', [as]);
      for (const { name } of owned.rows) await pool.query(`DROP DATABASE IF EXISTS ${ident(name)} WITH (FORCE)`);
      await pool.query(`DROP OWNED BY ${ident(as)}`);
      await pool.query(`DROP ROLE IF EXISTS ${ident(as)}`);
    },

    async check(grant, was) {
      let name: string;
      try {
        name = databaseName(grant);
      } catch {
        return false;
      }
      const now = served(grant.as, name);
      if (was.user !== now.user || Object.entries(now.values).some(([k, v]) => was.values[k] !== v)) return false;
      const role = await roleOf(grant.as);
      const db = await databaseOf(name);
      if (!role || role.super || db?.owner !== grant.as) return false;
      return canLogin(grant.as, grant.credential, name);
    },

    async close() {
      await pool.end();
    },
  };
}
