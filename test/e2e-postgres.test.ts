// Bindings with a real provider (issue "Bindings"): a consumer module on node a requires `database`
// from `postgres` on node b; the mesh makes the role and the database exist in a real PostgreSQL,
// fills the consumer's bound values, fans a rotation out, withdraws on unbinding and repairs drift.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { postgresAdapter, type PostgresAdapter } from '../examples/postgres-provider/adapter.ts';
import { runProvider, type ProviderHandle } from '../src/sdk/provider.ts';
import { memoryLogger } from '../src/shared/cli/log.ts';
import { readAll } from '../src/shared/bus/watch/read-all.ts';
import { ensureBuilt, ROOT, runBundle } from './helpers/bundle.ts';
import { startMesh, type Mesh } from './helpers/mesh.ts';
import { startPostgres, tryLogin, type Postgres } from './helpers/postgres.ts';
import { startVault, type Vault } from './helpers/vault.ts';
import { waitFor } from './helpers/wait.ts';

const PAIR = 'pair/postgres/database/a/web';
const ROTATIONS = Number(process.env['MESH_ROTATIONS'] ?? 20);

type World = {
  m: Mesh;
  db: Postgres;
  vault: Vault;
  provider: ProviderHandle;
  adapter: PostgresAdapter;
  providerLog: ReturnType<typeof memoryLogger>;
  dbConf: string;
};

let db: Postgres;
test.before(async () => {
  db = await startPostgres();
});
test.after(async () => {
  await db?.stop();
});

/** Node b runs the postgres provider module and its helper; node a the consumer `web`. */
async function withWorld(fn: (w: World) => Promise<void>): Promise<void> {
  const m = await startMesh({ node: 'a' });
  const b = m.node('b');
  const vault = await startVault(m.nc, [m.secrets, b.secrets], { lab: true });
  const adapter = postgresAdapter({ host: db.host, port: db.port, user: db.adminUser, password: db.adminPassword });
  const providerLog = memoryLogger();
  let provider: ProviderHandle | undefined;
  try {
    await vault.set(PAIR, `cred-${Date.now()}`);
    await m.publish('postgres', {
      templates: { 'consumers.json': '${consumers:database}' },
      provisioning: { files: [{ path: '${dir:config}/consumers.json', template: 'consumers.json' }], provides: [{ provision: 'database' }] },
    });
    await m.publish('web', {
      templates: {
        'db.conf':
          'user=${bound:database:user}\ndatabase=${bound:database:database}\nhost=${bound:database:host}\nport=${bound:database:port}\npassword=${secret:db-password}\n',
      },
      provisioning: {
        files: [{ path: '${dir:config}/db.conf', template: 'db.conf', change: 'restart' }],
        provisions: [{ provider: 'postgres', provision: 'database', node: 'b', name: 'db-password', values: { name: 'webdb' } }],
      },
    });
    await m.assign('b', 'postgres', { dir: { config: join(b.root, 'etc', 'postgres') } });
    await b.startEngine();
    await b.startClient();
    await m.startClient();
    provider = runProvider({
      nc: m.nc,
      provider: 'postgres',
      provision: 'database',
      adapter,
      log: providerLog,
      recheckMs: 300,
      consumersFile: join(b.root, 'etc', 'postgres', 'consumers.json'),
      retry: { firstMs: 100, maxMs: 1000 },
    });
    await fn({ m, db, vault, provider, adapter, providerLog, dbConf: join(m.root, 'etc', 'web', 'db.conf') });
  } finally {
    await provider?.stop();
    await adapter.close();
    await vault.stop();
    await m.close();
  }
}

/** The consumer's connection settings as its engine wrote them. */
function settings(path: string): Record<string, string> {
  return Object.fromEntries(
    readFileSync(path, 'utf8')
      .trim()
      .split('\n')
      .map((l) => l.split('=', 2) as [string, string]),
  );
}

/** Whether a login with these settings reaches the database (the error's code when not). */
function login(s: Record<string, string>, password = s['password']!): Promise<true | string> {
  return tryLogin({ host: s['host'], port: s['port'], user: s['user'], database: s['database'], password });
}

/** Runs a query as the administrator. */
async function admin(sql: string): Promise<pg.QueryResult> {
  const client = new pg.Client({ host: db.host, port: db.port, user: db.adminUser, password: db.adminPassword, database: 'postgres' });
  await client.connect();
  try {
    return await client.query(sql);
  } finally {
    await client.end();
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

test('bind: the role and database exist, the consumer’s bound values fill while its secret stays the engine’s, and a login with them works', () =>
  withWorld(async ({ m, dbConf }) => {
    const started = Date.now();
    await m.assign('a', 'web');
    await m.waitReport('a', 'web', (r) => r.state === 'applied', 20_000);
    console.log(`postgres: assign → consumer's bound values filled and applied in ${Date.now() - started} ms`);
    const s = settings(dbConf);
    assert.is(s['database'], 'webdb');
    assert.is(s['host'], db.host);
    assert.is(s['user'], 'web_a');
    assert.is(await login(s), true);
    assert.is(await login(s, 'wrong'), '28P01', 'a wrong password is refused');
    const plan = await m.kv.plans.get('a.web');
    assert.not.ok(new TextDecoder().decode(plan!.value).includes(s['password']!), 'the plan holds no credential');
  }));

test(`rotation fans out: after each of ${ROTATIONS} rotations the new password works and the old one fails`, () =>
  withWorld(async ({ m, vault, dbConf }) => {
    await m.assign('a', 'web');
    await m.waitReport('a', 'web', (r) => r.state === 'applied', 20_000);
    const times: number[] = [];
    for (let i = 0; i < ROTATIONS; i++) {
      const old = settings(dbConf);
      const next = `rotated-${i}-${Date.now()}`;
      const started = Date.now();
      await vault.rotate(PAIR, next);
      await waitFor('the new password to work and the old to fail', async () => (await login(old, next)) === true && (await login(old)) === '28P01', 15_000);
      times.push(Date.now() - started);
    }
    await waitFor('the consumer’s file holds the last credential', () => settings(dbConf)['password']?.startsWith(`rotated-${ROTATIONS - 1}-`)).catch((err) => {
      throw new Error(
        `${(err as Error).message}; file: ${settings(dbConf)['password']}; client: ${m.log.lines.slice(-12).join(' | ')}; engine: ${m.engineLog.lines.slice(-12).join(' | ')}`,
      );
    });
    console.log(
      `postgres: mesh-vault.changed → new password works and old fails: p50 ${median(times)} ms, max ${Math.max(...times)} ms over ${ROTATIONS} rotations`,
    );
  }));

/**
 * Watches the consumer's file every few ms; at each new password in it, logs in with what the file
 * holds at once, as the consumer restarted on that change would. Each outcome, in order.
 */
function loginAtEachChange(path: string): { outcomes: { password: string; login: true | string }[]; stop(): Promise<void> } {
  const outcomes: { password: string; login: true | string }[] = [];
  let last = settings(path)['password'];
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const now = settings(path);
      if (now['password'] !== last) {
        last = now['password'];
        outcomes.push({ password: last!, login: await login(now) });
      }
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  })();
  return {
    outcomes,
    async stop() {
      stopped = true;
      await loop;
    },
  };
}

test('after `vault.js rotate`, the consumer’s file changes only once its password logs in: each change is usable the moment it lands', () =>
  withWorld(async ({ m, vault, dbConf }) => {
    await m.assign('a', 'web');
    await m.waitReport('a', 'web', (r) => r.state === 'applied', 20_000);
    ensureBuilt('vault');
    const watcher = loginAtEachChange(dbConf);
    try {
      for (let i = 1; i <= 3; i++) {
        const rotated = await runBundle('node', join(ROOT, 'dist'), 'vault', ['rotate', PAIR, '--store', vault.store, '--nats', m.nats.url]);
        assert.is(rotated.code, 0, rotated.stderr);
        await waitFor(`the file after rotation ${i}`, () => watcher.outcomes.length === i, 15_000);
      }
    } finally {
      await watcher.stop();
    }
    assert.equal(
      watcher.outcomes.map((o) => o.login),
      [true, true, true],
      'a change of the file held a password PostgreSQL did not take yet (28P01: the provider had not set it)',
    );
    assert.is(new Set(watcher.outcomes.map((o) => o.password)).size, 3);
    assert.equal(m.journal().filter((l) => l.includes('restart web')).length >= 3, true, m.journal().join('\n'));
  }));

test('unbinding drops the role and database; a refusal fails the consumer with the reason; drift is repaired', () =>
  withWorld(async ({ m, vault }) => {
    await m.assign('a', 'web');
    await m.waitReport('a', 'web', (r) => r.state === 'applied', 20_000);
    // Drift: the role and its database dropped behind the provider's back. The provider may repair
    // the database between the two statements (then owned by the role again): drop both until it holds.
    await waitFor(
      'the role and database dropped by hand',
      async () => {
        await admin('DROP DATABASE IF EXISTS webdb WITH (FORCE)');
        return admin('DROP ROLE IF EXISTS web_a').then(
          () => true,
          (err: Error) => (/depend on it/.test(err.message) ? false : Promise.reject(err)),
        );
      },
      10_000,
    );
    await waitFor('the role made again', async () => (await admin("select 1 from pg_roles where rolname = 'web_a'")).rowCount === 1, 10_000);
    await waitFor('the database made again', async () => (await admin("select 1 from pg_database where datname = 'webdb'")).rowCount === 1, 10_000);

    await vault.set('pair/postgres/database/a/bad', 'cred-bad');
    await m.publish('bad', {
      templates: { t: 'u=${bound:database:user}\n' },
      provisioning: {
        files: [{ path: '${dir:config}/t', template: 't' }],
        provisions: [{ provider: 'postgres', provision: 'database', node: 'b', values: { name: 'x; drop' } }],
      },
    });
    await m.assign('a', 'bad');
    const refused = await m.waitReport('a', 'bad', (r) => r.state === 'failed', 20_000);
    assert.match(refused.reason!, /postgres_bound a\.bad\.database: the provider refused: .*x; drop/);

    await m.unassign('a', 'web');
    await waitFor('the role dropped', async () => (await admin("select 1 from pg_roles where rolname = 'web_a'")).rowCount === 0, 15_000);
    assert.is((await admin("select 1 from pg_database where datname = 'webdb'")).rowCount, 0);
  }));

test('no credential value is in any bucket or any log line after a run', () =>
  withWorld(async ({ m, vault, providerLog, dbConf }) => {
    await m.assign('a', 'web');
    await m.waitReport('a', 'web', (r) => r.state === 'applied', 20_000);
    const first = settings(dbConf)['password']!;
    await vault.rotate(PAIR, 'second-credential-value');
    await waitFor('the rotation reached the consumer', () => settings(dbConf)['password'] === 'second-credential-value', 15_000);
    const values: string[] = [];
    for (const bucket of [
      'mesh-provisioner_plans',
      'mesh-provisioner_needs',
      'mesh-provisioner_applied',
      'mesh-provisioner_collect',
      'postgres_bound',
      'mesh-config_resolved',
      'mesh-provisioner_registry',
    ]) {
      for (const [key, value] of await readAll(m.nc, bucket)) values.push(key, new TextDecoder().decode(value));
    }
    const b = m.node('b');
    const logs = [...m.log.lines, ...b.log.lines, ...m.engineLog.lines, ...b.engineLog.lines, ...providerLog.lines, readFileSync(db.logPath, 'utf8')];
    assert.ok(values.length > 10 && logs.length > 5, 'something was scanned');
    for (const credential of [first, 'second-credential-value']) {
      for (const text of [...values, ...logs]) assert.not.ok(text.includes(credential), `a credential found in: ${text.slice(0, 200)}`);
    }
  }));

test.run();
