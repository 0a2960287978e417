// The operator's path (issue 20, "Done when"): the README's "A lab on one machine" run as it is
// written — its blocks fed to one bash, in a directory holding only the release tarball, which the
// first block unpacks (no node_modules, no source tree). bus-config, nats-server, init, the seat,
// the reference vault, two engines and clients, publish, config import and set, assign, the
// PostgreSQL provider bundle against a real PostgreSQL, a binding and a rotation, an SDK ask as the
// runner, and status failing on a seat-side mistake then passing once fixed: every program on its
// own nkey. Between blocks the test checks what the operator would look at. The tarball packs dist/
// as the run built it (`--no-build`: a rebuild would rewrite the bundles the suites beside it run;
// test/release.test.ts runs `npm run release` with its build), so this suite runs in the pool.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { labBlocks, startLabShell, type LabShell } from '../demo/lab.ts';
import { ensureBuilt, hasNodeModulesAbove, ROOT } from './helpers/bundle.ts';
import { freePort } from './helpers/nats.ts';
import { startPostgres, tryLogin, type Postgres } from './helpers/postgres.ts';
import { envWithoutMesh } from './helpers/spawn.ts';
import { waitFor } from './helpers/wait.ts';
import { tempDir } from './helpers/temp.ts';

const VERSION = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version as string;
const TOP = `mesh-provisioner-${VERSION}`;
const BLOCK_MS = 90_000;

let work = '';
let db: Postgres;
let shell: LabShell | undefined;

test.before(async () => {
  work = tempDir('mesh-operator-');
  for (const bundle of ['server', 'client', 'engine', 'vault', 'sdk', 'provider', 'postgres-provider']) ensureBuilt(bundle);
  const made = spawnSync(process.execPath, [join(ROOT, 'scripts', 'release.mjs'), '--out', work, '--no-build'], { cwd: ROOT, encoding: 'utf8' });
  assert.is(made.status, 0, made.stderr);
  db = await startPostgres();
});
test.after(async () => {
  await shell?.stop();
  await db?.stop();
  rmSync(work, { recursive: true, force: true });
});

/** A file's `KEY=value` lines. */
function envFile(path: string): Record<string, string> {
  const lines = readFileSync(path, 'utf8').split('\n');
  return Object.fromEntries(lines.filter((l) => /^[A-Z_]+=/.test(l)).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
}

/** Whether app's settings log in to PostgreSQL (the error's code when not). */
function login(s: Record<string, string>): Promise<true | string> {
  return tryLogin({ host: s['PGHOST'], port: s['PGPORT'], user: s['PGUSER'], database: s['PGDATABASE'], password: s['PGPASSWORD'] });
}

/** What every program logged, for a failure's message. */
function logs(lab: string): string {
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const name of existsSync(dir) ? readdirSync(dir) : []) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith('.log')) found.push(`--- ${path}\n${readFileSync(path, 'utf8').slice(-3000)}`);
    }
  };
  walk(lab);
  return found.join('\n');
}

test('the README lab, block by block, from the release tarball alone', async () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const blocks = labBlocks(readme);
  assert.is(blocks.length, 9, 'the lab has nine blocks');
  assert.ok(blocks[0]!.startsWith(`tar xzf ${TOP}.tar.gz && cd ${TOP}\n`), `the first block unpacks this version's tarball:\n${blocks[0]}`);
  assert.not.ok(hasNodeModulesAbove(work), `${work} has a node_modules above it`);
  const env = {
    ...envWithoutMesh(),
    PATH: [dirname(process.execPath), process.env['PATH'] ?? ''].join(delimiter),
    HOME: work,
    PORT: String(await freePort()),
    PGHOST: db.host,
    PGPORT: String(db.port),
    PGUSER: db.adminUser,
    PGPASSWORD: db.adminPassword,
  };
  for (const key of Object.keys(env)) if (key.startsWith('NODE_')) delete (env as Record<string, unknown>)[key];
  shell = startLabShell(work, env);
  const release = join(work, TOP);
  const lab = join(release, 'lab');
  const run = async (index: number) => {
    try {
      return await shell!.run(blocks[index]!, BLOCK_MS);
    } catch (err) {
      throw new Error(`block ${index + 1}: ${(err as Error).message}\n${logs(lab)}`);
    }
  };

  // 1. The bus and the buckets.
  await run(0);
  assert.equal(labBlocks(readFileSync(join(release, 'README.md'), 'utf8')), blocks, 'the release’s README gives the same lab');
  assert.not.ok(existsSync(join(release, 'node_modules')));
  for (const user of ['admin', 'provisioner', 'vault', 'provider.postgres', 'provisioner.n1', 'provisioner.n2', 'runner.n1'])
    assert.ok(existsSync(join(lab, 'credentials', `${user}.nk`)), `no seed for ${user}`);

  // 2. The programs, in the background; 3. a module.
  await run(1);
  const three = await run(2);
  assert.match(three.stdout, /worker_processes 2;/);
  assert.match(three.stdout, /server_name n1\.example\.org;/);
  assert.match(three.stdout, /listen 8080;/);
  assert.is(envFile(join(lab, 'n1', 'etc', 'web', 'web.env'))['API_KEY'], 'an-api-key', 'the engine filled the secret the vault holds');
  assert.is(statSync(join(lab, 'n1', 'etc', 'web', 'web.env')).mode & 0o777, 0o640);

  // 4. A seat-side failure in status, exit 1; then 0 once fixed.
  const four = await run(3);
  assert.match(four.stdout, /status exited 1/, four.stdout + four.stderr);
  const failing = four.stdout.slice(0, four.stdout.indexOf('status exited 1'));
  assert.match(failing + four.stderr, /dir:config/, `status names what the seat cannot resolve:\n${failing}${four.stderr}`);
  assert.ok(existsSync(join(lab, 'n2', 'etc', 'web', 'web.conf')), 'web is on n2 once its assignment is put right');

  // 5. The provider, a binding, a rotation.
  const dbEnv = join(lab, 'n1', 'etc', 'app', 'db.env');
  const five = await run(4);
  const journal = join(lab, 'n1', 'journal.log');
  const appRestarts = () =>
    readFileSync(journal, 'utf8')
      .split('\n')
      .filter((l) => l.endsWith(' restart app')).length;
  const stored = join(lab, 'secrets', 'pair', 'postgres', 'database', 'n1', 'app');
  // The first fill restarts app once; the rotation once more, with the vault's new value, which logs in.
  const now = await waitFor(
    'a second restart of app, its file holding the vault’s new password, which logs in',
    async () => {
      const settings = envFile(dbEnv);
      const fresh = appRestarts() >= 2 && settings['PGPASSWORD'] === readFileSync(stored, 'utf8');
      return fresh && (await login(settings)) === true ? settings : undefined;
    },
    30_000,
  ).catch((err: Error) => {
    throw new Error(`${err.message}\n${five.stdout}${five.stderr}\n${logs(lab)}`);
  });
  assert.equal([now['PGUSER'], now['PGDATABASE'], now['PGHOST'], now['PGPORT']], ['app_n1', 'appdb', db.host, String(db.port)]);
  assert.match(five.stdout, /restart app/, 'the journal the block shows has app restarted');

  // 6. The SDK as the runner; a config change.
  const webRestarts = () =>
    readFileSync(join(lab, 'n1', 'journal.log'), 'utf8')
      .split('\n')
      .filter((l) => l.endsWith(' restart web')).length;
  const restartsBefore = webRestarts();
  const six = await run(5);
  assert.match(six.stdout, /^workers: 2$/m, six.stdout + six.stderr);
  assert.match(six.stdout, /worker_processes 8;/);
  await waitFor('web restarted for the change', () => webRestarts() > restartsBefore);

  // 7. A new build in waves: build 2 of web on both nodes, the rollout done.
  const seven = await run(6);
  assert.match(seven.stdout, /^web {2}done {2}build 2 from 1 {2}wave 2\/2 \(0\.5, 1\)/m, seven.stdout + seven.stderr);
  assert.match(readFileSync(join(lab, 'seat.log'), 'utf8'), /rollout/i, 'the seat said the rollout');

  // 8. The fleet's truth: trace, why, a hand edit put back and counted, a killed client silent and back.
  const eight = await run(7);
  assert.match(eight.stdout, /rev \d+/, `config set says the revision it wrote:\n${eight.stdout}`);
  assert.match(eight.stdout, /newest revision in place on 2 of 2 nodes/, eight.stdout + eight.stderr);
  assert.match(eight.stdout, /mesh-config_resolved:n1\.web\.workers|n1\.web\.workers.*current/, `why names the key:\n${eight.stdout}`);
  assert.not.match(eight.stdout, /edited by hand/, 'the hand edit is not what the file ends with');
  assert.match(eight.stdout, /n1\s+web\s+\S*web\.conf\s+1\b/, `query drift lists web.conf once:\n${eight.stdout}`);
  assert.match(eight.stdout, /\bsilent\b/, `status says n2 silent:\n${eight.stdout}`);
  assert.match(eight.stdout, /status exited 1/, eight.stdout + eight.stderr);
  assert.not.match(readFileSync(join(lab, 'n1', 'etc', 'web', 'web.conf'), 'utf8'), /edited by hand/);

  // 9. Stop: every program drains and says so; nats-server refused nobody anything.
  await run(8);
  for (const log of ['seat.log', 'vault.log', 'provider.log', join('n1', 'client.log'), join('n2', 'client.log')]) {
    const text = readFileSync(join(lab, log), 'utf8');
    assert.match(text, /\bstopped\b/, `${log} says stopped; its last lines:\n${text.split('\n').slice(-8).join('\n')}`);
  }
  const nats = readFileSync(join(lab, 'nats.log'), 'utf8');
  assert.not.match(
    nats,
    /Violation/,
    `nats-server refused something:\n${nats
      .split('\n')
      .filter((l) => l.includes('Violation'))
      .join('\n')}`,
  );
});

test.run();
