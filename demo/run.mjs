// The local demo (`npm run demo`): a one-node mesh on this machine (nats-server, the seat, the
// reference engine and a node client) fed the sample module of demo/sample/ the way the catalogue,
// mesh-config and the controller would feed it; then one config change timed from bus to disk.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { accessSync, constants, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { connect as connectTcp, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { connect } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { Objm } from '@nats-io/obj';
import { packTar } from 'modern-tar';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SAMPLE_DIR = join(ROOT, 'demo', 'sample');
const NODE = 'demo';
const MODULE = 'web';
const ARCHIVES = 'mesh-catalog_archives';
const INPUT_BUCKETS = { modules: 'mesh-catalog_modules', assignments: 'mesh-controller_assignments', config: 'mesh-config_resolved' };
const APPLIED = 'mesh-provisioner_applied';
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
const dim = process.stderr.isTTY && !process.env['NO_COLOR'] ? (s) => `\x1b[2m${s}\x1b[0m` : (s) => s;

/** Every process the demo started, in start order; stopped in reverse. */
const children = [];
let tempDir;
let nc;
let stopping;

/** Prints one step line on stdout. */
function say(line) {
  process.stdout.write(`demo: ${line}\n`);
}

/** Prints a block of text indented under the last step line. */
function show(text) {
  process.stdout.write(text.replace(/\n$/, '').split('\n').map((l) => `    ${l}`).join('\n') + '\n');
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Polls `probe` until it returns a truthy value; throws `describe()` (an error or its message) after `ms`. */
async function waitUntil(ms, probe, describe, everyMs = 50) {
  const until = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > until) {
      const err = describe();
      throw err instanceof Error ? err : new Error(err);
    }
    await sleep(everyMs);
  }
}

/** The absolute path of `name` on PATH, or undefined. */
function onPath(name) {
  for (const dir of (process.env['PATH'] ?? '').split(delimiter).filter(Boolean)) {
    try {
      accessSync(join(dir, name), constants.X_OK);
      return join(dir, name);
    } catch {}
  }
  return undefined;
}

/** A free TCP port on 127.0.0.1. */
function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** Whether something accepts TCP connections on 127.0.0.1:`port`. */
function accepts(port) {
  return new Promise((resolve) => {
    const sock = connectTcp(port, '127.0.0.1');
    sock.once('connect', () => { sock.destroy(); resolve(true); });
    sock.once('error', () => resolve(false));
  });
}

/** The environment without anything that would steer a bundle (MESH_*) from the user's shell. */
function childEnv() {
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('MESH_')));
}

/**
 * Starts a child in its own process group (so a Ctrl-C reaches only the demo, which then stops
 * the children in order); the lines `worth` accepts are echoed on stderr and kept for a failure.
 */
function startChild(name, cmd, args, worth = () => true) {
  const child = spawn(cmd, args, { cwd: ROOT, env: childEnv(), stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const entry = { name, child, tail: [], done: false };
  // A child that could not be spawned gives 'error' and maybe never 'close': either one ends it.
  entry.exited = new Promise((resolve) => {
    child.once('close', (code, signal) => resolve({ code, signal }));
    child.once('error', (err) => resolve({ code: null, signal: null, error: err }));
  }).then((end) => {
    entry.done = true;
    if (!stopping) fail(end.error ? `${name} could not start: ${end.error.message}` : `${name} exited unexpectedly (${end.signal ?? `code ${end.code}`})`);
    return end;
  });
  const keep = (line) => {
    if (!worth(line)) return;
    entry.tail.push(line);
    if (entry.tail.length > TAIL_LINES) entry.tail.shift();
    process.stderr.write(dim(`[${name}] ${line}`) + '\n');
  };
  for (const stream of [child.stdout, child.stderr]) {
    let partial = '';
    stream.setEncoding('utf8').on('data', (chunk) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop();
      lines.forEach(keep);
    }).on('end', () => partial && keep(partial));
  }
  children.push(entry);
  return entry;
}

/** SIGTERM, then SIGKILL after the grace time; resolves once the child has exited. */
async function stopChild(entry) {
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
function shutdown(code) {
  stopping ??= (async () => {
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
  constructor(message, detail) {
    super(message);
    this.detail = detail;
  }
}

/** Says why the demo failed, with the detail and the last lines of every child, and stops everything. */
function fail(reason, detail) {
  if (stopping) return stopping;
  process.stderr.write(`demo: FAILED: ${reason}\n${detail ? detail.replace(/\n?$/, '\n') : ''}`);
  for (const { name, tail } of children) {
    if (tail.length === 0) continue;
    process.stderr.write(`demo: last lines of [${name}]:\n${tail.map((l) => `    ${l}`).join('\n')}\n`);
  }
  say(`FAILED: ${reason}`);
  return shutdown(1);
}

for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    if (stopping) return;
    say(`${signal}: stopping the mesh`);
    void shutdown(0);
  });
}
process.on('unhandledRejection', (err) => void fail(`unexpected: ${err?.message ?? err}`, err?.stack));
// Last resort (an exit the shutdown did not run): no child outlives the demo, no temp dir stays.
process.on('exit', () => {
  for (const { child, done } of children) if (!done) child.kill('SIGKILL');
  if (tempDir && existsSync(tempDir)) rmSync(tempDir, { recursive: true, force: true });
});

/** Step 1: nats-server on PATH and the bundles built, or how to get them. */
function checkPrerequisites() {
  const nats = onPath('nats-server');
  if (!nats) {
    say('nats-server is not on PATH. Install it:');
    show('Debian/Ubuntu:  sudo apt-get install -y nats-server\nelsewhere:      a release from https://github.com/nats-io/nats-server/releases (https://nats.io)');
    process.exit(1);
  }
  const missing = ['server', 'client', 'engine'].filter((b) => !existsSync(join(ROOT, 'dist', `${b}.js`)));
  if (missing.length > 0) {
    say(`dist/${missing[0]}.js is missing: run \`npm run demo\` (it builds first) or \`node build.mjs\``);
    process.exit(1);
  }
  say(`1. nats-server found at ${nats}`);
}

/** Step 2: a temp dir and a JetStream nats-server on a free port. */
async function startNats() {
  tempDir = mkdtempSync(join(tmpdir(), 'mesh-demo-'));
  say(`2. temp dir ${tempDir}`);
  const port = await freePort();
  const nats = startChild('nats-server', 'nats-server', ['-js', '-a', '127.0.0.1', '-p', String(port), '-sd', join(tempDir, 'js')],
    (line) => /\[(WRN|ERR|FTL)\]/.test(line));
  await waitUntil(START_TIMEOUT_MS, () => accepts(port), () => `nats-server did not listen on ${port} within ${START_TIMEOUT_MS} ms`);
  const url = `nats://127.0.0.1:${port}`;
  say(`   nats-server is up on ${url} (pid ${nats.child.pid})`);
  return url;
}

/** Step 3: the seat, the engine (with the module's secret) and the node client. */
async function startMesh(url) {
  const paths = {
    socket: join(tempDir, 'fill.sock'), root: join(tempDir, 'root'), secrets: join(tempDir, 'secrets'),
    journal: join(tempDir, 'journal.log'), cache: join(tempDir, 'cache'),
  };
  mkdirSync(paths.root);
  mkdirSync(join(paths.secrets, 'module', MODULE), { recursive: true });
  writeFileSync(join(paths.secrets, 'module', MODULE, 'api-key'), API_KEY + '\n', { mode: 0o600 });
  const seat = startChild('seat', process.execPath, [join(ROOT, 'dist/server.js'), '--nats', url]);
  say(`3. started the seat (pid ${seat.child.pid})`);
  const engine = startChild('engine', process.execPath, [join(ROOT, 'dist/engine.js'),
    '--socket', paths.socket, '--root', paths.root, '--secrets', paths.secrets, '--journal', paths.journal]);
  await waitUntil(START_TIMEOUT_MS, () => existsSync(paths.socket), () => `the engine did not create ${paths.socket}`);
  say(`   started the engine (pid ${engine.child.pid}) on ${paths.socket}, secret module/${MODULE}/api-key in ${paths.secrets}`);
  const client = startChild('client', process.execPath, [join(ROOT, 'dist/client.js'),
    '--node', NODE, '--nats', url, '--socket', paths.socket, '--cache', paths.cache]);
  say(`   started the client of node "${NODE}" (pid ${client.child.pid})`);
  return paths;
}

/** The sample templates as one tar, in name order. */
async function sampleTar() {
  const names = readdirSync(SAMPLE_DIR).filter((n) => statSync(join(SAMPLE_DIR, n)).isFile()).sort();
  const entries = names.map((name) => {
    const body = readFileSync(join(SAMPLE_DIR, name));
    return { header: { name, size: body.length, type: 'file', mode: 0o644 }, body: new Uint8Array(body) };
  });
  return { names, tar: await packTar(entries) };
}

/** Step 4: the catalogue's archive and composition, mesh-config's values and the controller's assignment. */
async function publishModule(url, root) {
  nc = await connect({ servers: url, name: 'mesh-demo' });
  const js = jetstream(nc);
  const kvm = new Kvm(js);
  const kv = {};
  for (const [role, name] of Object.entries(INPUT_BUCKETS)) kv[role] = await kvm.create(name, { history: 1 });
  const store = await waitUntil(START_TIMEOUT_MS, async () => {
    try {
      const s = await new Objm(js).open(ARCHIVES);
      await s.status();
      return s;
    } catch {
      return undefined;
    }
  }, () => `the seat did not create the object store ${ARCHIVES} within ${START_TIMEOUT_MS} ms`, 100);
  const { names, tar } = await sampleTar();
  const archive = `${MODULE}-1.tar`;
  await store.putBlob({ name: archive }, tar);
  const digest = 'sha256:' + createHash('sha256').update(tar).digest('hex');
  say(`4. published the archive obj://${ARCHIVES}/${archive} (${names.join(', ')}; ${tar.length} bytes, ${digest.slice(0, 19)}…)`);
  await kv.modules.put(MODULE, JSON.stringify({
    module: MODULE, build: '1', published: true,
    archive: { ref: `obj://${ARCHIVES}/${archive}`, digest },
    provisioning: {
      files: [
        { path: '${dir:config}/web.conf', template: 'web.conf', mode: 'owned', change: 'restart' },
        { path: '${dir:config}/web.env', template: 'web.env', mode: 'owned', change: 'restart', fileMode: '0640' },
      ],
      secrets: [{ name: 'api-key' }],
    },
  }));
  say(`   composition of "${MODULE}" in ${INPUT_BUCKETS.modules}`);
  for (const [key, value] of Object.entries(CONFIG)) await kv.config.put(`${NODE}.${MODULE}.${key}`, value);
  say(`   config ${Object.entries(CONFIG).map(([k, v]) => `${k}=${v}`).join(', ')} in ${INPUT_BUCKETS.config}`);
  const configDir = join(root, 'etc', MODULE);
  await kv.assignments.put(`${NODE}.${MODULE}`, JSON.stringify({
    node: NODE, module: MODULE, placement: { dir: { config: configDir }, port: { http: 8080 } },
  }));
  say(`   assigned "${MODULE}" to node "${NODE}" (config dir ${configDir}, port http 8080)`);
  return { kv, configDir };
}

/** The journal's lines (empty when the engine has not written it yet). */
function journalLines(file) {
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
}

/** Step 5: the client's report says applied; the files and the journal show it. */
async function awaitApplied(paths, configDir) {
  const applied = await new Kvm(jetstream(nc)).open(APPLIED);
  let last;
  const report = await waitUntil(APPLY_TIMEOUT_MS, async () => {
    const entry = await applied.get(`${NODE}.${MODULE}`);
    last = entry?.operation === 'PUT' ? entry.json() : undefined;
    if (last?.state === 'failed') throw new DemoError(`the client reported ${NODE}.${MODULE} failed: ${last.reason}`, JSON.stringify(last, null, 2));
    return last?.state === 'applied' ? last : undefined;
  }, () => new DemoError(
    `no applied report for ${NODE}.${MODULE} within ${APPLY_TIMEOUT_MS} ms (last: ${last ? `${last.state}${last.reason ? `, ${last.reason}` : ''}` : 'no report'})`,
    `last report: ${JSON.stringify(last ?? null, null, 2)}`));
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
async function timeChange(kv, paths, configDir) {
  const conf = join(configDir, 'web.conf');
  const restarts = () => journalLines(paths.journal).filter((l) => l.endsWith(` restart ${MODULE}`));
  const before = restarts().length;
  const wanted = `worker_processes ${NEW_WORKERS};`;
  say(`6. changing ${NODE}.${MODULE}.workers from ${CONFIG.workers} to ${NEW_WORKERS}`);
  const started = performance.now();
  await kv.config.put(`${NODE}.${MODULE}.workers`, NEW_WORKERS);
  await waitUntil(CHANGE_TIMEOUT_MS, () => readFileSync(conf, 'utf8').includes(wanted) && restarts().length > before,
    () => new DemoError(`within ${CHANGE_TIMEOUT_MS} ms ${conf} did not show "${wanted}" with a new restart in the journal`,
      `file:\n${readFileSync(conf, 'utf8')}journal:\n${journalLines(paths.journal).join('\n')}`), 1);
  const ms = Math.round(performance.now() - started);
  say(`   ${conf} now:`);
  show(readFileSync(conf, 'utf8'));
  say('   the journal\'s new line:');
  show(restarts().slice(before).join('\n'));
  say(`   the change went from the bus to the file and a restart of ${MODULE} within ${ms} ms`);
}

async function main() {
  checkPrerequisites();
  const url = await startNats();
  const paths = await startMesh(url);
  const { kv, configDir } = await publishModule(url, paths.root);
  await awaitApplied(paths, configDir);
  await timeChange(kv, paths, configDir);
  if (once) {
    say('7. done (--once): stopping the mesh');
    await shutdown(0);
    return;
  }
  say('7. the mesh keeps running: the client fills again whenever a value changes on the bus');
  show(`files:   ${configDir}\njournal: ${paths.journal}\nbus:     ${url}`);
  say('press Ctrl-C to stop');
}

main().catch((err) => fail(err?.message ?? String(err), err?.detail));
