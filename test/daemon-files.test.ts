// The files the daemons read from their own flags (issue 31 item 8, the operator's pass): the
// PostgreSQL provider's --pg-password-file and --consumers, the reference engine's --declare and
// --state take a regular file only, refused at once naming the flag, the path and what it is, within
// a limit the refusal names; a consumers file or a declaration that becomes a FIFO or a device while
// the daemon runs is said once and never read, and SIGTERM still ends the daemon within its bound.
// Run as the bundles, each copied alone.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MAX_DECLARATION_BYTES } from '../src/engine/declaration.ts';
import { MAX_CONSUMERS_FILE_BYTES } from '../src/sdk/consumers-file.ts';
import { DEFAULT_STOP_TIMEOUT_MS } from '../src/sdk/provider.ts';
import { MAX_PASSWORD_FILE_BYTES } from '../examples/postgres-provider/options.ts';
import { cleanupBundles, copyBundleAlone, ensureBuilt, runBundle, startBundle, type Running } from './helpers/bundle.ts';
import { startNats } from './helpers/nats.ts';
import { sleep } from './helpers/wait.ts';
import { tempDir } from './helpers/temp.ts';

/** main.ts's bound on a stop (the helper's own, then 3 s for PostgreSQL and the bus), and the 2 s runMain gives a loop held open. */
const STOP_MS = DEFAULT_STOP_TIMEOUT_MS + 3000 + 2000;

let dir = '';
let fifo = '';
let provider = '';
let engine = '';

/** A file of `bytes` bytes that takes no room: its size is what a look at it says. */
function sparse(name: string, bytes: number): string {
  const path = join(dir, name);
  closeSync(openSync(path, 'w'));
  execFileSync('truncate', ['-s', String(bytes), path]);
  return path;
}

/** A FIFO at `path` with no writer: a blocking open or read of it never returns. */
function mkfifo(path: string): string {
  execFileSync('mkfifo', [path]);
  return path;
}

test.before(() => {
  ensureBuilt('postgres-provider');
  ensureBuilt('engine');
  provider = copyBundleAlone('postgres-provider');
  engine = copyBundleAlone('engine');
  dir = tempDir('mesh-daemon-files-');
  fifo = mkfifo(join(dir, 'pipe'));
  writeFileSync(join(dir, 'pw'), 'secret\n', { mode: 0o600 });
});

test.after(() => {
  cleanupBundles();
  rmSync(dir, { recursive: true, force: true });
});

/** Sends SIGTERM and resolves with the exit code and how long the exit took (SIGKILL past `bound`: code null). */
async function terminate(running: Running, bound: number): Promise<{ code: number | null; ms: number }> {
  const started = Date.now();
  running.child.kill('SIGTERM');
  const killer = setTimeout(() => running.kill(), bound + 5000);
  const { code } = await running.exited;
  clearTimeout(killer);
  return { code, ms: Date.now() - started };
}

type Case = [what: string, args: string[], line: RegExp];

/** Each case exits 2 at once with its one line; nothing runs. */
async function refusedAtOnce(bundleDir: string, name: string, cases: Case[], env: Record<string, string> = {}): Promise<void> {
  for (const [what, args, line] of cases) {
    const ran = await runBundle('node', bundleDir, name, args, env, 15_000);
    assert.is(ran.code, 2, `${what}: exit ${ran.code} (signal ${ran.signal}) after ${ran.ms} ms: ${ran.stderr}`);
    assert.ok(ran.ms < 5000, `${what}: refused at once, not after ${ran.ms} ms`);
    const said = ran.stderr.split('\n').filter((l) => l !== '');
    assert.is(said.length, 1, `${what}: one line: ${ran.stderr}`);
    assert.match(said[0]!, line, what);
  }
}

test('postgres-provider: --pg-password-file and --consumers of /dev/zero, a FIFO, a directory or a file past its limit exit 2 at once, naming the flag, the path and why', async () => {
  const consumers = join(dir, 'none.json');
  const pw = ['--consumers', consumers, '--pg-password-file'];
  await refusedAtOnce(
    provider,
    'postgres-provider',
    [
      ['password /dev/zero', [...pw, '/dev/zero'], /^postgres-provider: --pg-password-file: \/dev\/zero is a character device, not a regular file$/],
      ['password FIFO', [...pw, fifo], /^postgres-provider: --pg-password-file: \S+\/pipe is a FIFO, not a regular file$/],
      [
        'password past the limit',
        [...pw, sparse('big.pw', MAX_PASSWORD_FILE_BYTES + 1)],
        new RegExp(
          `^postgres-provider: --pg-password-file: \\S+big\\.pw is ${MAX_PASSWORD_FILE_BYTES + 1} bytes, past the limit of ${MAX_PASSWORD_FILE_BYTES} bytes$`,
        ),
      ],
      ['consumers /dev/zero', ['--consumers', '/dev/zero'], /^postgres-provider: --consumers: \/dev\/zero is a character device, not a regular file$/],
      ['consumers FIFO', ['--consumers', fifo], /^postgres-provider: --consumers: \S+\/pipe is a FIFO, not a regular file$/],
      ['consumers directory', ['--consumers', dir], /^postgres-provider: --consumers: \S+ is a directory, not a regular file$/],
      [
        'consumers past the limit',
        ['--consumers', sparse('big.json', MAX_CONSUMERS_FILE_BYTES + 1)],
        new RegExp(
          `^postgres-provider: --consumers: \\S+big\\.json is ${MAX_CONSUMERS_FILE_BYTES + 1} bytes, past the limit of ${MAX_CONSUMERS_FILE_BYTES} bytes$`,
        ),
      ],
    ],
    { PGPASSWORD: 'x' },
  );
  // Set by a unit's env file: the variable is what to edit, and is named.
  await refusedAtOnce(
    provider,
    'postgres-provider',
    [['PGPASSWORD_FILE FIFO', ['--consumers', consumers], /^postgres-provider: PGPASSWORD_FILE: \S+\/pipe is a FIFO, not a regular file$/]],
    { PGPASSWORD_FILE: fifo },
  );
  await refusedAtOnce(
    provider,
    'postgres-provider',
    [['MESH_CONSUMERS_FILE /dev/zero', [], /^postgres-provider: MESH_CONSUMERS_FILE: \/dev\/zero is a character device, not a regular file$/]],
    { MESH_CONSUMERS_FILE: '/dev/zero', PGPASSWORD: 'x' },
  );
});

test('engine: --declare and --state of /dev/zero, a FIFO or a file past its limit exit 2 at once, naming the flag, the path and why', async () => {
  const root = ['--root', dir, '--socket', join(dir, 'fill.sock')];
  await refusedAtOnce(engine, 'engine', [
    ['declare /dev/zero', [...root, '--declare', '/dev/zero'], /^engine: --declare: \/dev\/zero is a character device, not a regular file$/],
    ['declare FIFO', [...root, '--declare', fifo], /^engine: --declare: \S+\/pipe is a FIFO, not a regular file$/],
    [
      'declare past the limit',
      [...root, '--declare', sparse('big-declare.json', MAX_DECLARATION_BYTES + 1)],
      new RegExp(`^engine: --declare: \\S+ is ${MAX_DECLARATION_BYTES + 1} bytes, past the limit of ${MAX_DECLARATION_BYTES} bytes$`),
    ],
    ['state FIFO', [...root, '--declare', join(dir, 'none.json'), '--state', fifo], /^engine: --state: \S+\/pipe is a FIFO, not a regular file$/],
  ]);
  await refusedAtOnce(engine, 'engine', [['MESH_ENGINE_DECLARE FIFO', root, /^engine: MESH_ENGINE_DECLARE: \S+\/pipe is a FIFO, not a regular file$/]], {
    MESH_ENGINE_DECLARE: fifo,
  });
});

test('postgres-provider: a consumers file that becomes a FIFO, then /dev/zero, is said once each at error however often read, never read; SIGTERM exits 0 within its bound', async () => {
  const nats = await startNats();
  const consumers = join(dir, 'consumers.json');
  writeFileSync(consumers, '[]');
  // Read again every 100 ms as well as on each change: a refusal read again is not said again.
  const running = startBundle('node', provider, 'postgres-provider', ['--consumers', consumers, '--nats', nats.url, '--pg-port', '1', '--recheck-ms', '100'], {
    PGPASSWORD_FILE: join(dir, 'pw'),
  });
  try {
    await running.waitForLog(/postgres_bound: 0 bound entries of database at start/, 15_000);
    // As an engine would put it in place: a rename, which the helper's directory watch hears.
    renameSync(mkfifo(join(dir, 'consumers.fifo')), consumers);
    await running.waitForLog(/error consumers file \S+\/consumers\.json is a FIFO, not a regular file: not read; keeping the last good list \(0 consumers\)$/);
    symlinkSync('/dev/zero', join(dir, 'consumers.zero'));
    renameSync(join(dir, 'consumers.zero'), consumers);
    await running.waitForLog(/error consumers file \S+\/consumers\.json is a character device, not a regular file: not read; /);
    await sleep(500);
    writeFileSync(join(dir, 'consumers.json.tmp'), '[]');
    renameSync(join(dir, 'consumers.json.tmp'), consumers);
    await running.waitForLog(/consumers file \S+\/consumers\.json is a regular file again: reading it$/);
    const stopped = await terminate(running, STOP_MS);
    assert.is(stopped.code, 0, running.stderr());
    assert.ok(stopped.ms < STOP_MS, `stopped in ${stopped.ms} ms: ${running.stderr()}`);
    assert.is(running.stderr().match(/is a character device, not a regular file/g)?.length, 1, running.stderr());
    assert.is(running.stderr().match(/is a FIFO, not a regular file/g)?.length, 1, running.stderr());
  } finally {
    running.kill();
    await nats.cleanup();
  }
});

test('engine: a declaration that becomes a FIFO is said, never read, and removes nothing; SIGTERM exits 0', async () => {
  const root = mkdtempSync(join(dir, 'root-'));
  const declare = join(root, 'declare.json');
  writeFileSync(declare, JSON.stringify([join(root, 'a.conf')]));
  const running = startBundle('node', engine, 'engine', [
    '--root',
    root,
    '--socket',
    join(root, 'fill.sock'),
    '--declare',
    declare,
    '--journal',
    join(root, 'journal.log'),
  ]);
  try {
    await running.waitForLog(/engine listening on /);
    renameSync(mkfifo(join(root, 'declare.fifo')), declare);
    await running.waitForLog(/declaration changed: declaration unreadable: \S+\/declare\.json is a FIFO, not a regular file; no file removed$/);
    const stopped = await terminate(running, 5000);
    assert.is(stopped.code, 0, running.stderr());
    assert.ok(stopped.ms < 5000, `stopped in ${stopped.ms} ms: ${running.stderr()}`);
  } finally {
    running.kill();
  }
});

test.run();
