// An SDK error a module leaves uncaught, as node prints it (issue 31 item 16): the release's sdk.mjs
// and provider.mjs, each copied alone and imported by a script, keep their classes' names (`AskError`,
// `Refused`, not a minified `de`), node's echo of the source line the error was made on is one short
// line (it was ~3 KB of minified code), and the first line says what to do.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cleanEnv, cleanupBundles, copyBundleAlone, ensureBuilt } from './helpers/bundle.ts';
import { freePort } from './helpers/nats.ts';

/** The longest line node may echo from a bundle: a statement, not a file squeezed onto one line. */
const MAX_ECHOED_LINE = 300;

let sdkDir = '';
let providerDir = '';
let scripts = '';

test.before(() => {
  ensureBuilt('sdk');
  ensureBuilt('provider');
  sdkDir = copyBundleAlone('sdk');
  providerDir = copyBundleAlone('provider');
  scripts = mkdtempSync(join(tmpdir(), 'mesh-sdk-errors-'));
});
test.after(() => {
  cleanupBundles();
  rmSync(scripts, { recursive: true, force: true });
});

/** Runs a module's script to its end with `env` on a clean environment. */
function run(name: string, source: string, env: Record<string, string> = {}): Promise<{ code: number | null; stderr: string }> {
  const script = join(scripts, name);
  writeFileSync(script, source);
  const child = spawn(process.execPath, [script], { cwd: scripts, env: cleanEnv(env), stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stderr })));
}

/** What every uncaught SDK error must look like on stderr. */
function assertReadable(stderr: string, head: RegExp): void {
  const long = stderr.split('\n').filter((l) => l.length > MAX_ECHOED_LINE);
  assert.equal(
    long.map((l) => `${l.length} characters: ${l.slice(0, 80)}…`),
    [],
    'node echoed a long line of the bundle',
  );
  assert.match(stderr, head, stderr);
  assert.not.match(stderr, /^\S+ \[(AskError|Refused)\]/m, 'the class name was minified');
}

test('an ask left uncaught names AskError and says what to do: without the tool runner’s variables, and with no bus at the address', async () => {
  const sdk = JSON.stringify(join(sdkDir, 'sdk.mjs'));
  const unset = await run('unset.mjs', `import { ask } from ${sdk};\nawait ask('config', 'level');\n`);
  assert.is(unset.code, 1);
  assertReadable(unset.stderr, /^AskError: MESH_NODE and MESH_MODULE are not set: run the module under its node’s tool runner, which sets them/m);

  const nowhere = `nats://127.0.0.1:${await freePort()}`;
  const env = { MESH_NODE: 'n1', MESH_MODULE: 'web', MESH_NATS_URL: nowhere };
  const unreachable = await run('unreachable.mjs', `import { watch } from ${sdk};\nawait watch('config', 'level', () => {});\n`, env);
  assert.is(unreachable.code, 1);
  assertReadable(
    unreachable.stderr,
    new RegExp(`^AskError: connecting to the bus at ${nowhere} for module web of node n1: .*; is MESH_NATS_URL the address of the bus, and is it up\\?$`, 'm'),
  );
});

test('the provider helper’s errors name their class and what to give: a bad option to runProvider, and Refused', async () => {
  const provider = JSON.stringify(join(providerDir, 'provider.mjs'));
  const bad = await run(
    'bad-option.mjs',
    `import { runProvider } from ${provider};\nrunProvider({ nc: undefined, provider: 'Pg_1', provision: 'database', consumersFile: '/none', adapter: {} });\n`,
  );
  assert.is(bad.code, 1);
  assertReadable(bad.stderr, /^TypeError: runProvider: provider "Pg_1" is not a module name \(a-z, 0-9 and -, at most 63\): give the provider module's name$/m);
  const refused = await run('refused.mjs', `import { Refused } from ${provider};\nthrow new Refused('values.name is not a database name');\n`);
  assert.is(refused.code, 1);
  assertReadable(refused.stderr, /^Refused: values\.name is not a database name$/m);
});

test.run();
