// A PostgreSQL adapter for the provider helper (DESIGN §1): one login role and one database per
// consumer, the role's password being the credential the vault minted for that consumer. The adapter
// marks what it makes (a comment naming the login) and touches nothing else: a role or database it
// did not mark is refused, never altered, and never dropped.
import pg from 'pg';
import { Refused, type Grant, type Served } from '../../src/sdk/types.ts';
import { credentialProblem, scramVerifier } from './scram.ts';
import { canLogin, withSession, type Query } from './sessions.ts';

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
  /** How many administrator connections are kept at most (default DEFAULT_POOL_SIZE). */
  poolSize?: number;
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

/** Administrator connections kept at most: as many as the helper works on consumers at once (DEFAULT_CONCURRENCY). */
export const DEFAULT_POOL_SIZE = 4;

/** What a database name asked for in `values.name` must look like. */
export const DATABASE_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** PostgreSQL's longest identifier, in bytes: a longer one is cut silently, so it is refused instead. */
const MAX_IDENTIFIER_BYTES = 63;

/** The mark left on a role or database this adapter created, naming the login it serves. */
export const markFor = (as: string) => `mesh-provisioner postgres adapter: served to ${as}`;

const { escapeIdentifier: ident, escapeLiteral: literal } = pg;

/** The database a grant asks for: `values.name` when given (refused unless a valid name), else the login. */
export function databaseName(grant: Pick<Grant, 'as' | 'values'>): string {
  const name = grant.values.name;
  if (name === undefined) return grant.as;
  if (typeof name !== 'string' || !DATABASE_NAME.test(name)) {
    throw new Refused(`values.name ${JSON.stringify(name)} is not a database name: it must match ${DATABASE_NAME.source}`);
  }
  return name;
}

/** Refuses a grant the adapter cannot serve safely, before anything is touched. */
function refuseUnservable(grant: Grant, admin: string): void {
  if (Buffer.byteLength(grant.as) > MAX_IDENTIFIER_BYTES) throw new Refused(`login "${grant.as}" is longer than ${MAX_IDENTIFIER_BYTES} bytes`);
  if (grant.as === admin) throw new Refused(`login "${grant.as}" is the provider's administrator`);
  if (grant.credential === '') throw new Refused('the credential is empty');
  const problem = credentialProblem(grant.credential);
  if (problem) throw new Refused(problem);
}

type Role = { super: boolean; mark: string | null };
type Database = { owner: string; mark: string | null };

const roleOf = async (q: Query, as: string) =>
  (await q<Role>("SELECT rolsuper AS super, shobj_description(oid, 'pg_authid') AS mark FROM pg_roles WHERE rolname = $1", [as])).rows[0];
const databaseOf = async (q: Query, name: string) =>
  (await q<Database>("SELECT pg_get_userbyid(datdba) AS owner, shobj_description(oid, 'pg_database') AS mark FROM pg_database WHERE datname = $1", [name]))
    .rows[0];

/** Refuses a role that is a superuser or that this adapter did not mark. */
function refuseForeignRole(as: string, role: Role | undefined): void {
  if (role?.super) throw new Refused(`login "${as}" is a superuser role`);
  if (role && role.mark !== markFor(as)) throw new Refused(`role "${as}" exists and was not made by this adapter: it is left as it is`);
}

/** Creates the role, marked, or sets the password and login of the role this adapter made; errors name the role and SQLSTATE, never the statement. */
async function ensureRole(q: Query, grant: Grant, exists: boolean): Promise<void> {
  const as = ident(grant.as);
  const password = `PASSWORD ${literal(await scramVerifier(grant.credential))} VALID UNTIL 'infinity' CONNECTION LIMIT -1`;
  // One simple query is one transaction: a role is never left without its mark.
  const sql = exists
    ? `ALTER ROLE ${as} WITH LOGIN ${password}`
    : `CREATE ROLE ${as} LOGIN ${password}; COMMENT ON ROLE ${as} IS ${literal(markFor(grant.as))}`;
  await q(sql).catch((e: Error & { code?: string }) => {
    throw new Error(`setting the password of role "${grant.as}" failed (SQLSTATE ${e.code ?? 'unknown'})`);
  });
}

/** Creates the database owned by the role, or takes back one this adapter made for it whose owner drifted; marks it. */
async function ensureDatabase(q: Query, as: string, name: string, db: Database | undefined): Promise<void> {
  if (!db) await q(`CREATE DATABASE ${ident(name)} OWNER ${ident(as)}`);
  else if (db.owner !== as) await q(`ALTER DATABASE ${ident(name)} OWNER TO ${ident(as)}`);
  if (db?.mark !== markFor(as)) await q(`COMMENT ON DATABASE ${ident(name)} IS ${literal(markFor(as))}`);
}

/** Drops what this adapter made for `as`: its sessions ended, its marked databases, then the role (anything else it owns goes to the administrator). */
async function dropMarked(q: Query, as: string): Promise<void> {
  // No new session may start while the role's are ended and its databases dropped.
  await q(`ALTER ROLE ${ident(as)} NOLOGIN`);
  await q('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1', [as]);
  const marked = await q<{ name: string }>("SELECT datname AS name FROM pg_database WHERE shobj_description(oid, 'pg_database') = $1", [markFor(as)]);
  for (const { name } of marked.rows) await q(`DROP DATABASE IF EXISTS ${ident(name)} WITH (FORCE)`);
  await q(`REASSIGN OWNED BY ${ident(as)} TO CURRENT_USER`);
  await q(`DROP OWNED BY ${ident(as)}`);
  await q(`DROP ROLE IF EXISTS ${ident(as)}`);
}

/** Builds the adapter; its administrator connections are pooled and opened on first use. */
export function postgresAdapter(opts: PostgresAdapterOptions): PostgresAdapter {
  const timeout = opts.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  const server = { host: opts.host, port: opts.port };
  const pool = new pg.Pool({
    ...server,
    user: opts.user,
    password: opts.password,
    database: opts.database ?? 'postgres',
    max: opts.poolSize ?? DEFAULT_POOL_SIZE,
    connectionTimeoutMillis: timeout,
    idleTimeoutMillis: 10_000,
  });
  // An idle connection that breaks (server restart) is dropped; the next query opens another.
  pool.on('error', () => undefined);
  const session = <T>(signal: AbortSignal | undefined, work: (q: Query) => Promise<T>) => withSession(pool, server, signal, work);
  const served = (as: string, database: string): Served => ({ user: as, values: { host: opts.connectHost ?? opts.host, port: opts.port, database } });

  return {
    async create(grant, signal) {
      const name = databaseName(grant);
      refuseUnservable(grant, opts.user);
      await session(signal, async (q) => {
        const role = await roleOf(q, grant.as);
        refuseForeignRole(grant.as, role);
        const db = await databaseOf(q, name);
        if (db && db.owner !== grant.as && db.mark !== markFor(grant.as)) throw new Refused(`database "${name}" already exists, owned by another role`);
        await ensureRole(q, grant, role !== undefined);
        await ensureDatabase(q, grant.as, name, db);
      });
      return served(grant.as, name);
    },

    async remove(as, signal) {
      await session(signal, async (q) => {
        const role = await roleOf(q, as);
        // A role this adapter did not make is not its to remove, nor anything it owns.
        if (role?.mark !== markFor(as)) return;
        if (role.super || as === opts.user) throw new Error(`refusing to remove role "${as}": it was made a superuser or is the administrator`);
        await dropMarked(q, as);
      });
    },

    async check(grant, was, signal) {
      let name: string;
      try {
        name = databaseName(grant);
      } catch {
        return false;
      }
      const now = served(grant.as, name);
      if (was.user !== now.user || Object.entries(now.values).some(([k, v]) => was.values[k] !== v)) return false;
      const holds = await session(signal, async (q) => {
        const role = await roleOf(q, grant.as);
        const db = await databaseOf(q, name);
        return role !== undefined && !role.super && role.mark === markFor(grant.as) && db?.owner === grant.as;
      });
      return holds && canLogin(server, { user: grant.as, password: grant.credential, database: name }, timeout, signal);
    },

    async close() {
      await pool.end();
    },
  };
}
