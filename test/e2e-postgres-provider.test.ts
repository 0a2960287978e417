// `dist/postgres-provider.js` as an operator runs it (DESIGN §13, issue 20 item 3): the bundle copied
// alone, logged in as `provider.pg` with its own seed and inbox prefix on the bus `bus-config`
// generates, against a real PostgreSQL. A consumer's file gets its bound values and its credential
// and logs in with them; nats-server logs no violation of the provider's; SIGTERM exits 0 in bounded
// time, a PostgreSQL that never answers included; a bad flag is one line and exit 2.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { join } from 'node:path';
import { USERS } from '../src/server/commands/bus-config/users.ts';
import { DEFAULT_STOP_TIMEOUT_MS } from '../src/sdk/provider.ts';
import { cleanupBundles, copyBundleAlone, ensureBuilt, runBundle, startBundle, type Running } from './helpers/bundle.ts';
import { withIsolatedMesh } from './helpers/isolated-mesh.ts';
import { nodePaths } from './helpers/mesh-node.ts';
import { freePort, startNats } from './helpers/nats.ts';
import { startPostgres, tryLogin, type Postgres } from './helpers/postgres.ts';
import { startTcpProxy } from './helpers/tcp-proxy.ts';
import { startVault } from './helpers/vault.ts';
import { waitFor } from './helpers/wait.ts';
import { tempDir } from './helpers/temp.ts';

const PROVIDER = 'pg';
const NODE = 'n1';
const PAIR = `pair/${PROVIDER}/database/${NODE}/web`;
/** main.ts's bound on a stop (the helper's own, then 3 s for PostgreSQL and the bus), and the 2 s runMain gives a loop held open. */
const STOP_MS = DEFAULT_STOP_TIMEOUT_MS + 3000 + 2000;

let db: Postgres;
let bundle = '';
let work = '';
let passwordFile = '';

test.before(async () => {
  ensureBuilt('postgres-provider');
  bundle = copyBundleAlone('postgres-provider');
  work = tempDir('mesh-pg-provider-');
  db = await startPostgres();
  passwordFile = join(work, 'admin.pw');
  writeFileSync(passwordFile, `${db.adminPassword}\n`, { mode: 0o600 });
});
test.after(async () => {
  cleanupBundles();
  await db?.stop();
  rmSync(work, { recursive: true, force: true });
});

/** The consumer's connection settings as its engine wrote them. */
function settings(path: string): Record<string, string> {
  const lines = readFileSync(path, 'utf8').trim().split('\n');
  return Object.fromEntries(lines.map((l) => l.split('=', 2) as [string, string]));
}

/** Whether a login with these settings reaches the database (the error's code when not). */
function login(s: Record<string, string>, password = s['password']!): Promise<true | string> {
  return tryLogin({ host: s['host'], port: s['port'], user: s['user'], database: s['database'], password });
}

/** Sends SIGTERM and resolves with the exit code and how long the exit took. */
async function terminate(running: Running): Promise<{ code: number | null; ms: number }> {
  const started = Date.now();
  running.child.kill('SIGTERM');
  const { code } = await running.exited;
  return { code, ms: Date.now() - started };
}

test('the bundle alone, logged in as provider.pg, serves a consumer on the generated bus: its file gets its bound values and credential, logs in, follows a rotation; no violation; SIGTERM exits 0', () =>
  withIsolatedMesh({ nodes: [NODE], providers: [PROVIDER] }, async (m) => {
    const node = m.node(NODE);
    const vault = await startVault(await m.connect(USERS.vault), [nodePaths(join(m.dir, NODE)).secrets]);
    await vault.set(PAIR, `first-${Date.now()}`);
    await m.publish(PROVIDER, {
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
        provisions: [{ provider: PROVIDER, provision: 'database', name: 'db-password', values: { name: 'webdb' } }],
      },
    });
    await m.assign(NODE, PROVIDER);
    await m.assign(NODE, 'web');
    await node.startEngine();
    await node.startClient();
    // As a unit would run it: the bus and PostgreSQL from the environment, the rest as flags.
    const provider = startBundle(
      'node',
      bundle,
      'postgres-provider',
      ['--provider', PROVIDER, '--consumers', join(node.root, 'etc', PROVIDER, 'consumers.json')],
      {
        MESH_NATS_URL: m.nats.url,
        MESH_NATS_NKEY: m.nkey(USERS.provider(PROVIDER)),
        PGHOST: db.host,
        PGPORT: String(db.port),
        PGUSER: db.adminUser,
        PGPASSWORD_FILE: passwordFile,
      },
    );
    try {
      await m
        .waitReport(NODE, 'web', (r) => r.state === 'applied', 30_000)
        .catch((err: Error) => {
          throw new Error(`${err.message}; the provider said: ${provider.stderr()}`);
        });
      const dbConf = join(node.root, 'etc', 'web', 'db.conf');
      const s = settings(dbConf);
      assert.equal([s['user'], s['database'], s['host'], s['port']], ['web_n1', 'webdb', db.host, String(db.port)]);
      assert.ok(s['password']?.startsWith('first-'), 'the consumer’s file holds the credential the vault minted');
      assert.is(await login(s), true);
      assert.is(await login(s, 'wrong-password'), '28P01', 'a wrong password is refused');

      await vault.rotate(PAIR, `second-${Date.now()}`);
      await waitFor('the rotated credential in the consumer’s file, and a login with it', async () => {
        const now = settings(dbConf);
        return now['password']?.startsWith('second-') && (await login(now)) === true;
      });

      const stopped = await terminate(provider);
      assert.is(stopped.code, 0, provider.stderr());
      assert.ok(stopped.ms < STOP_MS, `stopped in ${stopped.ms} ms`);
      assert.match(provider.stderr(), /\bstopped\n/);
      const refused = m.violations().filter((l) => l.includes('postgres-provider'));
      assert.equal(refused, [], 'nats-server refused the provider nothing');
      assert.not.match(provider.stderr(), /violation/i);
    } finally {
      provider.kill();
      await vault.stop();
    }
  }));

test('SIGTERM exits 0 while the bus is out of reach, and within its bound while PostgreSQL never answers a call under way', async () => {
  const unreachable = startBundle(
    'node',
    bundle,
    'postgres-provider',
    ['--consumers', join(work, 'none.json'), '--nats', `nats://127.0.0.1:${await freePort()}`],
    {
      PGPASSWORD: 'unused',
    },
  );
  await unreachable.waitForLog(/postgres-provider \S+: postgres\/database/);
  const early = await terminate(unreachable);
  assert.is(early.code, 0, unreachable.stderr());

  // A PostgreSQL that accepts and never says a word: the consumer's create hangs in its connection.
  const held: Socket[] = [];
  const silent = createServer((socket) => void held.push(socket));
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  const nats = await startNats();
  const dir = join(work, 'silent');
  mkdirSync(dir);
  const consumers = join(dir, 'consumers.json');
  writeFileSync(`${consumers}.tmp`, JSON.stringify([{ consumer: 'n1', module: 'web', local: null, credential: 'a-credential-of-length', value: {} }]));
  renameSync(`${consumers}.tmp`, consumers);
  const port = (silent.address() as { port: number }).port;
  const provider = startBundle('node', bundle, 'postgres-provider', ['--consumers', consumers, '--nats', nats.url, '--pg-port', String(port)], {
    PGPASSWORD: 'unused',
  });
  try {
    await waitFor('the create’s connection to the silent server', () => held.length > 0, 15_000);
    const stopped = await terminate(provider);
    assert.is(stopped.code, 0, provider.stderr());
    assert.ok(stopped.ms < STOP_MS, `stopped in ${stopped.ms} ms: ${provider.stderr()}`);
  } finally {
    provider.kill();
    for (const socket of held) socket.destroy();
    silent.close();
    await nats.cleanup();
  }
});

test('a PostgreSQL that takes no new connection is said once at warning with its address, each retry at debug, and its return at notice with how long: no drift, nothing made again', async () => {
  const proxy = await startTcpProxy(db.port);
  const nats = await startNats();
  const dir = join(work, 'unreachable');
  mkdirSync(dir);
  const consumers = join(dir, 'consumers.json');
  writeFileSync(`${consumers}.tmp`, JSON.stringify([{ consumer: 'n1', module: 'web', local: null, credential: `reach-${Date.now()}`, value: {} }]));
  renameSync(`${consumers}.tmp`, consumers);
  // Re-checked every 200 ms: the administrator's pooled connection stays open through the relay.
  const provider = startBundle(
    'node',
    bundle,
    'postgres-provider',
    ['--consumers', consumers, '--nats', nats.url, '--pg-port', String(proxy.port), '--recheck-ms', '200', '--debug'],
    { PGUSER: db.adminUser, PGPASSWORD_FILE: passwordFile },
  );
  try {
    await provider.waitForLog(/n1\/web: served as web_n1/, 15_000);
    proxy.refuseNew();
    const address = `127\\.0\\.0\\.1:${proxy.port}`;
    const warned = await provider.waitForLog(/n1\/web: serving waits for the service/, 15_000);
    assert.match(
      warned,
      new RegExp(
        ` warning n1/web: serving waits for the service: cannot connect to PostgreSQL at ${address} to check the login of web_n1: .+; trying again until it answers`,
      ),
    );
    await provider.waitForLog(new RegExp(` debug n1/web: serving failed \\(try 2\\): cannot connect to PostgreSQL at ${address} `), 15_000);
    proxy.restore();
    await provider.waitForLog(/ notice the service answers again, after \d+\.\d s: serving$/, 15_000);
    const said = provider.stderr();
    assert.is(said.match(/waits for the service/g)?.length, 1, said);
    assert.not.match(said, / error /, 'an outage was said at error');
    assert.not.match(said, /drifted/, 'a login PostgreSQL would not take was said as drift');
    assert.is(said.match(/served as web_n1/g)?.length, 1, 'made again while PostgreSQL could not be reached');
  } finally {
    provider.kill();
    await proxy.close();
    await nats.cleanup();
  }
});

test('restarted after its consumer asked other values, the provider says the entry answers an earlier request and serves the new one, at info: no drift', async () => {
  const nats = await startNats();
  const dir = join(work, 'new-request');
  mkdirSync(dir);
  const consumers = join(dir, 'consumers.json');
  const credential = `request-${Date.now()}`;
  /** The consumers file as a client fills it: the entry, and the provision entry of its plan (its request). */
  const ask = (name: string) => {
    const provision = { provider: 'postgres', provision: 'database', node: 'n1', values: { name } };
    writeFileSync(`${consumers}.tmp`, JSON.stringify([{ consumer: 'n1', module: 'web', local: null, credential, value: { name }, provision }]));
    renameSync(`${consumers}.tmp`, consumers);
  };
  const start = () =>
    startBundle('node', bundle, 'postgres-provider', ['--consumers', consumers, '--nats', nats.url, '--pg-port', String(db.port)], {
      PGUSER: db.adminUser,
      PGPASSWORD_FILE: passwordFile,
    });
  ask('firstdb');
  const first = start();
  let second: Running | undefined;
  try {
    await first.waitForLog(/n1\/web: served as web_n1/, 15_000);
    assert.is((await terminate(first)).code, 0, first.stderr());
    ask('seconddb');
    second = start();
    const line = await second.waitForLog(/n1\/web: its bound entry answers an earlier request/, 15_000);
    assert.match(line, / info n1\/web: its bound entry answers an earlier request; serving the new one$/);
    await second.waitForLog(/n1\/web: served as web_n1/, 15_000);
    assert.not.match(second.stderr(), /drifted/, second.stderr());
  } finally {
    first.kill();
    second?.kill();
    await nats.cleanup();
  }
});

test('a second provider of one name and provision says which one serves and exits 1, having touched nothing; two started at once leave one; another provision runs beside', () =>
  withIsolatedMesh({ nodes: [NODE], providers: [PROVIDER] }, async (m) => {
    const dir = join(m.dir, 'providers');
    mkdirSync(dir);
    const consumers = join(dir, 'consumers.json');
    writeFileSync(consumers, '[]');
    const env = { MESH_NATS_URL: m.nats.url, MESH_NATS_NKEY: m.nkey(USERS.provider(PROVIDER)), PGPASSWORD: 'unused', PGPORT: '1' };
    const start = (provision = 'database') =>
      startBundle('node', bundle, 'postgres-provider', ['--provider', PROVIDER, '--provision', provision, '--consumers', consumers], env);
    const first = start();
    const running: Running[] = [first];
    try {
      await first.waitForLog(/pg_bound: 0 bound entries of database at start/, 15_000);
      const second = start();
      running.push(second);
      const { code } = await Promise.race([
        second.exited,
        new Promise<{ code: 'running' }>((resolve) => setTimeout(() => resolve({ code: 'running' }), 10_000)),
      ]);
      assert.is(code, 1, second.stderr());
      assert.match(
        second.stderr(),
        new RegExp(
          `another helper serves database of pg on this bus \\(host \\S+, pid ${first.child.pid}, up since [^)]+\\): this one stops without serving anything`,
        ),
      );
      assert.not.match(second.stderr(), /bound entries of database at start/, 'the second read the bucket');
      await first.waitForLog(new RegExp(`a second helper of this provider and provision started \\(host \\S+, pid ${second.child.pid}, `));
      assert.is(first.child.exitCode, null, 'the first one stopped');

      // Another provision of the same provider is not a second one.
      const other = start('cache');
      running.push(other);
      await other.waitForLog(/pg_bound: 0 bound entries of cache at start/, 15_000);
      await terminate(other);

      // Two started at once: one exits, the other serves.
      await terminate(first);
      const pair = [start(), start()];
      running.push(...pair);
      const gone = await Promise.race(pair.map((p, i) => p.exited.then(({ code }) => ({ i, code }))));
      assert.is(gone.code, 1, pair[gone.i]!.stderr());
      const kept = pair[1 - gone.i]!;
      await kept.waitForLog(/pg_bound: 0 bound entries of database at start/, 15_000);
      await new Promise((resolve) => setTimeout(resolve, 1000));
      assert.is(kept.child.exitCode, null, kept.stderr());
      assert.equal(
        m.violations().filter((l) => l.includes('postgres-provider')),
        [],
        'nats-server refused the providers something',
      );
    } finally {
      for (const p of running) p.kill();
    }
  }));

test('a --provider its seed is not for says once what the client says of a wrong seed, and exits 1 having touched nothing', () =>
  withIsolatedMesh({ nodes: [NODE], providers: [PROVIDER] }, async (m) => {
    const consumers = join(m.dir, 'consumers.json');
    writeFileSync(consumers, '[]');
    // provider.pg's seed, started as another provider: its inbox and its bucket are refused.
    const run = await runBundle(
      'node',
      bundle,
      'postgres-provider',
      ['--provider', 'pgx', '--consumers', consumers],
      {
        MESH_NATS_URL: m.nats.url,
        MESH_NATS_NKEY: m.nkey(USERS.provider(PROVIDER)),
        PGPASSWORD: 'unused',
        PGPORT: '1',
      },
      20_000,
    );
    assert.is(run.code, 1, run.stderr);
    const errors = run.stderr.split('\n').filter((l) => / error /.test(l));
    assert.is(errors.length, 1, run.stderr);
    assert.match(
      errors[0]!,
      /error the bus refuses provider pgx's requests on pgx_bound \([^)]*Permissions Violation[^)]*\) for this login \(public key U[A-Z2-7]+\): is --nkey the seed of provider\.pgx\?$/,
    );
    assert.not.match(run.stderr, /cannot make sure|serving all the same|bound entries of/, 'it went on past the refusal');
    assert.match(run.stderr, /\bstopped\n$/);
  }));

test('a bad flag, a missing --consumers or password, and a password flag each exit 2 with one line; --help names a variable for every flag', async () => {
  const consumers = join(work, 'c.json');
  const rows: [string[], Record<string, string>, RegExp][] = [
    [['--bogus'], {}, /unknown flag --bogus/],
    [[], { PGPASSWORD: 'x' }, /--consumers is required/],
    [['--consumers', consumers, '--provider', 'Pg_1'], { PGPASSWORD: 'x' }, /--provider: "Pg_1" is not a valid module name/],
    [['--consumers', consumers, '--provision', 'a/b'], { PGPASSWORD: 'x' }, /--provision: is "a\/b"/],
    [['--consumers', consumers, '--concurrency', '0'], { PGPASSWORD: 'x' }, /--concurrency must be at least 1/],
    [['--consumers', consumers, '--pg-port', '70000'], { PGPASSWORD: 'x' }, /--pg-port must be a port/],
    [['--consumers', consumers, '--pg-password', 'secret'], {}, /unknown flag --pg-password /],
    [['--consumers', consumers], { PGPASSWORD: '' }, /no administrator password/],
    [['--consumers', consumers, '--pg-password-file', join(work, 'absent')], {}, /--pg-password-file: cannot read/],
    [['--consumers', consumers, '--nkey', join(work, 'absent.nk')], { PGPASSWORD: 'x' }, /--nkey: no file at/],
    [['--consumers', consumers, 'extra'], { PGPASSWORD: 'x' }, /unexpected argument "extra"/],
  ];
  for (const [args, env, reason] of rows) {
    const run = await runBundle('node', bundle, 'postgres-provider', args, env);
    assert.is(run.code, 2, `${args.join(' ')}: ${run.stderr}`);
    assert.is(run.stdout, '');
    assert.match(run.stderr, /^postgres-provider: [^\n]+\n$/, run.stderr);
    assert.match(run.stderr, reason);
  }
  const help = await runBundle('node', bundle, 'postgres-provider', ['--help']);
  assert.is(help.code, 0, help.stderr);
  const flagLines = help.stdout.split('\n').filter((l) => /^ {2}--/.test(l));
  assert.ok(flagLines.length >= 20, help.stdout);
  for (const line of flagLines) assert.match(line, /\[env [A-Z_]+\]$/, line);
  for (const env of ['MESH_NATS_NKEY', 'MESH_CONSUMERS_FILE', 'MESH_PROVIDER', 'PGPASSWORD_FILE']) assert.ok(help.stdout.includes(`[env ${env}]`), env);
});

test.run();
