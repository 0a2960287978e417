// The SDK as a module uses it from an installed release (DESIGN §13, issue 20 item 4): a module's own
// script imports the release's sdk.mjs by its path (copied alone, no node_modules anywhere above), runs
// with the environment a tool runner sets — `runner.<node>`'s seed in MESH_NATS_NKEY, MESH_NODE,
// MESH_MODULE — on the bus `bus-config` generates, asks its node's client for a config value, watches
// it change, closes and ends by itself; nats-server refuses it nothing. Through a bus restart its watch
// hears the value again, also when the node's client is back on the bus seconds after the module.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { USERS } from '../src/server/commands/bus-config/users.ts';
import { cleanEnv, cleanupBundles, copyBundleAlone, ensureBuilt, hasNodeModulesAbove } from './helpers/bundle.ts';
import { webAppliedOn, withIsolatedMesh } from './helpers/isolated-mesh.ts';
import { startTcpProxy, type TcpProxy } from './helpers/tcp-proxy.ts';
import { waitFor } from './helpers/wait.ts';
import { tempDir } from './helpers/temp.ts';

const NODE = 'n1';

let sdkDir = '';
let scripts = '';

test.before(() => {
  ensureBuilt('sdk');
  sdkDir = copyBundleAlone('sdk');
  scripts = tempDir('mesh-module-');
});
test.after(() => {
  cleanupBundles();
  rmSync(scripts, { recursive: true, force: true });
});

/** A module's script as the README shows it: asks, watches until `until`, closes, and ends by itself. */
function moduleScript(sdk: string, until: string): string {
  return [
    `import { ask, watch, close } from ${JSON.stringify(join(sdk, 'sdk.mjs'))};`,
    `const say = (line) => process.stdout.write(JSON.stringify(line) + '\\n');`,
    `say({ asked: await ask('config', 'level') });`,
    `await new Promise((resolve) => {`,
    `  void watch('config', 'level', (value) => {`,
    `    say({ watched: typeof value === 'string' ? value : 'error: ' + value.message });`,
    `    if (value === ${JSON.stringify(until)}) resolve();`,
    `  });`,
    `});`,
    `await close();`,
  ].join('\n');
}

/** A module's script that watches a value and prints every callback, closing after `times` of them. */
function watchScript(sdk: string, times: number): string {
  return [
    `import { watch, close } from ${JSON.stringify(join(sdk, 'sdk.mjs'))};`,
    `let heard = 0;`,
    `await new Promise((resolve) => {`,
    `  void watch('config', 'level', (value) => {`,
    `    process.stdout.write(JSON.stringify({ watched: typeof value === 'string' ? value : 'error: ' + value.message }) + '\\n');`,
    `    if (++heard === ${times}) resolve();`,
    `  });`,
    `});`,
    `await close();`,
  ].join('\n');
}

/** Runs `node <script>` with `env` on top of a clean environment; its output so far, and its end. */
function runScript(script: string, env: Record<string, string>) {
  const child = spawn(process.execPath, [script], { cwd: scripts, env: cleanEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
  return { child, exited, stdout: () => stdout, stderr: () => stderr };
}

test('a module script importing the release’s sdk.mjs by path, run as runner.n1 on the generated bus, asks a config value, sees it change, and ends after close()', () =>
  withIsolatedMesh({ nodes: [NODE] }, async (m) => {
    assert.not.ok(hasNodeModulesAbove(sdkDir), sdkDir);
    assert.not.ok(hasNodeModulesAbove(scripts), scripts);
    await webAppliedOn(m, NODE);
    const script = join(scripts, 'web-tool.mjs');
    writeFileSync(script, moduleScript(sdkDir, 'debug'));
    // What a tool runner sets: where the bus is, its own seed, and which node and module this is.
    const runner = { MESH_NATS_URL: m.nats.url, MESH_NATS_NKEY: m.nkey(USERS.runner(NODE)), MESH_NODE: NODE, MESH_MODULE: 'web' };
    const run = runScript(script, runner);
    try {
      await waitFor('the asked value and the first watched one', () => run.stdout().includes('{"watched":"info"}'), 15_000).catch((err: Error) => {
        throw new Error(`${err.message}; stdout: ${run.stdout()}; stderr: ${run.stderr()}`);
      });
      assert.ok(run.stdout().startsWith('{"asked":"info"}\n'), run.stdout());
      await m.kv.config.put(`${NODE}.web.level`, 'debug');
      const code = await Promise.race([run.exited, new Promise<'running'>((resolve) => setTimeout(() => resolve('running'), 15_000))]);
      assert.is(code, 0, `stdout: ${run.stdout()}; stderr: ${run.stderr()}`);
      assert.ok(run.stdout().endsWith('{"watched":"debug"}\n'), run.stdout());
      assert.not.match(run.stdout(), /error/);
      assert.equal(
        m.violations().filter((l) => l.includes('module web')),
        [],
        'nats-server refused the runner nothing',
      );

      // Without the runner's seed the bus refuses the login: the variable is what the runner must set.
      const { MESH_NATS_NKEY: _seed, ...withoutSeed } = runner;
      const refused = runScript(script, withoutSeed);
      assert.is(await refused.exited, 1, refused.stdout());
      assert.match(refused.stderr(), /Authorization Violation/i);
      // n1's runner seed with another node named: the bus refuses its inbox, and the error says whose seed it needs.
      const elsewhere = runScript(script, { ...runner, MESH_NODE: 'n2' });
      assert.is(await elsewhere.exited, 1, elsewhere.stdout());
      assert.match(elsewhere.stderr(), /Permissions Violation.*the login is not node n2's runner: give the seed of runner\.n2 \(MESH_NATS_NKEY\)/s);
      // A watch with that seed is refused the same way: `watch` rejects, no handle, and nothing reaches its callback.
      const watcher = join(scripts, 'web-watch-only.mjs');
      writeFileSync(watcher, watchScript(sdkDir, 1));
      const watchedElsewhere = runScript(watcher, { ...runner, MESH_NODE: 'n2' });
      const watchCode = await Promise.race([watchedElsewhere.exited, new Promise<'running'>((resolve) => setTimeout(() => resolve('running'), 10_000))]);
      watchedElsewhere.child.kill('SIGKILL');
      assert.is(watchCode, 1, `stdout: ${watchedElsewhere.stdout()}; stderr: ${watchedElsewhere.stderr()}`);
      assert.is(watchedElsewhere.stdout(), '', 'the callback heard the refusal: the watch returned a handle');
      assert.match(
        watchedElsewhere.stderr(),
        /watching config "level" of node n2: Permissions Violation for Subscription to "prov\.changed\.n2\.web"; the login is not node n2's runner: give the seed of runner\.n2 \(MESH_NATS_NKEY\)/,
      );
    } finally {
      run.child.kill('SIGKILL');
    }
  }));

test('a module watching a value through a bus restart sees the next change and asks again, without a restart of its own', () =>
  withIsolatedMesh({ nodes: [NODE] }, async (m) => {
    const node = await webAppliedOn(m, NODE);
    const script = join(scripts, 'web-watch.mjs');
    writeFileSync(script, moduleScript(sdkDir, 'trace'));
    const run = runScript(script, { MESH_NATS_URL: m.nats.url, MESH_NATS_NKEY: m.nkey(USERS.runner(NODE)), MESH_NODE: NODE, MESH_MODULE: 'web' });
    try {
      await waitFor('the first watched value', () => run.stdout().includes('{"watched":"info"}'), 15_000);
      // The bus goes and comes back (a restart, an upgrade): the module's connection with it.
      await m.nats.stop();
      await new Promise((resolve) => setTimeout(resolve, 1500));
      await m.nats.restart();
      await waitFor('the client back on the bus', () => node.log.lines.some((l) => l.includes('bus: reconnected')), 15_000);
      // JetStream takes writes a moment after the server is back.
      await waitFor(
        'the change taken by the bus',
        () =>
          m.kv.config.put(`${NODE}.web.level`, 'trace').then(
            () => true,
            () => false,
          ),
        15_000,
      );
      const code = await Promise.race([run.exited, new Promise<'running'>((resolve) => setTimeout(() => resolve('running'), 20_000))]);
      assert.is(code, 0, `stdout: ${run.stdout()}; stderr: ${run.stderr()}`);
      assert.ok(run.stdout().endsWith('{"watched":"trace"}\n'), run.stdout());
    } finally {
      run.child.kill('SIGKILL');
    }
  }));

test('after a bus restart a watch whose node client subscribes again seconds after the module is back hears the value, with no change and no error in between', async () => {
  let proxy: TcpProxy | undefined;
  try {
    await withIsolatedMesh({ nodes: [NODE] }, async (m) => {
      // The node's client reaches the bus through a relay the test holds cut: its connection comes back after the module's.
      proxy = await startTcpProxy(m.nats.port);
      const node = await webAppliedOn(m, NODE, { url: `nats://127.0.0.1:${proxy.port}` });
      const script = join(scripts, 'web-late-client.mjs');
      writeFileSync(script, watchScript(sdkDir, 2));
      const run = runScript(script, { MESH_NATS_URL: m.nats.url, MESH_NATS_NKEY: m.nkey(USERS.runner(NODE)), MESH_NODE: NODE, MESH_MODULE: 'web' });
      try {
        await waitFor('the first watched value', () => run.stdout().includes('{"watched":"info"}'), 15_000);
        proxy.cut();
        await m.nats.stop();
        await m.nats.restart();
        // The module is back within its 250 ms reconnect wait and asks at once; the client is not there.
        await new Promise((resolve) => setTimeout(resolve, 2000));
        const reconnectsBefore = node.log.lines.filter((l) => l.includes('bus: reconnected')).length;
        proxy.restore();
        await waitFor('the client back on the bus', () => node.log.lines.filter((l) => l.includes('bus: reconnected')).length > reconnectsBefore, 15_000);
        const code = await Promise.race([run.exited, new Promise<'running'>((resolve) => setTimeout(() => resolve('running'), 15_000))]);
        assert.is(code, 0, `stdout: ${run.stdout()}; stderr: ${run.stderr()}`);
        assert.is(run.stdout(), '{"watched":"info"}\n{"watched":"info"}\n', 'the value again, and no "no responders" before it');
        assert.equal(
          m.violations().filter((l) => l.includes('module web')),
          [],
          'nats-server refused the runner nothing',
        );
      } finally {
        run.child.kill('SIGKILL');
      }
    });
  } finally {
    await proxy?.close();
  }
});

test.run();
