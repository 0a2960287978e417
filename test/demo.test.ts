// The local demo (demo/run.ts) run as a user runs it: the whole mesh comes up, fills the sample
// module, takes a config change in well under a second, and leaves no process or temp dir behind.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DEMO = join(ROOT, 'demo', 'run.ts');
const RUN_LIMIT_MS = 60_000;

/** What one run of the demo printed and how it ended. */
type DemoRun = { code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string; ms: number; timedOut: boolean };

/**
 * Runs the demo; `whenPrinted` may act on the child once stdout matches. Past the limit the demo
 * gets SIGTERM (so it can still stop its children) and, 10 s later, SIGKILL.
 */
function runDemo(args: string[], env: NodeJS.ProcessEnv = {}, whenPrinted?: [RegExp, (pid: number) => void]): Promise<DemoRun> {
  const started = Date.now();
  // As `npm run demo` runs it: node with tsx's loader, one process, so a signal reaches the demo itself.
  const child = spawn(process.execPath, ['--import', 'tsx', DEMO, ...args], {
    cwd: ROOT,
    env: { ...process.env, NO_COLOR: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  let acted = false;
  let timedOut = false;
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    stdout += d;
    if (whenPrinted && !acted && whenPrinted[0].test(stdout)) {
      acted = true;
      whenPrinted[1](child.pid!);
    }
  });
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const term = setTimeout(() => {
    timedOut = true;
    child.kill('SIGTERM');
  }, RUN_LIMIT_MS);
  const kill = setTimeout(() => child.kill('SIGKILL'), RUN_LIMIT_MS + 10_000);
  return new Promise((resolve) => {
    child.once('close', (code, signal) => {
      clearTimeout(term);
      clearTimeout(kill);
      resolve({ code, signal, stdout, stderr, ms: Date.now() - started, timedOut });
    });
  });
}

/** Whether a process with this pid still exists. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The pids the demo said it started (nats-server, seat, engine, client). */
function startedPids(stdout: string): number[] {
  return [...stdout.matchAll(/\(pid (\d+)\)/g)].map((m) => Number(m[1]));
}

/** The temp dir the demo said it made. */
function tempDirOf(stdout: string): string {
  const dir = /^demo: 2\. temp dir (\S+)$/m.exec(stdout)?.[1];
  assert.ok(dir, `no temp dir line in stdout:\n${stdout}`);
  return dir!;
}

function describe(run: DemoRun): string {
  return `exit ${run.code ?? run.signal} after ${run.ms} ms${run.timedOut ? ' (timed out)' : ''}\nstdout:\n${run.stdout}\nstderr:\n${run.stderr.slice(-4000)}`;
}

function assertNothingLeft(run: DemoRun): void {
  const pids = startedPids(run.stdout);
  assert.is(pids.length, 4, `expected four started pids:\n${run.stdout}`);
  for (const pid of pids) assert.not.ok(alive(pid), `pid ${pid} is still running`);
  const dir = tempDirOf(run.stdout);
  assert.not.ok(existsSync(dir), `${dir} is still there`);
}

test('the demo fills the sample module, takes a config change within a second, and cleans up (--once)', async () => {
  const run = await runDemo(['--once']);
  assert.is(run.code, 0, describe(run));
  assert.not.ok(run.timedOut, describe(run));
  const out = run.stdout;
  // The first fill: config and placement values, the secret filled by the engine, foreign text and escapes as written.
  for (const line of [
    'worker_processes 2;',
    'listen 8080;',
    'server_name demo.example.org;',
    'return 200 "hello from demo.example.org\\n";',
    'access_log ${HOME}/log/web-access.log;',
    'add_header X-Served-By ${host};',
    'MODE=production',
    'API_KEY=demo-api-key-4f1c9a',
  ])
    assert.ok(out.includes(line), `stdout lacks ${JSON.stringify(line)}:\n${out}`);
  assert.match(out, /web\.env \(mode 0640\)/);
  assert.match(out, /"state": "applied"/);
  assert.match(out, /says state "applied"/);
  assert.match(out, /^ {4}\S+ restart web$/m);
  // The change: the new value on disk, and the time it took.
  assert.ok(out.indexOf('worker_processes 8;') > out.indexOf('worker_processes 2;'), `no rewritten file after the change:\n${out}`);
  const within = /within (\d+) ms/.exec(out);
  assert.ok(within, `no "within <n> ms" line:\n${out}`);
  assert.ok(Number(within![1]) < 1000, `the change took ${within![1]} ms`);
  // The collection: both contributors' items, in name order, each under its comment line.
  assert.ok(
    out.includes('    # git\n    alias gs="git status"\n    alias gl="git log --oneline -20"\n    # tools\n    alias ll="ls -la"\n'),
    `no assembled zshrc:\n${out}`,
  );
  // The bindings: PostgreSQL made the role and database the consumer connects with.
  assert.match(out, /connected to PostgreSQL with it: current_user app_demo, database appdb/);
  assert.not.match(out, /\$\{config:|\$\{port:|\$\{secret:|\$\{collected:|\$\{bound:/, 'a placeholder was left unfilled');
  assertNothingLeft(run);
});

test('Ctrl-C (SIGINT) on a running demo stops every child, removes the temp dir and exits 0', async () => {
  const run = await runDemo([], { DEMO_ONCE: '' }, [/press Ctrl-C to stop/, (pid) => process.kill(pid, 'SIGINT')]);
  assert.is(run.code, 0, describe(run));
  assert.match(run.stdout, /SIGINT: stopping the mesh/);
  assert.match(run.stdout, /stopped client[\s\S]*stopped engine[\s\S]*stopped seat[\s\S]*stopped nats-server/);
  assertNothingLeft(run);
});

test('without nats-server on PATH the demo says how to install it and exits 1', async () => {
  const empty = mkdtempSync(join(tmpdir(), 'mesh-demo-path-'));
  try {
    const run = await runDemo(['--once'], { PATH: empty });
    assert.is(run.code, 1, describe(run));
    assert.match(run.stdout, /nats-server is not on PATH/);
    assert.match(run.stdout, /sudo apt-get install -y nats-server/);
    assert.is(startedPids(run.stdout).length, 0);
  } finally {
    rmSync(empty, { recursive: true, force: true });
  }
});

test.run();
