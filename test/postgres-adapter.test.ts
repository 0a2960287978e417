// The PostgreSQL provider's adapter (examples/postgres-provider) against a real PostgreSQL with real
// password authentication: grants, rotation, checks and repair of drift, withdrawal, refusals.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { markFor, postgresAdapter, type PostgresAdapter } from '../examples/postgres-provider/adapter.ts';
import { CANCEL_GRACE_MS, postgresAddress } from '../examples/postgres-provider/sessions.ts';
import { Refused, type Grant } from '../src/sdk/types.ts';
import { startPostgres, type Postgres } from './helpers/postgres.ts';
import { sleep, waitFor } from './helpers/wait.ts';

const CONNECT_HOST = 'db1.mesh.test';

let server: Postgres | undefined;
let adapter: PostgresAdapter | undefined;
let startError: unknown;
/** Every credential handed to the adapter as SCRAM-hashable ASCII: none may reach the server's log. */
const handed: string[] = [];

test.before(async () => {
  try {
    server = await startPostgres({ settings: { log_statement: "'all'", log_min_error_statement: "'error'" } });
    adapter = postgresAdapter({
      host: server.host,
      port: server.port,
      user: server.adminUser,
      password: server.adminPassword,
      connectHost: CONNECT_HOST,
      connectTimeoutMs: 3000,
    });
  } catch (e) {
    startError = e;
  }
});

// A PostgreSQL that did not start fails every test with the reason; nothing is skipped.
test.before.each(() => {
  if (startError) throw startError;
});

test.after(async () => {
  await adapter?.close();
  await server?.stop();
});

function pgServer(): Postgres {
  if (!server) throw new Error('PostgreSQL is not running');
  return server;
}

function pgAdapter(): PostgresAdapter {
  if (!adapter) throw new Error('the adapter was not built');
  return adapter;
}

function freshCredential(): string {
  const c = randomBytes(18).toString('base64url');
  handed.push(c);
  return c;
}

function grantFor(as: string, values: Record<string, unknown> = {}, credential = freshCredential()): Grant {
  return { as, credential, values, consumer: { node: 'n1', module: as, local: null } };
}

/** Runs fn on a connection as `user`; the connection is ended afterwards. */
async function withClient<T>(user: string, password: string, database: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const s = pgServer();
  const client = new pg.Client({ host: s.host, port: s.port, user, password, database, connectionTimeoutMillis: 3000 });
  client.on('error', () => undefined);
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** `ok` when `user` logs in to `database` with `password`, else the SQLSTATE (28P01: wrong password). */
async function login(user: string, password: string, database: string): Promise<string> {
  try {
    return await withClient(user, password, database, async (c) => ((await c.query('SELECT 1')).rowCount === 1 ? 'ok' : 'no row'));
  } catch (e) {
    return (e as { code?: string }).code ?? String(e);
  }
}

/** A query as the superuser, in `database` (default `postgres`). */
async function asAdmin(sql: string, params: unknown[] = [], database = 'postgres'): Promise<pg.QueryResult> {
  const s = pgServer();
  return withClient(s.adminUser, s.adminPassword, database, (c) => c.query(sql, params));
}

async function ownerOf(database: string): Promise<string | undefined> {
  const r = await asAdmin('SELECT pg_get_userbyid(datdba) AS owner FROM pg_database WHERE datname = $1', [database]);
  return (r.rows[0] as { owner: string } | undefined)?.owner;
}

async function roleExists(role: string): Promise<boolean> {
  return (await asAdmin('SELECT 1 FROM pg_roles WHERE rolname = $1', [role])).rowCount === 1;
}

async function refusal(p: Promise<unknown>): Promise<Refused> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(err instanceof Refused, `expected Refused, got ${String(err)}`);
  return err;
}

test('PostgreSQL is named by the address the adapter reaches it at: host:port, [v6]:port, or the socket file of a directory host', () => {
  assert.is(postgresAddress({ host: '127.0.0.1', port: 5432 }), '127.0.0.1:5432');
  assert.is(postgresAddress({ host: 'db1.mesh.test', port: 6432 }), 'db1.mesh.test:6432');
  assert.is(postgresAddress({ host: '::1', port: 5432 }), '[::1]:5432');
  assert.is(postgresAddress({ host: '/var/run/postgresql/', port: 5432 }), '/var/run/postgresql/.s.PGSQL.5432');
});

test('a PostgreSQL not reached is an error naming its address, for a create and a check alike: never a check saying the login drifted', async () => {
  const grant: Grant = { as: 'nowhere_n1', credential: 'a-credential-of-length', values: {}, consumer: { node: 'n1', module: 'nowhere', local: null } };
  const closed = postgresAdapter({ host: '127.0.0.1', port: 1, user: 'postgres', password: 'unused', connectTimeoutMs: 1000 });
  const failure = (p: Promise<unknown>) =>
    p.then(
      (value) => `resolved ${JSON.stringify(value)}`,
      (err: Error) => err.message,
    );
  try {
    assert.match(await failure(closed.create(grant)), /^cannot connect to PostgreSQL at 127\.0\.0\.1:1: connect ECONNREFUSED/);
    const served = { user: 'nowhere_n1', values: { host: '127.0.0.1', port: 1, database: 'nowhere_n1' } };
    assert.match(await failure(closed.check(grant, served)), /^cannot connect to PostgreSQL at 127\.0\.0\.1:1: /);
  } finally {
    await closed.close();
  }
});

test('create makes a role that logs in with the credential to a database it owns; a wrong password fails', async () => {
  const g = grantFor('c_web', { name: 'web' });
  const served = await pgAdapter().create(g);
  assert.equal(served, { user: 'c_web', values: { host: CONNECT_HOST, port: pgServer().port, database: 'web' } });
  assert.is(await login('c_web', g.credential, 'web'), 'ok');
  assert.is(await ownerOf('web'), 'c_web');
  assert.is(await login('c_web', `${g.credential}x`, 'web'), '28P01');
  assert.is(await login('c_web', freshCredential(), 'web'), '28P01');
});

test('without values.name the database is named after the login', async () => {
  const g = grantFor('c_api');
  const served = await pgAdapter().create(g);
  assert.is(served.values.database, 'c_api');
  assert.is(await ownerOf('c_api'), 'c_api');
  assert.is(await login('c_api', g.credential, 'c_api'), 'ok');
});

test('create again with a new credential rotates it: the old one fails, the new one works', async () => {
  const a = pgAdapter();
  const first = grantFor('c_rot', { name: 'rot' });
  await a.create(first);
  const second = grantFor('c_rot', { name: 'rot' });
  const served = await a.create(second);
  assert.is(await login('c_rot', first.credential, 'rot'), '28P01');
  assert.is(await login('c_rot', second.credential, 'rot'), 'ok');
  assert.is(await a.check(first, served), false);
  assert.is(await a.check(second, served), true);
});

test('check is true while the grant holds, false when what was served no longer matches it', async () => {
  const a = pgAdapter();
  const g = grantFor('c_chk', { name: 'chk' });
  const served = await a.create(g);
  assert.is(await a.check(g, served), true);
  assert.is(await a.check(g, { ...served, values: { ...served.values, database: 'other' } }), false);
  assert.is(await a.check(g, { ...served, values: { ...served.values, host: '127.0.0.1' } }), false);
  assert.is(await a.check({ ...g, values: { name: 'x; drop' } }, served), false);
});

test('a role dropped by hand is seen by check and put back by create, its database and data kept', async () => {
  const a = pgAdapter();
  const g = grantFor('c_drift', { name: 'drift' });
  const served = await a.create(g);
  await asAdmin("CREATE TABLE kept (v text); INSERT INTO kept VALUES ('still here')", [], 'drift');
  await asAdmin('ALTER DATABASE drift OWNER TO postgres');
  await asAdmin('DROP ROLE c_drift');
  assert.is(await a.check(g, served), false);
  assert.equal(await a.create(g), served);
  assert.is(await a.check(g, served), true);
  assert.is(await ownerOf('drift'), 'c_drift');
  const rows = await asAdmin('SELECT v FROM kept', [], 'drift');
  assert.equal(rows.rows, [{ v: 'still here' }]);
});

test('a password or login changed by hand is seen by check and put back by create', async () => {
  const a = pgAdapter();
  const g = grantFor('c_pw', { name: 'pw' });
  const served = await a.create(g);
  await asAdmin("ALTER ROLE c_pw PASSWORD 'set-by-hand'");
  assert.is(await a.check(g, served), false);
  await a.create(g);
  assert.is(await a.check(g, served), true);
  await asAdmin('ALTER ROLE c_pw NOLOGIN');
  assert.is(await a.check(g, served), false);
  await a.create(g);
  assert.is(await a.check(g, served), true);
  assert.is(await login('c_pw', g.credential, 'pw'), 'ok');
});

test('a database dropped by hand is seen by check and made again by create', async () => {
  const a = pgAdapter();
  const g = grantFor('c_gone', { name: 'gone' });
  const served = await a.create(g);
  await asAdmin('DROP DATABASE gone WITH (FORCE)');
  assert.is(await a.check(g, served), false);
  await a.create(g);
  assert.is(await a.check(g, served), true);
  assert.is(await ownerOf('gone'), 'c_gone');
});

test("remove ends the role's sessions and drops its role and database; removing again is fine", async () => {
  const a = pgAdapter();
  const g = grantFor('c_bye', { name: 'bye' });
  const neighbour = grantFor('c_stay', { name: 'stay' });
  await a.create(g);
  await a.create(neighbour);
  const s = pgServer();
  const session = new pg.Client({ host: s.host, port: s.port, user: 'c_bye', password: g.credential, database: 'bye' });
  session.on('error', () => undefined);
  await session.connect();
  await a.remove('c_bye');
  assert.is(await roleExists('c_bye'), false);
  assert.is(await ownerOf('bye'), undefined);
  const after = await session.query('SELECT 1').then(
    () => 'alive',
    () => 'ended',
  );
  await session.end().catch(() => undefined);
  assert.is(after, 'ended');
  await a.remove('c_bye');
  await a.remove('c_never_was');
  assert.is(await login('c_stay', neighbour.credential, 'stay'), 'ok', 'another consumer is untouched');
});

test('a values.name that is not a database name is refused with the reason, and nothing is made', async () => {
  for (const name of ['x; drop', 'Web', '', '1abc', 'a'.repeat(64), 'wé', 42, null, ['web']]) {
    const g = grantFor('c_bad', { name });
    const err = await refusal(pgAdapter().create(g));
    assert.match(err.message, 'is not a database name');
    assert.match(err.message, JSON.stringify(name));
    assert.not.match(err.message, g.credential);
  }
  assert.is(await roleExists('c_bad'), false);
});

test('a database already owned by another role is refused, and its owner keeps it', async () => {
  const a = pgAdapter();
  const owner = grantFor('c_first', { name: 'shared' });
  await a.create(owner);
  const other = grantFor('c_second', { name: 'shared' });
  const err = await refusal(a.create(other));
  assert.match(err.message, 'database "shared" already exists, owned by another role');
  assert.not.match(err.message, other.credential);
  assert.is(await roleExists('c_second'), false);
  assert.is(await ownerOf('shared'), 'c_first');
  assert.is(await login('c_first', owner.credential, 'shared'), 'ok');
  await refusal(a.create(grantFor('c_third', { name: 'postgres' })));
  assert.is(await ownerOf('postgres'), 'postgres');
});

test('the administrator and superuser roles are refused: their passwords stay, and removing them does nothing', async () => {
  const a = pgAdapter();
  const s = pgServer();
  await refusal(a.create(grantFor(s.adminUser, { name: 'admin_db' })));
  await asAdmin("CREATE ROLE c_root SUPERUSER LOGIN PASSWORD 'root-by-hand'");
  await refusal(a.create(grantFor('c_root', { name: 'root_db' })));
  assert.is(await login(s.adminUser, s.adminPassword, 'postgres'), 'ok');
  assert.is(await login('c_root', 'root-by-hand', 'postgres'), 'ok');
  await a.remove('c_root');
  await a.remove(s.adminUser);
  assert.is(await roleExists('c_root'), true);
  assert.is(await login(s.adminUser, s.adminPassword, 'postgres'), 'ok');
  // A role the adapter made, promoted by hand: removing it is refused, loudly.
  const g = grantFor('c_promoted', { name: 'promoted' });
  await a.create(g);
  await asAdmin('ALTER ROLE c_promoted SUPERUSER');
  await a.remove('c_promoted').then(
    () => assert.unreachable('removed a superuser'),
    (e: Error) => assert.match(e.message, 'superuser'),
  );
  assert.is(await roleExists('c_promoted'), true);
});

test('an existing role the adapter did not make is refused: its password, its database and the role itself are left as they are', async () => {
  const a = pgAdapter();
  await asAdmin("CREATE ROLE c_theirs LOGIN PASSWORD 'theirs-by-hand'");
  await asAdmin('CREATE DATABASE theirs_db OWNER c_theirs');
  const g = grantFor('c_theirs', { name: 'theirs_db' });
  const err = await refusal(a.create(g));
  assert.match(err.message, 'role "c_theirs" exists and was not made by this adapter');
  assert.is(await login('c_theirs', 'theirs-by-hand', 'theirs_db'), 'ok', "the role's password was changed");
  assert.is(await login('c_theirs', g.credential, 'theirs_db'), '28P01');
  const other = grantFor('c_theirs', { name: 'other_db' });
  await refusal(a.create(other));
  assert.is(await a.check(g, { user: 'c_theirs', values: { host: CONNECT_HOST, port: pgServer().port, database: 'theirs_db' } }), false);
  await a.remove('c_theirs');
  assert.is(await roleExists('c_theirs'), true, 'a role the adapter did not make was dropped');
  assert.is(await ownerOf('theirs_db'), 'c_theirs', 'its database was dropped');
  assert.is(await ownerOf('other_db'), undefined);
  // Handed over by the operator: the mark makes it the adapter's.
  await asAdmin(`COMMENT ON ROLE c_theirs IS '${markFor('c_theirs')}'`);
  await a.create(g);
  assert.is(await login('c_theirs', g.credential, 'theirs_db'), 'ok');
});

test('a role the adapter makes carries its mark; remove drops only the databases it marked, and keeps any other the role owns', async () => {
  const a = pgAdapter();
  const g = grantFor('c_marked', { name: 'marked' });
  await a.create(g);
  const mark = await asAdmin("SELECT shobj_description(oid, 'pg_authid') AS mark FROM pg_roles WHERE rolname = 'c_marked'");
  assert.equal(mark.rows, [{ mark: markFor('c_marked') }]);
  await asAdmin('CREATE DATABASE handmade OWNER c_marked');
  await asAdmin("CREATE TABLE kept (v text); INSERT INTO kept VALUES ('data')", [], 'handmade');
  await a.remove('c_marked');
  assert.is(await roleExists('c_marked'), false);
  assert.is(await ownerOf('marked'), undefined, 'the database the adapter made stayed');
  assert.is(await ownerOf('handmade'), pgServer().adminUser, 'a database the adapter did not make was dropped');
  assert.equal((await asAdmin('SELECT v FROM kept', [], 'handmade')).rows, [{ v: 'data' }]);
});

test('an aborted create stops at once: the statement waiting on a lock is cancelled in the server and the password is not changed later', async () => {
  const a = pgAdapter();
  const first = grantFor('c_lock', { name: 'lock' });
  await a.create(first);
  const s = pgServer();
  const blocker = new pg.Client({ host: s.host, port: s.port, user: s.adminUser, password: s.adminPassword, database: 'postgres' });
  await blocker.connect();
  try {
    const blockerPid = (await blocker.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    await blocker.query('BEGIN');
    await blocker.query('ALTER ROLE c_lock CONNECTION LIMIT 5');
    const controller = new AbortController();
    const second = grantFor('c_lock', { name: 'lock' });
    const creating = a.create(second, controller.signal).then(
      () => 'created',
      (e: unknown) => e,
    );
    await waitFor(
      'the create waiting on the lock',
      async () => (await asAdmin("SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'ALTER ROLE \"c_lock\"%'")).rowCount === 1,
    );
    const aborted = Date.now();
    controller.abort(new Error('given up'));
    const outcome = await Promise.race([creating, sleep(CANCEL_GRACE_MS + 2000).then(() => 'still running')]);
    assert.ok(Date.now() - aborted < CANCEL_GRACE_MS + 500, `the create took ${Date.now() - aborted} ms to stop`);
    assert.ok(outcome instanceof Error, `the create ended ${String(outcome)}`);
    await waitFor(
      'no statement of the create left in the server',
      async () => (await asAdmin('SELECT 1 FROM pg_stat_activity WHERE query LIKE \'ALTER ROLE "c_lock"%\' AND pid <> $1', [blockerPid])).rowCount === 0,
    );
    await blocker.query('COMMIT');
    assert.is(await login('c_lock', first.credential, 'lock'), 'ok', 'the cancelled ALTER ROLE ran after all');
    assert.is(await login('c_lock', second.credential, 'lock'), '28P01');
    await a.create(second, new AbortController().signal);
    assert.is(await login('c_lock', second.credential, 'lock'), 'ok', 'the adapter is usable after an abort');
  } finally {
    await blocker.end().catch(() => undefined);
  }
});

test("no credential the adapter set reaches the server's statement log", async () => {
  const log = readFileSync(pgServer().logPath, 'utf8');
  assert.match(log, /statement: ALTER ROLE "c_rot" WITH LOGIN PASSWORD 'SCRAM-SHA-256\$4096:/, 'statements are logged');
  assert.ok(handed.length > 10);
  for (const c of handed) assert.not.ok(log.includes(c), 'a credential is in the server log');
});

test.run();
