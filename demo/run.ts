// The local demo (`npm run demo`): a one-node mesh on this machine (nats-server, the seat, the
// reference engine and a node client) fed the sample module of demo/sample/ the way the catalogue,
// mesh-config and the controller would feed it; then one config change timed from bus to disk.
// nats-server, the seat, the input buckets and the archive go through the tests' mesh helpers; the
// demo keeps its own process handling (own process groups, echoed lines, ordered stop) and narration.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { accessSync, constants, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import type { NatsConnection } from '@nats-io/transport-node';
import { connectBus } from '../src/shared/bus.ts';
import { INBOX_PREFIXES, USERS } from '../src/server/commands/bus-config/config.ts';
import type { KV } from '@nats-io/kv';
import type { ObjectStore } from '@nats-io/obj';
import { APPLIED, CONFIG as CONFIG_BUCKET, DEFAULT_ARCHIVES, MODULES } from '../src/shared/buckets.ts';
import type { Report } from '../src/shared/schemas.ts';
import { publishModule, type Templates } from '../test/helpers/archive.ts';
import { createInputBuckets, startSeatProcess, waitForSeat, type InputBuckets, type RunningSeat } from '../test/helpers/mesh-bus.ts';
import { startNats } from '../test/helpers/nats.ts';
import { findPostgresBin, startPostgres } from '../test/helpers/postgres.ts';
import { startVault } from '../test/helpers/vault.ts';
import { postgresAdapter } from '../examples/postgres-provider/adapter.ts';
import { runProvider } from '../src/sdk/provider.ts';
import pg from 'pg';
import { envWithoutMesh, type Spawn } from '../test/helpers/spawn.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SAMPLE_DIR = join(ROOT, 'demo', 'sample');
const NODE = 'demo';
const MODULE = 'web';
/** The module's resolved config as mesh-config would publish it. */
const CONFIG = { 'server-name': 'demo.example.org', workers: '2', mode: 'production' };
/** The value step 6 changes `workers` to. */
const NEW_WORKERS = '8';
const API_KEY = 'demo-api-key-4f1c9a';
const APPLY_TIMEOUT_MS = 20_000;
const CHANGE_TIMEOUT_MS = 10_000;
const START_TIMEOUT_MS = 15_000;
const STOP_GRACE_MS = 5_000;
const TAIL_LINES = 20;

const once = process.argv.includes('--once') || process.env['DEMO_ONCE'] === '1';
const dim = process.stderr.isTTY && !process.env['NO_COLOR'] ? (s: string) => `\x1b[2m${s}\x1b[0m` : (s: string) => s;

/** How a child ended. */
type End = { code: number | null; signal: NodeJS.Signals | null; error?: Error };

/** A child the demo started, with the last lines worth showing on a failure. */
type Child = { name: string; child: ChildProcess; tail: string[]; done: boolean; exited: Promise<End> };

/** The paths of the node's engine and client. */
type Paths = { socket: string; root: string; secrets: string; journal: string; cache: string };

/** Every process the demo started, in start order; stopped in reverse. */
const children: Child[] = [];
let tempDir: string | undefined;
let nc: NatsConnection | undefined;
let stopping: Promise<void> | undefined;

/** Prints one step line on stdout. */
function say(line: string): void {
  process.stdout.write(`demo: ${line}\n`);
}

/** Prints a block of text indented under the last step line. */
function show(text: string): void {
  process.stdout.write(
    text
      .replace(/\n$/, '')
      .split('\n')
      .map((l) => `    ${l}`)
      .join('\n') + '\n',
  );
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `probe` until it returns a truthy value; throws `describe()` (an error or its message) after `ms`. */
async function waitUntil<T>(ms: number, probe: () => T | Promise<T>, describe: () => Error | string, everyMs = 50): Promise<NonNullable<T>> {
  const until = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value) return value as NonNullable<T>;
    if (Date.now() > until) {
      const err = describe();
      throw err instanceof Error ? err : new Error(err);
    }
    await sleep(everyMs);
  }
}

/** The absolute path of `name` on PATH, or undefined. */
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

/**
 * Starts a child in its own process group (so a Ctrl-C reaches only the demo, which then stops
 * the children in order); the lines `worth` accepts are echoed on stderr and kept for a failure.
 */
function startChild(name: string, cmd: string, args: string[], worth: (line: string) => boolean = () => true): Child {
  const child = spawn(cmd, args, { cwd: ROOT, env: envWithoutMesh(), stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const entry: Child = { name, child, tail: [], done: false, exited: Promise.resolve({ code: null, signal: null }) };
  // A child that could not be spawned gives 'error' and maybe never 'close': either one ends it.
  entry.exited = new Promise<End>((resolve) => {
    child.once('close', (code, signal) => resolve({ code, signal }));
    child.once('error', (err) => resolve({ code: null, signal: null, error: err }));
  }).then((end) => {
    entry.done = true;
    if (!stopping) void fail(end.error ? `${name} could not start: ${end.error.message}` : `${name} exited unexpectedly (${end.signal ?? `code ${end.code}`})`);
    return end;
  });
  const keep = (line: string) => {
    if (!worth(line)) return;
    entry.tail.push(line);
    if (entry.tail.length > TAIL_LINES) entry.tail.shift();
    process.stderr.write(dim(`[${name}] ${line}`) + '\n');
  };
  for (const stream of [child.stdout!, child.stderr!]) {
    let partial = '';
    stream
      .setEncoding('utf8')
      .on('data', (chunk: string) => {
        const lines = (partial + chunk).split('\n');
        partial = lines.pop() ?? '';
        lines.forEach(keep);
      })
      .on('end', () => partial && keep(partial));
  }
  children.push(entry);
  return entry;
}

/** The mesh helpers' spawn: a child of the demo's own, nats-server echoing only its warnings and errors. */
const spawnChild: Spawn = (name, cmd, args) => startChild(name, cmd, args, name === 'nats-server' ? (line) => /\[(WRN|ERR|FTL)\]/.test(line) : undefined).child;

/** The demo's child called `name`. */
function childNamed(name: string): Child {
  const entry = children.find((c) => c.name === name);
  if (!entry) throw new Error(`no child ${name} was started`);
  return entry;
}

/** SIGTERM, then SIGKILL after the grace time; resolves once the child has exited. */
async function stopChild(entry: Child): Promise<void> {
  if (entry.done) return;
  entry.child.kill('SIGTERM');
  const timer = setTimeout(() => {
    process.stderr.write(`demo: ${entry.name} did not stop within ${STOP_GRACE_MS} ms: SIGKILL\n`);
    entry.child.kill('SIGKILL');
  }, STOP_GRACE_MS);
  const { code, signal } = await entry.exited;
  clearTimeout(timer);
  // nats-server 2.9 exits 1 after a SIGTERM that stopped it cleanly.
  const usual = entry.name === 'nats-server' && code === 1 ? ', as nats-server does on SIGTERM' : '';
  say(`stopped ${entry.name} (${signal ?? `exit ${code}`}${usual})`);
}

/** Stops everything the demo started (newest first), removes the temp dir and exits with `code`. */
function shutdown(code: number): Promise<void> {
  stopping ??= (async () => {
    for (const stop of bindingsToStop.splice(0).reverse())
      await Promise.resolve()
        .then(stop)
        .catch(() => {});
    await nc?.close().catch(() => {});
    for (const entry of [...children].reverse()) await stopChild(entry);
    if (tempDir) {
      rmSync(tempDir, { recursive: true, force: true });
      say(`removed ${tempDir}`);
    }
    process.exit(code);
  })();
  return stopping;
}

/** A failure with text to show below its one-line reason (a report, a file). */
class DemoError extends Error {
  constructor(
    message: string,
    readonly detail?: string,
  ) {
    super(message);
  }
}

/** Says why the demo failed, with the detail and the last lines of every child, and stops everything. */
function fail(reason: string, detail?: string): Promise<void> {
  if (stopping) return stopping;
  process.stderr.write(`demo: FAILED: ${reason}\n${detail ? detail.replace(/\n?$/, '\n') : ''}`);
  for (const { name, tail } of children) {
    if (tail.length === 0) continue;
    process.stderr.write(`demo: last lines of [${name}]:\n${tail.map((l) => `    ${l}`).join('\n')}\n`);
  }
  say(`FAILED: ${reason}`);
  return shutdown(1);
}

for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    say(`${signal}: stopping the mesh`);
    void shutdown(0);
  });
}
process.on('unhandledRejection', (err) => void fail(`unexpected: ${(err as Error)?.message ?? err}`, (err as Error)?.stack));
// Last resort (an exit the shutdown did not run): no child outlives the demo, no temp dir stays.
process.on('exit', () => {
  for (const { child, done } of children) if (!done) child.kill('SIGKILL');
  if (tempDir && existsSync(tempDir)) rmSync(tempDir, { recursive: true, force: true });
});

/** Step 1: nats-server on PATH and the bundles built, or how to get them. */
function checkPrerequisites(): void {
  const nats = onPath('nats-server');
  if (!nats) {
    say('nats-server is not on PATH. Install it:');
    show(
      'Debian/Ubuntu:  sudo apt-get install -y nats-server\nelsewhere:      a release from https://github.com/nats-io/nats-server/releases (https://nats.io)',
    );
    process.exit(1);
  }
  const missing = ['server', 'client', 'engine'].filter((b) => !existsSync(join(ROOT, 'dist', `${b}.js`)));
  if (missing.length > 0) {
    say(`dist/${missing[0]}.js is missing: run \`npm run demo\` (it builds first) or \`node build.mjs\``);
    process.exit(1);
  }
  say(`1. nats-server found at ${nats}`);
}

/** Each program's nkey seed, as `bus-config` generated it. */
let seeds = '';
/** The bus's URL. */
let busUrl = '';

/**
 * Step 2: a temp dir and a JetStream nats-server on a free port, on the configuration `bus-config`
 * generates (DESIGN §11): the node its own account, every program its own nkey login.
 */
async function startBus(dir: string): Promise<string> {
  seeds = join(dir, 'credentials');
  const command = ['bus-config', '--node', NODE, '--provider', 'postgres', '--credentials', seeds];
  const nats = await startNats('', {
    spawn: spawnChild,
    dir: join(dir, 'nats'),
    whole: ({ listen, storeDir }) => {
      const run = spawnSync(process.execPath, [join(ROOT, 'dist/server.js'), ...command, '--listen', listen, '--store-dir', storeDir], { encoding: 'utf8' });
      if (run.status !== 0) throw new Error(`bus-config failed: ${run.stderr}`);
      return run.stdout;
    },
  });
  say(`   generated the bus configuration: node dist/server.js ${command.join(' ')}`);
  busUrl = nats.url;
  say(`   nats-server is up on ${nats.url} (pid ${childNamed('nats-server').child.pid}); node "${NODE}" has an account of its own`);
  return nats.url;
}

/** The seed file of a user of the generated configuration. */
function seed(user: string): string {
  return join(seeds, `${user}.nk`);
}

/** Step 3: the seat (started as the tests start it), the engine (with the module's secret) and the node client. */
async function startServices(url: string, dir: string): Promise<{ paths: Paths; seat: RunningSeat }> {
  const paths: Paths = {
    socket: join(dir, 'fill.sock'),
    root: join(dir, 'root'),
    secrets: join(dir, 'secrets'),
    journal: join(dir, 'journal.log'),
    cache: join(dir, 'cache'),
  };
  mkdirSync(paths.root);
  mkdirSync(join(paths.secrets, 'module', MODULE), { recursive: true });
  writeFileSync(join(paths.secrets, 'module', MODULE, 'api-key'), API_KEY + '\n', { mode: 0o600 });
  // Only admin may create streams on this bus: every bucket is made by `init` before the seat starts.
  const init = ['init', '--nats', url, '--nkey', seed(USERS.admin), '--provider', 'postgres', '--nodes', '1'];
  const made = spawnSync(process.execPath, [join(ROOT, 'dist/server.js'), ...init], { encoding: 'utf8' });
  if (made.status !== 0) throw new Error(`init failed: ${made.stdout}${made.stderr}`);
  say(`3. made every bucket as admin: node dist/server.js ${init.join(' ').replace(url, '…').replace(seed(USERS.admin), '…/admin.nk')}`);
  const seat = startSeatProcess(url, { spawn: spawnChild, login: { nkey: seed(USERS.seat) } });
  say(`   started the seat (pid ${seat.pid})`);
  const engine = startChild('engine', process.execPath, [
    join(ROOT, 'dist/engine.js'),
    '--socket',
    paths.socket,
    '--root',
    paths.root,
    '--secrets',
    paths.secrets,
    '--journal',
    paths.journal,
  ]);
  await waitUntil(
    START_TIMEOUT_MS,
    () => existsSync(paths.socket),
    () => `the engine did not create ${paths.socket}`,
  );
  say(`   started the engine (pid ${engine.child.pid}) on ${paths.socket}, secret module/${MODULE}/api-key in ${paths.secrets}`);
  const client = startChild('client', process.execPath, [
    join(ROOT, 'dist/client.js'),
    '--node',
    NODE,
    '--nats',
    url,
    '--nkey',
    seed(USERS.client(NODE)),
    '--socket',
    paths.socket,
    '--cache',
    paths.cache,
  ]);
  say(`   started the client of node "${NODE}" (pid ${client.child.pid})`);
  return { paths, seat };
}

/** The sample templates, in name order. */
function sampleTemplates(): Templates {
  const names = readdirSync(SAMPLE_DIR)
    .filter((n) => statSync(join(SAMPLE_DIR, n)).isFile())
    .sort();
  return Object.fromEntries(names.map((name) => [name, new Uint8Array(readFileSync(join(SAMPLE_DIR, name)))]));
}

/** Step 4: the catalogue's archive and composition, mesh-config's values and the controller's assignment. */
async function publish(url: string, root: string, seat: RunningSeat): Promise<{ kv: InputBuckets; applied: KV; configDir: string; archives: ObjectStore }> {
  // The demo plays the catalogue, mesh-config and the controller: MESH's admin writes the inputs.
  nc = await connectBus({ servers: [url], name: 'mesh-demo', nkey: seed(USERS.admin) });
  const kv = await createInputBuckets(nc);
  const { archives, applied } = await waitForSeat(nc, seat, START_TIMEOUT_MS);
  const templates = sampleTemplates();
  const { composition, tar } = await publishModule(kv.modules, { store: archives, bucket: DEFAULT_ARCHIVES }, MODULE, {
    templates,
    provisioning: {
      files: [
        { path: '${dir:config}/web.conf', template: 'web.conf', mode: 'owned', change: 'restart' },
        { path: '${dir:config}/web.env', template: 'web.env', mode: 'owned', change: 'restart', fileMode: '0640' },
      ],
      secrets: [{ name: 'api-key' }],
    },
  });
  const { ref, digest } = composition.archive;
  say(`4. published the archive ${ref} (${Object.keys(templates).join(', ')}; ${tar.length} bytes, ${digest.slice(0, 19)}…)`);
  say(`   composition of "${MODULE}" in ${MODULES}`);
  for (const [key, value] of Object.entries(CONFIG)) await kv.config.put(`${NODE}.${MODULE}.${key}`, value);
  say(
    `   config ${Object.entries(CONFIG)
      .map(([k, v]) => `${k}=${v}`)
      .join(', ')} in ${CONFIG_BUCKET}`,
  );
  const configDir = join(root, 'etc', MODULE);
  await kv.assignments.put(
    `${NODE}.${MODULE}`,
    JSON.stringify({
      node: NODE,
      module: MODULE,
      placement: { dir: { config: configDir }, port: { http: 8080 } },
    }),
  );
  say(`   assigned "${MODULE}" to node "${NODE}" (config dir ${configDir}, port http 8080)`);
  return { kv, applied, configDir, archives };
}

/** The journal's lines (empty when the engine has not written it yet). */
function journalLines(file: string): string[] {
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
}

/** Step 5: the client's report says applied; the files and the journal show it. */
async function awaitApplied(applied: KV, paths: Paths, configDir: string): Promise<void> {
  let last: Report | undefined;
  const report = await waitUntil(
    APPLY_TIMEOUT_MS,
    async () => {
      const entry = await applied.get(`${NODE}.${MODULE}`);
      last = entry?.operation === 'PUT' ? (entry.json() as Report) : undefined;
      if (last?.state === 'failed') throw new DemoError(`the client reported ${NODE}.${MODULE} failed: ${last.reason}`, JSON.stringify(last, null, 2));
      return last?.state === 'applied' ? last : undefined;
    },
    () =>
      new DemoError(
        `no applied report for ${NODE}.${MODULE} within ${APPLY_TIMEOUT_MS} ms (last: ${last ? `${last.state}${last.reason ? `, ${last.reason}` : ''}` : 'no report'})`,
        `last report: ${JSON.stringify(last ?? null, null, 2)}`,
      ),
  );
  say(`5. ${APPLIED} ${NODE}.${MODULE} says state "${report.state}"`);
  for (const name of ['web.conf', 'web.env']) {
    const path = join(configDir, name);
    const mode = (statSync(path).mode & 0o777).toString(8).padStart(4, '0');
    say(`   ${path} (mode ${mode}):`);
    show(readFileSync(path, 'utf8'));
  }
  say('   the report:');
  show(JSON.stringify(report, null, 2));
  say(`   the journal ${paths.journal}:`);
  show(journalLines(paths.journal).join('\n'));
}

/** Step 6: one config value changed on the bus, timed until the file holds it and the program restarted. */
async function timeChange(kv: InputBuckets, paths: Paths, configDir: string): Promise<void> {
  const conf = join(configDir, 'web.conf');
  const restarts = () => journalLines(paths.journal).filter((l) => l.endsWith(` restart ${MODULE}`));
  const before = restarts().length;
  const wanted = `worker_processes ${NEW_WORKERS};`;
  say(`6. changing ${NODE}.${MODULE}.workers from ${CONFIG.workers} to ${NEW_WORKERS}`);
  const started = performance.now();
  await kv.config.put(`${NODE}.${MODULE}.workers`, NEW_WORKERS);
  await waitUntil(
    CHANGE_TIMEOUT_MS,
    () => readFileSync(conf, 'utf8').includes(wanted) && restarts().length > before,
    () =>
      new DemoError(
        `within ${CHANGE_TIMEOUT_MS} ms ${conf} did not show "${wanted}" with a new restart in the journal`,
        `file:\n${readFileSync(conf, 'utf8')}journal:\n${journalLines(paths.journal).join('\n')}`,
      ),
    1,
  );
  const ms = Math.round(performance.now() - started);
  say(`   ${conf} now:`);
  show(readFileSync(conf, 'utf8'));
  say("   the journal's new line:");
  show(restarts().slice(before).join('\n'));
  say(`   the change went from the bus to the file and a restart of ${MODULE} within ${ms} ms`);
}

const ZSH = 'shell:zsh:normal';
const ZSH_DIR = join(ROOT, 'demo', 'sample-zsh');

/** Step 7: a collection — `git` and `tools` each contribute an item to `shell:zsh:normal`, `zsh` assembles them. */
async function showCollection(kv: InputBuckets, archives: ObjectStore, root: string): Promise<void> {
  const read = (name: string) => new Uint8Array(readFileSync(join(ZSH_DIR, name)));
  const target = { store: archives, bucket: DEFAULT_ARCHIVES };
  const zshrc = join(root, 'etc', 'zsh', 'zshrc');
  await publishModule(kv.modules, target, 'zsh', {
    templates: { zshrc: read('zshrc') },
    provisioning: { files: [{ path: '${dir:config}/zshrc', template: 'zshrc', change: 'none' }], collections: [{ name: ZSH, comment: '#' }] },
  });
  for (const contributor of ['git', 'tools']) {
    await publishModule(kv.modules, target, contributor, {
      templates: { [`${contributor}.zsh`]: read(`${contributor}.zsh`) },
      provisioning: { items: [{ collection: ZSH, template: `${contributor}.zsh` }] },
    });
  }
  await kv.config.put(`${NODE}.git.log-lines`, '20');
  for (const module of ['zsh', 'git', 'tools']) {
    const placement = module === 'zsh' ? { dir: { config: join(root, 'etc', 'zsh') }, machine: { host: NODE } } : {};
    await kv.assignments.put(`${NODE}.${module}`, JSON.stringify({ node: NODE, module, placement }));
  }
  say(`7. collections: "git" and "tools" each contribute an item to ${ZSH}; "zsh" collects it into ${zshrc}`);
  const text = await waitUntil(
    APPLY_TIMEOUT_MS,
    () => {
      const now = existsSync(zshrc) ? readFileSync(zshrc, 'utf8') : '';
      return now.includes('# git\n') && now.includes('# tools\n') ? now : undefined;
    },
    () => `within ${APPLY_TIMEOUT_MS} ms ${zshrc} did not hold the items of git and tools`,
  );
  say(`   ${zshrc}, assembled from the items in byte order of their modules' names:`);
  show(text);
}

/** What step 8 started and must stop: the provider helper, its adapter, the vault and PostgreSQL. */
const bindingsToStop: (() => Promise<unknown> | unknown)[] = [];

/**
 * Step 8: bindings with a real PostgreSQL, when it is installed. Module `postgres` provides
 * `database`, module `app` requires it; the reference vault makes app's credential on its first ask, the provider
 * helper makes the role and the database, and app's file gets its bound values and its secret.
 */
async function showBindings(kv: InputBuckets, archives: ObjectStore, paths: Paths): Promise<void> {
  try {
    findPostgresBin();
  } catch {
    say('8. bindings: PostgreSQL is not installed, so this step is skipped. Install it with:');
    show('sudo apt-get install -y postgresql');
    return;
  }
  const db = await startPostgres();
  bindingsToStop.push(() => db.stop());
  say(`8. bindings: started PostgreSQL on ${db.host}:${db.port}`);
  const vaultNc = await connectBus({ servers: [busUrl], name: 'mesh-demo vault', nkey: seed(USERS.vault), inboxPrefix: INBOX_PREFIXES.vault });
  bindingsToStop.push(() => vaultNc.close());
  // The reference vault, its store the engine's --secrets: app's credential is made on its first ask.
  const vault = await startVault(vaultNc, [paths.secrets]);
  bindingsToStop.push(() => vault.stop());
  const target = { store: archives, bucket: DEFAULT_ARCHIVES };
  const providerDir = join(paths.root, 'etc', 'postgres');
  await publishModule(kv.modules, target, 'postgres', {
    templates: { 'consumers.json': '${consumers:database}' },
    provisioning: { files: [{ path: '${dir:config}/consumers.json', template: 'consumers.json' }], provides: [{ provision: 'database' }] },
  });
  await publishModule(kv.modules, target, 'app', {
    templates: {
      'db.env':
        'PGHOST=${bound:database:host}\nPGPORT=${bound:database:port}\nPGDATABASE=${bound:database:database}\nPGUSER=${bound:database:user}\nPGPASSWORD=${secret:db-password}\n',
    },
    provisioning: {
      files: [{ path: '${dir:config}/db.env', template: 'db.env', change: 'restart', fileMode: '0600' }],
      provisions: [{ provider: 'postgres', provision: 'database', name: 'db-password', values: { name: 'appdb' } }],
    },
  });
  const adapter = postgresAdapter({ host: db.host, port: db.port, user: db.adminUser, password: db.adminPassword });
  bindingsToStop.push(() => adapter.close());
  const providerNc = await connectBus({
    servers: [busUrl],
    name: 'mesh-demo provider',
    nkey: seed(USERS.provider('postgres')),
    inboxPrefix: INBOX_PREFIXES.provider('postgres'),
  });
  bindingsToStop.push(() => providerNc.close());
  const provider = runProvider({ nc: providerNc, provider: 'postgres', provision: 'database', adapter, consumersFile: join(providerDir, 'consumers.json') });
  bindingsToStop.push(() => provider.stop());
  await kv.assignments.put(`${NODE}.postgres`, JSON.stringify({ node: NODE, module: 'postgres', placement: { dir: { config: providerDir } } }));
  const started = performance.now();
  await kv.assignments.put(`${NODE}.app`, JSON.stringify({ node: NODE, module: 'app', placement: { dir: { config: join(paths.root, 'etc', 'app') } } }));
  say('   published "postgres" (provides database) and "app" (requires database, its password the secret db-password); assigned both');
  const envFile = join(paths.root, 'etc', 'app', 'db.env');
  const text = await waitUntil(
    APPLY_TIMEOUT_MS,
    () => (existsSync(envFile) ? readFileSync(envFile, 'utf8') : undefined),
    () => `within ${APPLY_TIMEOUT_MS} ms ${envFile} was not written`,
  );
  say(`   ${envFile}, filled from what the provider served (${Math.round(performance.now() - started)} ms after the assignment):`);
  show(text.replace(/^PGPASSWORD=.*$/m, 'PGPASSWORD=… (the credential, filled by the engine from the vault)'));
  const env = Object.fromEntries(
    text
      .trim()
      .split('\n')
      .map((l) => l.split('=', 2) as [string, string]),
  );
  const client = new pg.Client({
    host: env['PGHOST'],
    port: Number(env['PGPORT']),
    database: env['PGDATABASE'],
    user: env['PGUSER'],
    password: env['PGPASSWORD'],
  });
  await client.connect();
  const who = await client.query('select current_user, current_database()');
  await client.end();
  say(`   connected to PostgreSQL with it: current_user ${who.rows[0].current_user}, database ${who.rows[0].current_database}`);
}

async function main(): Promise<void> {
  checkPrerequisites();
  const dir = mkdtempSync(join(tmpdir(), 'mesh-demo-'));
  tempDir = dir;
  say(`2. temp dir ${dir}`);
  const url = await startBus(dir);
  const { paths, seat } = await startServices(url, dir);
  const { kv, applied, configDir, archives } = await publish(url, paths.root, seat);
  await awaitApplied(applied, paths, configDir);
  await timeChange(kv, paths, configDir);
  await showCollection(kv, archives, paths.root);
  await showBindings(kv, archives, paths);
  if (once) {
    say('9. done (--once): stopping the mesh');
    await shutdown(0);
    return;
  }
  say('9. the mesh keeps running: the client fills again whenever a value changes on the bus');
  show(`files:   ${configDir}\njournal: ${paths.journal}\nbus:     ${url}`);
  say('press Ctrl-C to stop');
}

main().catch((err: DemoError) => fail(err?.message ?? String(err), err?.detail));
