// The local demo (demo/run.ts) run as a user runs it: the README's lab comes up from a release,
// fills its modules, takes a config change in well under a second, and leaves no process or temp dir behind.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tempDir } from './helpers/temp.ts';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DEMO = join(ROOT, 'demo', 'run.ts');
const RUN_LIMIT_MS = 120_000;

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

/** The pids of the processes whose command line names `dir` (the lab's programs run from inside it). */
function processesIn(dir: string): number[] {
  const pids: number[] = [];
  for (const name of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    try {
      if (readFileSync(`/proc/${name}/cmdline`, 'utf8').includes(dir)) pids.push(Number(name));
    } catch {
      // Gone meanwhile.
    }
  }
  return pids;
}

/** The temp dir the demo said it made. */
function tempDirOf(stdout: string): string {
  const dir = /^demo: temp dir (\S+)$/m.exec(stdout)?.[1];
  assert.ok(dir, `no temp dir line in stdout:\n${stdout}`);
  return dir!;
}

function describe(run: DemoRun): string {
  return `exit ${run.code ?? run.signal} after ${run.ms} ms${run.timedOut ? ' (timed out)' : ''}\nstdout:\n${run.stdout}\nstderr:\n${run.stderr.slice(-4000)}`;
}

function assertNothingLeft(run: DemoRun): void {
  const dir = tempDirOf(run.stdout);
  assert.equal(processesIn(dir), [], `processes still run from ${dir}`);
  assert.not.ok(existsSync(dir), `${dir} is still there`);
}

test('the demo runs the README lab from a release, takes a config change within a second, and cleans up (--once)', async () => {
  const run = await runDemo(['--once']);
  assert.is(run.code, 0, describe(run));
  assert.not.ok(run.timedOut, describe(run));
  const out = run.stdout;
  // The first fill: config and placement values, the secret filled by the engine, foreign text and escapes as written.
  for (const line of [
    'worker_processes 2;',
    'listen 8080;',
    'server_name n1.example.org;',
    'return 200 "hello from n1.example.org\\n";',
    'access_log ${HOME}/log/web-access.log;',
    'add_header X-Served-By ${host};',
    'MODE=production',
    'API_KEY=an-api-key',
    'workers: 2',
  ])
    assert.ok(out.includes(line), `stdout lacks ${JSON.stringify(line)}:\n${out}`);
  assert.match(out, /web\.env \(mode 0640\)/);
  assert.match(out, /status exited 1/, 'the mistake shows in status');
  // The binding (PostgreSQL is installed wherever the tests run): app restarted with its credential.
  assert.match(out, /restart app$/m);
  // The change: the new value on disk, and the time it took.
  assert.match(out, /worker_processes 16;/);
  const within = /within (\d+) ms/.exec(out);
  assert.ok(within, `no "within <n> ms" line:\n${out}`);
  assert.ok(Number(within![1]) < 1000, `the change took ${within![1]} ms`);
  assert.not.match(out, /\$\{config:|\$\{port:|\$\{secret:|\$\{bound:/, 'a placeholder was left unfilled');
  assertNothingLeft(run);
});

test('Ctrl-C (SIGINT) on a running demo stops every child, removes the temp dir and exits 0', async () => {
  const run = await runDemo([], { DEMO_ONCE: '' }, [/press Ctrl-C to stop/, (pid) => process.kill(pid, 'SIGINT')]);
  assert.is(run.code, 0, describe(run));
  assert.match(run.stdout, /SIGINT: stopping the mesh/);
  assert.match(run.stdout, /stopped the lab/);
  assertNothingLeft(run);
});

test('without nats-server on PATH the demo says how to install it and exits 1', async () => {
  const empty = tempDir('mesh-demo-path-');
  try {
    const run = await runDemo(['--once'], { PATH: empty });
    assert.is(run.code, 1, describe(run));
    assert.match(run.stdout, /nats-server is not on PATH/);
    assert.match(run.stdout, /sudo apt-get install -y nats-server/);
    assert.not.match(run.stdout, /temp dir/);
  } finally {
    rmSync(empty, { recursive: true, force: true });
  }
});

test.run();
