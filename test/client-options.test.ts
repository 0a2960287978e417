// The client's flags (DESIGN §9, §10, §11; --once, --dry-run, --timeout and lint of issue 14): defaults,
// environment, and a bad value refused in one line naming the flag, by the parser and by the bundle's exit code.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import { DEFAULT_ENGINE_TIMEOUT_MS } from '../src/client/handoff/fill-socket.ts';
import { clientHelp, parseClientOptions } from '../src/client/command-line.ts';
import type { ClientOptions } from '../src/client/options.ts';
import { cleanupBundles, copyBundleAlone, ensureBuilt, runBundle } from './helpers/bundle.ts';

test.after(() => cleanupBundles());

function run(argv: string[], env: NodeJS.ProcessEnv = {}): Extract<ClientOptions, { command: 'run' }> {
  const parsed = parseClientOptions(['--node', 'n1', ...argv], env);
  assert.ok(parsed.ok, parsed.ok ? '' : parsed.reason);
  if (!parsed.ok || parsed.value.command !== 'run') throw new Error('not a run');
  return parsed.value;
}

function refusal(argv: string[], env: NodeJS.ProcessEnv = {}): string {
  const parsed = parseClientOptions(['--node', 'n1', ...argv], env);
  assert.not.ok(parsed.ok, JSON.stringify(argv));
  return parsed.ok ? '' : parsed.reason;
}

test('the engine timeout is 30 s unless --engine-timeout or MESH_ENGINE_TIMEOUT says otherwise, the flag winning', () => {
  assert.is(DEFAULT_ENGINE_TIMEOUT_MS, 30_000);
  assert.is(run([]).engineTimeoutMs, 30_000);
  assert.is(run(['--engine-timeout', '5']).engineTimeoutMs, 5_000);
  assert.is(run(['--engine-timeout=0.5']).engineTimeoutMs, 500);
  assert.is(run([], { MESH_ENGINE_TIMEOUT: '12' }).engineTimeoutMs, 12_000);
  assert.is(run(['--engine-timeout', '2'], { MESH_ENGINE_TIMEOUT: '12' }).engineTimeoutMs, 2_000);
});

test('an engine timeout that is not a number of seconds above 0, or past what a timer holds, is refused naming the flag', () => {
  for (const bad of ['0', '0.0', '-1', 'soon', '1e3', '30s', ' 5', '9999999999']) {
    assert.match(refusal(['--engine-timeout', bad]), /^--engine-timeout must be a number of seconds above 0/, bad);
  }
  assert.match(refusal([], { MESH_ENGINE_TIMEOUT: 'never' }), /--engine-timeout must be/);
  assert.match(refusal(['--engine-timeout']), /--engine-timeout needs a value/);
});

test('the alive period is 30 s unless --alive or MESH_ALIVE says otherwise; 0, a negative or not a number is refused naming the flag, and --help says it', () => {
  assert.is(run([]).aliveMs, 30_000);
  assert.is(run(['--alive', '1']).aliveMs, 1_000);
  assert.is(run(['--alive=2.5']).aliveMs, 2_500);
  assert.is(run([], { MESH_ALIVE: '60' }).aliveMs, 60_000);
  for (const bad of ['0', '-1', 'often', '30s']) assert.match(refusal(['--alive', bad]), /^--alive must be a number of seconds above 0/, bad);
  const help = clientHelp();
  for (const text of ['--alive S', 'MESH_ALIVE', 'prov.alive.<node>']) assert.ok(help.includes(text), text);
});

test('--archive-dir takes an absolute path, from the flag or MESH_ARCHIVE_DIR, and is absent by default', () => {
  assert.is(run([]).archiveDir, undefined);
  assert.not.ok('archiveDir' in run([]));
  assert.is(run(['--archive-dir', '/srv/archives']).archiveDir, '/srv/archives');
  assert.is(run([], { MESH_ARCHIVE_DIR: '/var/lib/archives' }).archiveDir, '/var/lib/archives');
  for (const bad of ['archives', './archives', '../srv', '~/archives']) {
    assert.is(refusal(['--archive-dir', bad]), `--archive-dir: "${bad}" is not an absolute path`);
  }
});

test('--help shows both flags with their environment variables', () => {
  const help = clientHelp();
  for (const text of ['--engine-timeout S', 'MESH_ENGINE_TIMEOUT', 'default 30', '--archive-dir DIR', 'MESH_ARCHIVE_DIR']) assert.ok(help.includes(text), text);
});

test('--once and --timeout: off and 60 s by default, from the flags or MESH_ONCE and MESH_TIMEOUT, a bad timeout refused naming the flag', () => {
  assert.equal([run([]).once, run([]).timeoutMs, run([]).dryRun], [false, 60_000, undefined]);
  assert.equal([run(['--once']).once, run(['--once', '--timeout', '5']).timeoutMs, run(['--once', '--timeout=0.5']).timeoutMs], [true, 5_000, 500]);
  assert.equal([run([], { MESH_ONCE: '1', MESH_TIMEOUT: '7' }).once, run([], { MESH_ONCE: '1', MESH_TIMEOUT: '7' }).timeoutMs], [true, 7_000]);
  for (const bad of ['0', '-1', 'soon', '9999999999'])
    assert.match(refusal(['--once', '--timeout', bad]), /^--timeout must be a number of seconds above 0/, bad);
  // Only the command line is judged: a unit's environment may carry MESH_TIMEOUT for every run.
  assert.is(refusal(['--timeout', '5']), '--timeout goes with --once or --dry-run');
  assert.is(run([], { MESH_TIMEOUT: '5' }).once, false);
});

test('--dry-run takes a dir (made absolute), implies --once, and refuses --socket on the command line and "/"', () => {
  const dry = run(['--dry-run', 'out/dry']);
  assert.equal([dry.once, dry.dryRun], [true, join(process.cwd(), 'out', 'dry')]);
  assert.is(run([], { MESH_DRY_RUN: '/tmp/dry' }).dryRun, '/tmp/dry');
  assert.is(run(['--dry-run', '/tmp/dry', '--timeout', '3']).timeoutMs, 3_000);
  assert.is(refusal(['--dry-run', '/tmp/dry', '--socket', '/run/fill.sock']), '--dry-run never connects to the engine: leave out --socket');
  assert.is(refusal(['--socket=/run/fill.sock', '--dry-run=/tmp/dry']), '--dry-run never connects to the engine: leave out --socket');
  assert.is(run(['--dry-run', '/tmp/dry'], { MESH_FILL_SOCKET: '/run/fill.sock' }).dryRun, '/tmp/dry');
  assert.match(refusal(['--dry-run', '/']), /^--dry-run: "\/" would put the files where the engine writes them/);
  assert.match(refusal(['--dry-run', '/tmp/../']), /^--dry-run: "\/"/);
});

test('lint takes one archive, dir or file, --plan FILE and --json, and needs no --node', () => {
  assert.equal(parseClientOptions(['lint', 'web.tar.gz'], {}), { ok: true, value: { command: 'lint', input: 'web.tar.gz', json: false } });
  assert.equal(parseClientOptions(['lint', 'dir', '--plan', 'p.json', '--json'], { MESH_NODE: 'n1' }), {
    ok: true,
    value: { command: 'lint', input: 'dir', plan: 'p.json', json: true },
  });
  assert.equal(parseClientOptions(['lint'], {}), { ok: false, reason: 'lint needs an archive, a directory or a template file (see --help)' });
  assert.equal(parseClientOptions(['lint', 'a', 'b'], {}), { ok: false, reason: 'unexpected argument "b" (see --help)' });
  assert.equal(parseClientOptions(['lint', 'a', '--node', 'n1'], {}), { ok: false, reason: 'unknown flag --node (see --help)' });
  const help = parseClientOptions(['lint', '--help'], {});
  assert.ok(help.ok && help.value.command === 'help');
});

test('--help shows --once, --timeout, --dry-run and lint', () => {
  const help = clientHelp();
  for (const text of [
    '--once',
    'MESH_ONCE',
    '--timeout S',
    'MESH_TIMEOUT',
    'default 60',
    '--dry-run DIR',
    'MESH_DRY_RUN',
    '--socket is refused',
    'lint ARCHIVE|DIR|FILE [--plan FILE] [--json]',
    '--plan FILE',
  ]) {
    assert.ok(help.includes(text), text);
  }
});

test('the client bundle exits 2 with one line naming the flag for a bad flag or a contradiction', async () => {
  ensureBuilt('client');
  const dir = copyBundleAlone('client');
  const cases: [string[], RegExp][] = [
    [['--node', 'n1', '--engine-timeout', '0'], /--engine-timeout must be a number of seconds above 0/],
    [['--node', 'n1', '--archive-dir', 'relative/dir'], /--archive-dir: "relative\/dir" is not an absolute path/],
    [['--node', 'n1', '--dry-run', '/tmp/x', '--socket', '/tmp/s'], /--dry-run never connects to the engine: leave out --socket/],
    [['--node', 'n1', '--once', '--timeout', 'never'], /--timeout must be a number of seconds above 0/],
    [['lint'], /lint needs an archive/],
  ];
  for (const [args, reason] of cases) {
    const result = await runBundle('node', dir, 'client', args);
    assert.is(result.code, 2, args.join(' '));
    assert.is(result.stderr.trim().split('\n').length, 1, result.stderr);
    assert.match(result.stderr, reason);
  }
  const help = await runBundle('node', dir, 'client', ['--help']);
  assert.is(help.code, 0);
  assert.match(help.stdout, /--engine-timeout S/);
  assert.match(help.stdout, /--archive-dir DIR/);
});

test.run();
