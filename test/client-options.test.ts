// The client's --engine-timeout and --archive-dir (DESIGN §9, §10, §11): defaults, environment, and a
// bad value refused in one line naming the flag, by the parser and by the bundle's exit code.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DEFAULT_ENGINE_TIMEOUT_MS } from '../src/client/engine.ts';
import { clientHelp, parseClientOptions, type ClientOptions } from '../src/client/options.ts';
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

test('the client bundle exits 2 with one line naming the flag for a bad --engine-timeout or --archive-dir', async () => {
  ensureBuilt('client');
  const dir = copyBundleAlone('client');
  const cases: [string[], RegExp][] = [
    [['--node', 'n1', '--engine-timeout', '0'], /--engine-timeout must be a number of seconds above 0/],
    [['--node', 'n1', '--archive-dir', 'relative/dir'], /--archive-dir: "relative\/dir" is not an absolute path/],
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
