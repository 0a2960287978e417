// End to end with the client bundle copied alone: the same smoke under node, under node without module-type
// detection (as Node 20.0–20.18 run it) and under deno (DESIGN §1, §10).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import { cleanupBundles, copyBundleAlone, ensureBuilt, hasNodeModulesAbove, runBundle, RUNTIMES, startBundle } from './helpers/bundle.ts';
import { startMesh } from './helpers/mesh.ts';
import { waitFor } from './helpers/wait.ts';

test.before(() => ensureBuilt('client'));
test.after(() => cleanupBundles());

for (const runtime of RUNTIMES) {
  test(`the client bundle alone under ${runtime} fills a module, follows a config change and stops on SIGTERM`, async () => {
    const m = await startMesh();
    const dir = copyBundleAlone('client');
    assert.not.ok(hasNodeModulesAbove(dir));
    const client = m.startClientProcess({ runtime, bundleDir: dir });
    try {
      await m.publish('web', {
        templates: { 'web.conf': 'port ${port:http}\nmode ${config:mode}\nkey ${secret:k}\n' },
        provisioning: { files: [{ path: '${dir:config}/web.conf', template: 'web.conf', change: 'restart' }], secrets: [{ name: 'k' }] },
      });
      m.secret('module/web/k', 'shh');
      await m.setConfig('n1', 'web', 'mode', 'one');
      await m.assign('n1', 'web');
      const path = join(m.root, 'etc/web/web.conf');
      await waitFor('the file', () => m.file(path) === 'port 8080\nmode one\nkey shh\n', 20_000).catch((e) => {
        throw new Error(`${(e as Error).message}; client said:\n${client.stderr()}`);
      });
      await m.waitReport('n1', 'web', (r) => r.state === 'applied');
      await m.setConfig('n1', 'web', 'mode', 'two');
      await waitFor('the change', () => m.file(path) === 'port 8080\nmode two\nkey shh\n');
      // The engine journals the restart after it writes the file.
      await waitFor('the restart of the change', () => m.journal().length >= 2);
      assert.is(m.journal().length, 2);
      client.child.kill('SIGTERM');
      const { code } = await client.exited;
      assert.is(code, 0, client.stderr());
    } finally {
      await m.close();
    }
  });
}

test('the client answers --help and --version with 0, and a bad or missing flag with 2 in one line naming it', async () => {
  const dir = copyBundleAlone('client');
  const help = await runBundle('node', dir, 'client', ['--help']);
  assert.is(help.code, 0);
  for (const flag of ['--node', '--nats', '--socket', '--cache', '--settle', 'MESH_NODE', 'MESH_SETTLE_MS']) assert.ok(help.stdout.includes(flag), flag);
  const version = await runBundle('node', dir, 'client', ['--version']);
  assert.match(version.stdout, /^node-provisioner \S+\n$/);
  const cases: [string[], RegExp][] = [
    [[], /--node is required/],
    [['--node', 'N1'], /--node: "N1" is not a valid node name/],
    [['--node', 'n1', '--settle', 'soon'], /--settle must be a non-negative integer/],
    [['--node', 'n1', '--bogus'], /unknown flag --bogus/],
    [['--node', 'n1', '--nats'], /--nats needs a value/],
  ];
  for (const [args, reason] of cases) {
    const run = await runBundle('node', dir, 'client', args);
    assert.is(run.code, 2, args.join(' '));
    assert.is(run.stderr.trim().split('\n').length, 1, run.stderr);
    assert.match(run.stderr, reason);
  }
});

test('the client takes every setting from the environment when no flag is given', async () => {
  const m = await startMesh();
  const dir = copyBundleAlone('client');
  const client = startBundle('node', dir, 'client', [], {
    MESH_NODE: 'n1',
    MESH_NATS_URL: m.nats.url,
    MESH_FILL_SOCKET: m.socketPath,
    MESH_CACHE_DIR: m.cacheDir,
    MESH_SETTLE_MS: '0',
  });
  try {
    await m.publish('web', {
      templates: { 'web.conf': 'mode ${config:mode}\n' },
      provisioning: { files: [{ path: '${dir:config}/web.conf', template: 'web.conf' }] },
    });
    await m.setConfig('n1', 'web', 'mode', 'env');
    await m.assign('n1', 'web');
    await waitFor('the file', () => m.file(join(m.root, 'etc/web/web.conf')) === 'mode env\n', 20_000);
    assert.match(client.stderr(), /for node n1, bus nats:\/\/127\.0\.0\.1/);
  } finally {
    client.kill();
    await m.close();
  }
});

test.run();
