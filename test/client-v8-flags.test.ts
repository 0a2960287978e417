// The client bundle sets its own V8 flags (src/client/v8-flags.ts): under node its young generation
// stays at its first size however much garbage it makes; under deno, which ignores the call, it runs.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cleanEnv, cleanupBundles, copyBundleAlone, ensureBuilt, runBundle } from './helpers/bundle.ts';

test.before(() => ensureBuilt('client'));
test.after(() => cleanupBundles());

/** Two 1 MiB semi-spaces: the young generation's first size on 64-bit node. */
const FIRST_NEW_SPACE_BYTES = 2 * 1024 * 1024;

// Loaded with --require before the script: at exit it makes garbage of which a tenth survives (what
// makes V8 grow the young generation) and says how large the young generation is then.
const PROBE = `
const v8 = require('node:v8');
process.on('exit', () => {
  const kept = [];
  for (let i = 0; i < 3e6; i++) { const o = { i, s: 'x' + i }; if (i % 10 === 0) kept.push(o); }
  const size = v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size;
  require('node:fs').writeSync(2, 'new_space ' + size + ' ' + kept.length + '\\n');
});
`;

/** The young generation's size at exit of `node --require PROBE <args>`, and what the run printed. */
function newSpaceAtExit(dir: string, args: string[]): { size: number; stdout: string; stderr: string; status: number | null } {
  const probe = join(dir, 'probe.cjs');
  writeFileSync(probe, PROBE);
  const run = spawnSync(process.execPath, ['--require', probe, ...args], { cwd: dir, env: cleanEnv(), encoding: 'utf8' });
  const size = Number(/new_space (\d+)/.exec(run.stderr)?.[1]);
  return { size, stdout: run.stdout, stderr: run.stderr, status: run.status };
}

test('the probe sees the young generation grow in a node run without the client bundle', () => {
  const dir = copyBundleAlone('client');
  const bare = newSpaceAtExit(dir, ['-e', '0']);
  assert.ok(bare.size > FIRST_NEW_SPACE_BYTES, `new_space ${bare.size} bytes: the probe cannot tell the flag from its absence; ${bare.stderr}`);
});

test('the client bundle under node keeps its young generation at its first size: no node flag needed', () => {
  const dir = copyBundleAlone('client');
  const run = newSpaceAtExit(dir, ['client.js', '--version']);
  assert.is(run.status, 0, run.stderr);
  assert.match(run.stdout, /^node-provisioner \S+\n$/);
  assert.ok(run.size > 0 && run.size <= FIRST_NEW_SPACE_BYTES, `new_space ${run.size} bytes at exit; ${run.stderr}`);
});

test('the client bundle under deno, which ignores the flag, runs', async () => {
  const dir = copyBundleAlone('client');
  const run = await runBundle('deno', dir, 'client', ['--version'], {}, 30_000);
  assert.is(run.code, 0, run.stderr);
  assert.match(run.stdout, /^node-provisioner \S+\n$/);
});

test.run();
