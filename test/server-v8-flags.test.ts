// The server bundle sets its own V8 flags (src/server/v8-flags.ts): under node its young generation
// stays at its first size however much garbage it makes, and its old generation grows by half of
// what a collection leaves live; under deno, which ignores the call, it runs.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cleanEnv, cleanupBundles, copyBundleAlone, ensureBuilt, runBundle } from './helpers/bundle.ts';

test.before(() => ensureBuilt('server'));
test.after(() => cleanupBundles());

/** Two 1 MiB semi-spaces: the young generation's first size on 64-bit node. */
const FIRST_NEW_SPACE_BYTES = 2 * 1024 * 1024;

// Loaded with --require before the script: it notes the V8 flags the script sets, and at exit makes
// garbage of which a tenth survives (what makes V8 grow the young generation) and says how large
// the young generation is then, and the flags set.
const PROBE = `
const v8 = require('node:v8');
const set = [];
const original = v8.setFlagsFromString;
v8.setFlagsFromString = (flag) => (set.push(flag), original(flag));
process.on('exit', () => {
  const kept = [];
  for (let i = 0; i < 3e6; i++) { const o = { i, s: 'x' + i }; if (i % 10 === 0) kept.push(o); }
  const size = v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size;
  require('node:fs').writeSync(2, 'new_space ' + size + ' ' + kept.length + '\\nflags ' + set.join(' ') + '\\n');
});
`;

/** What `node --require PROBE <args>` said at exit: its young generation's size and the flags set, and what the run printed. */
function probed(dir: string, args: string[]): { size: number; flags: string; stdout: string; stderr: string; status: number | null } {
  const probe = join(dir, 'probe.cjs');
  writeFileSync(probe, PROBE);
  const run = spawnSync(process.execPath, ['--require', probe, ...args], { cwd: dir, env: cleanEnv(), encoding: 'utf8' });
  const size = Number(/new_space (\d+)/.exec(run.stderr)?.[1]);
  const flags = /flags (.*)/.exec(run.stderr)?.[1] ?? '';
  return { size, flags, stdout: run.stdout, stderr: run.stderr, status: run.status };
}

test('the probe sees the young generation grow in a node run without the server bundle', () => {
  const dir = copyBundleAlone('server');
  const bare = probed(dir, ['-e', '0']);
  assert.ok(bare.size > FIRST_NEW_SPACE_BYTES, `new_space ${bare.size} bytes: the probe cannot tell the flag from its absence; ${bare.stderr}`);
  assert.is(bare.flags, '');
});

test('the server bundle under node keeps its young generation at its first size and its old one growing by half: no node flag needed', () => {
  const dir = copyBundleAlone('server');
  const run = probed(dir, ['server.js', '--version']);
  assert.is(run.status, 0, run.stderr);
  assert.match(run.stdout, /^mesh-provisioner \S+\n$/);
  assert.ok(run.size > 0 && run.size <= FIRST_NEW_SPACE_BYTES, `new_space ${run.size} bytes at exit; ${run.stderr}`);
  assert.is(run.flags, '--semi-space-growth-factor=1 --heap-growing-percent=50');
});

test('the server bundle under deno, which ignores the flags, runs', async () => {
  const dir = copyBundleAlone('server');
  const run = await runBundle('deno', dir, 'server', ['--version'], {}, 30_000);
  assert.is(run.code, 0, run.stderr);
  assert.match(run.stdout, /^mesh-provisioner \S+\n$/);
});

test.run();
