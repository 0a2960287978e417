// An SDK error a module leaves uncaught, as node prints it (issue 31 item 16): the release's sdk.mjs
// and provider.mjs, each copied alone and imported by a script, keep their classes' names (`AskError`,
// `Refused`, not a minified `de`), node's echo of the source line the error was made on is one short
// line (it was ~3 KB of minified code), and the first line says what to do. The whole of it is a few
// lines (the operator's pass): no cause chain with its stacks, none of the SDK's own frames — under
// deno too — while the bus's error stays reachable as `busError`.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { USERS } from '../src/server/commands/bus-config/users.ts';
import { cleanEnv, cleanupBundles, copyBundleAlone, DENO, ensureBuilt } from './helpers/bundle.ts';
import { webAppliedOn, withIsolatedMesh } from './helpers/isolated-mesh.ts';
import { freePort } from './helpers/nats.ts';
import { tempDir } from './helpers/temp.ts';

/** The longest line node may echo from a bundle: a statement, not a file squeezed onto one line. */
const MAX_ECHOED_LINE = 300;
/** The most lines an uncaught SDK error may print, the runtime's own (node's echo and version) included. */
const MAX_LINES = 8;

let sdkDir = '';
let providerDir = '';
let scripts = '';

test.before(() => {
  ensureBuilt('sdk');
  ensureBuilt('provider');
  sdkDir = copyBundleAlone('sdk');
  providerDir = copyBundleAlone('provider');
  scripts = tempDir('mesh-sdk-errors-');
});
test.after(() => {
  cleanupBundles();
  rmSync(scripts, { recursive: true, force: true });
});

/** Runs a module's script to its end with `env` on a clean environment, under node (or deno). */
function run(
  name: string,
  source: string,
  env: Record<string, string> = {},
  runtime: 'node' | 'deno' = 'node',
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const script = join(scripts, name);
  writeFileSync(script, source);
  const [command, args] = runtime === 'deno' ? [DENO, ['run', '-A', script]] : [process.execPath, [script]];
  const child = spawn(command, args, { cwd: scripts, env: cleanEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

/**
 * What every uncaught SDK error must look like on stderr; an AskError (`few`) is a few lines besides. A
 * TypeError of runProvider's options keeps its stack: it is the provider's developer's to read.
 */
function assertReadable(printed: string, head: RegExp, few = true, runtime: 'node' | 'deno' = 'node'): void {
  const stderr = printed.replace(/\x1b\[[0-9;]*m/g, '');
  const long = stderr.split('\n').filter((l) => l.length > MAX_ECHOED_LINE);
  assert.equal(
    long.map((l) => `${l.length} characters: ${l.slice(0, 80)}…`),
    [],
    'node echoed a long line of the bundle',
  );
  assert.match(stderr, head, stderr);
  assert.not.match(stderr, /^\S+ \[(AskError|Refused)\]/m, 'the class name was minified');
  if (!few) return;
  const lines = stderr.split('\n').filter((l) => l.trim() !== '');
  assert.ok(lines.length <= MAX_LINES, `${lines.length} lines, more than ${MAX_LINES}:\n${stderr}`);
  assert.not.match(stderr, /\[cause\]|\bcause: |Caused by/, 'the cause chain was printed');
  // Deno prints the frames it recorded, not the stack the SDK trimmed: one of the SDK's own is left there.
  if (runtime === 'node') assert.not.match(stderr, /sdk\.mjs:\d+:\d+\)?$/m, 'a frame of the SDK itself was printed');
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
  assert.match(unreachable.stderr, /^ {4}at async file:\/\/\S+\/unreachable\.mjs:2:1$/m, 'the module’s own line');

  const zero = await run('zero.mjs', `import { ask } from ${sdk};\nawait ask('config', 'level');\n`, { ...env, MESH_NATS_NKEY: '/dev/zero' });
  assert.is(zero.code, 1);
  assertReadable(
    zero.stderr,
    /^AskError: MESH_NATS_NKEY: \/dev\/zero is a character device, not a regular file: give the file holding the seed of runner\.n1$/m,
  );
});

test('on the generated bus, another node’s runner seed and a key the module has not got: a few lines naming what to do, under node and deno; the bus’s error reachable as busError', () =>
  withIsolatedMesh({ nodes: ['n1', 'n2'] }, async (m) => {
    await webAppliedOn(m, 'n1');
    const sdk = JSON.stringify(join(sdkDir, 'sdk.mjs'));
    const asN2 = { MESH_NODE: 'n1', MESH_MODULE: 'web', MESH_NATS_URL: m.nats.url, MESH_NATS_NKEY: m.nkey(USERS.runner('n2')) };
    const ask = (key: string) => `import { ask } from ${sdk};\nawait ask('config', ${JSON.stringify(key)});\n`;
    for (const runtime of ['node', 'deno'] as const) {
      const refused = await run(`refused-${runtime}.mjs`, ask('level'), asN2, runtime);
      assert.is(refused.code, 1, refused.stderr);
      assertReadable(
        refused.stderr,
        /AskError: asking config "level" of node n1: .*; the login is not node n1's runner: give the seed of runner\.n1 \(MESH_NATS_NKEY\)/,
        true,
        runtime,
      );
    }
    const caught = await run(
      'caught.mjs',
      `import { ask, close } from ${sdk};\ntry { await ask('config', 'level'); } catch (e) { console.log(e.busError?.name, e.busError?.cause?.name); }\nawait close();\n`,
      asN2,
    );
    assert.is(caught.stdout.trim(), 'RequestError PermissionViolationError', caught.stderr);

    const asN1 = { ...asN2, MESH_NATS_NKEY: m.nkey(USERS.runner('n1')) };
    const missing = await run('missing.mjs', ask('levle'), asN1);
    assert.is(missing.code, 1, missing.stderr);
    assertReadable(
      missing.stderr,
      /^AskError: config "levle" is not resolved for web on node n1 \(did you mean "level"\?\): set it with `server\.js config set n1 web levle VALUE`$/m,
    );
  }));

test('the provider helper’s errors name their class and what to give: a bad option to runProvider, and Refused', async () => {
  const provider = JSON.stringify(join(providerDir, 'provider.mjs'));
  const bad = await run(
    'bad-option.mjs',
    `import { runProvider } from ${provider};\nrunProvider({ nc: undefined, provider: 'Pg_1', provision: 'database', consumersFile: '/none', adapter: {} });\n`,
  );
  assert.is(bad.code, 1);
  assertReadable(
    bad.stderr,
    /^TypeError: runProvider: provider "Pg_1" is not a module name \(a-z, 0-9 and -, at most 63\): give the provider module's name$/m,
    false,
  );
  const refused = await run('refused.mjs', `import { Refused } from ${provider};\nthrow new Refused('values.name is not a database name');\n`);
  assert.is(refused.code, 1);
  assertReadable(refused.stderr, /^Refused: values\.name is not a database name$/m, false);
});

test.run();
