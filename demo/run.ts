// The local demo (`npm run demo`): the README's "A lab on one machine" run for you, from a release
// built here — the same commands an operator types (bus-config, nats-server, init, the seat, the
// reference vault, two engines and clients, publish, config, assign, status, the PostgreSQL provider
// when PostgreSQL is installed, an SDK ask) fed block by block to one bash — then one config change
// timed from the command to the file on disk and the program's restart.
import { spawn, spawnSync } from 'node:child_process';
import { accessSync, constants, existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { labBlocks, startLabShell, type LabShell } from './lab.ts';
// PostgreSQL is the operator's, not a program of ours: the tests' throwaway cluster stands in for it.
import { findPostgresBin, startPostgres, type Postgres } from '../test/helpers/postgres.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const VERSION = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version as string;
const TOP = `mesh-provisioner-${VERSION}`;
/** What each README block does, as the demo says it. */
const TITLES = [
  'the bus (bus-config, nats-server) and every bucket (init, as admin)',
  'the seat, the vault, and on n1 and n2 an engine and a client, each with its own nkey',
  'module "web": publish, its secret to the vault, config import, assign; status until applied',
  'a mistake status shows: web on n2 without its config dir (exit 1), then put right',
  'a binding: the PostgreSQL provider makes "app" a role and a database; a rotation',
  'an SDK ask as the runner of n1; a config change',
  'a new build of web in waves (the seat runs with --rollout 0.5,1/1/60)',
  "the fleet's truth: a change traced to every node, a hand edit put back, n2's client killed and silent",
  'stop',
];
/** The block the demo skips without PostgreSQL. */
const POSTGRES_BLOCK = 4;
/** The value the timed change sets `workers` to. */
const NEW_WORKERS = '16';
const BLOCK_MS = 90_000;
const CHANGE_TIMEOUT_MS = 10_000;

const once = process.argv.includes('--once') || process.env['DEMO_ONCE'] === '1';

/** Prints one step line on stdout. */
function say(line: string): void {
  process.stdout.write(`demo: ${line}\n`);
}

/** Prints a block of text indented under the last step line. */
function show(text: string): void {
  const trimmed = text.replace(/\n$/, '');
  if (trimmed !== '') process.stdout.write(`${trimmed.replace(/^/gm, '    ')}\n`);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Whether `name` is an executable on PATH. */
function onPath(name: string): string | undefined {
  for (const dir of (process.env['PATH'] ?? '').split(delimiter).filter(Boolean)) {
    try {
      accessSync(join(dir, name), constants.X_OK);
      return join(dir, name);
    } catch {
      // Not in this dir.
    }
  }
  return undefined;
}

/** A TCP port free on 127.0.0.1 now. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
  });
}

/** What the demo started and must stop. */
const running: { shell?: LabShell; postgres?: Postgres; dir?: string; blocks?: string[]; stopping?: Promise<void> } = {};

/** Stops the lab (the README's last block, then the group), PostgreSQL, and removes the temp dir. */
function shutdown(code: number): Promise<void> {
  running.stopping ??= (async () => {
    const { shell } = running;
    if (shell && shell.child.exitCode === null) {
      const last = running.blocks?.at(-1);
      if (last !== undefined) await shell.run(last, 20_000).catch(() => undefined);
      await shell.stop();
      say('stopped the lab: nats-server, the seat, the vault, the engines, the clients, the provider');
    }
    await running.postgres?.stop();
    if (running.dir) rmSync(running.dir, { recursive: true, force: true });
    process.exit(code);
  })();
  return running.stopping;
}

/** Says why the demo failed, with what the lab printed, and stops it. */
function fail(reason: string): Promise<void> {
  say(`FAILED: ${reason}`);
  const transcript = running.shell?.transcript();
  if (transcript) show(`the lab printed, last lines:\n${transcript.split('\n').slice(-30).join('\n')}`);
  return shutdown(1);
}

/** Step 0: nats-server on PATH, or how to install it. */
function checkPrerequisites(): void {
  const nats = onPath('nats-server');
  if (!nats) {
    say('nats-server is not on PATH. Install it:');
    show(
      'Debian/Ubuntu:  sudo apt-get install -y nats-server\nelsewhere:      a release from https://github.com/nats-io/nats-server/releases (https://nats.io)',
    );
    process.exit(1);
  }
  say(`nats-server found at ${nats}`);
}

/** A PostgreSQL for block 5 when one is installed; its settings as the provider reads them. */
async function postgresEnv(): Promise<Record<string, string> | undefined> {
  try {
    findPostgresBin();
  } catch {
    return undefined;
  }
  const db = await startPostgres();
  running.postgres = db;
  return { PGHOST: db.host, PGPORT: String(db.port), PGUSER: db.adminUser, PGPASSWORD: db.adminPassword };
}

/** The lines of the journal of n1's engine. */
function journal(lab: string): string[] {
  const path = join(lab, 'n1', 'journal.log');
  return existsSync(path) ? readFileSync(path, 'utf8').split('\n').filter(Boolean) : [];
}

/** The last step: `config set` run as a process, timed from its start to the file and a restart in the journal. */
async function timeChange(release: string, env: NodeJS.ProcessEnv): Promise<void> {
  const lab = join(release, 'lab');
  const conf = join(lab, 'n1', 'etc', 'web', 'web.conf');
  const wanted = `worker_processes ${NEW_WORKERS};`;
  const before = journal(lab).filter((l) => l.endsWith(' restart web')).length;
  const args = ['server.js', 'config', 'set', 'n1', 'web', 'workers', NEW_WORKERS];
  say(`timing a change: node ${args.join(' ')}`);
  const started = performance.now();
  const command = spawn(process.execPath, args, {
    cwd: release,
    env: { ...env, MESH_NATS_URL: `nats://127.0.0.1:${env['PORT']}`, MESH_NATS_NKEY: join(lab, 'credentials', 'admin.nk') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let printed = '';
  command.stdout.setEncoding('utf8').on('data', (d: string) => (printed += d));
  command.stderr.setEncoding('utf8').on('data', (d: string) => (printed += d));
  const commandMs = new Promise<number>((resolve) => command.once('close', () => resolve(performance.now() - started)));
  const until = Date.now() + CHANGE_TIMEOUT_MS;
  while (!(readFileSync(conf, 'utf8').includes(wanted) && journal(lab).filter((l) => l.endsWith(' restart web')).length > before)) {
    if (Date.now() > until) throw new Error(`within ${CHANGE_TIMEOUT_MS} ms ${conf} did not show "${wanted}" with a new restart; config set said: ${printed}`);
    await sleep(1);
  }
  const ms = Math.round(performance.now() - started);
  show(printed);
  say(`   ${conf}: ${wanted} the journal: ${journal(lab).at(-1)}`);
  say(`   the change went from the command to the file and a restart of web within ${ms} ms (the command itself: ${Math.round(await commandMs)} ms)`);
}

async function main(): Promise<void> {
  // Ctrl-C reaches only the demo (the lab's bash has a process group of its own): it stops the lab.
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.once(signal, () => {
      say(`${signal}: stopping the mesh`);
      void shutdown(0);
    });
  checkPrerequisites();
  const dir = mkdtempSync(join(tmpdir(), 'mesh-demo-'));
  running.dir = dir;
  say(`temp dir ${dir}`);
  const made = spawnSync(process.execPath, [join(ROOT, 'scripts', 'release.mjs'), '--out', dir], { cwd: ROOT, encoding: 'utf8' });
  if (made.status !== 0) throw new Error(`npm run release failed: ${made.stderr}`);
  say(`built the release ${TOP}.tar.gz; the lab runs from it, as the README's "A lab on one machine" says`);
  const pgEnv = await postgresEnv();
  const env: NodeJS.ProcessEnv = {
    PATH: [dirname(process.execPath), process.env['PATH'] ?? ''].join(delimiter),
    HOME: dir,
    PORT: String(await freePort()),
    ...pgEnv,
  };
  const blocks = labBlocks(readFileSync(join(ROOT, 'README.md'), 'utf8'));
  running.blocks = blocks;
  const shell = startLabShell(dir, env);
  running.shell = shell;
  const release = join(dir, TOP);
  for (const [index, block] of blocks.slice(0, -1).entries()) {
    if (index === POSTGRES_BLOCK && pgEnv === undefined) {
      say(`${index + 1}. ${TITLES[index]}: skipped, PostgreSQL is not installed (sudo apt-get install -y postgresql)`);
      continue;
    }
    say(`${index + 1}. ${TITLES[index] ?? ''}`);
    show(
      block
        .replace(/\n$/, '')
        .replace(/^/gm, '$ ')
        .replace(/^\$ {3}/gm, '    '),
    );
    const ran = await shell.run(block, BLOCK_MS);
    show(ran.stdout + ran.stderr);
    if (index === 2) {
      const env = join(release, 'lab', 'n1', 'etc', 'web', 'web.env');
      say(`   ${env} (mode ${(statSync(env).mode & 0o777).toString(8).padStart(4, '0')}), the secret filled by the engine:`);
      show(readFileSync(env, 'utf8'));
    }
  }
  await timeChange(release, env);
  if (once) {
    say('done (--once): stopping the lab');
    await shutdown(0);
    return;
  }
  say(
    `the lab keeps running in ${release}/lab: try \`node server.js status\` there (MESH_NATS_URL nats://127.0.0.1:${env['PORT']}, MESH_NATS_NKEY lab/credentials/admin.nk)`,
  );
  say('press Ctrl-C to stop');
}

main().catch((err: Error) => fail(err?.message ?? String(err)));
