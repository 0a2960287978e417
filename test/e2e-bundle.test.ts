// End to end with the client bundle copied alone: the same smoke under node and under deno (DESIGN §1, §10).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import { cleanupBundles, copyBundleAlone, ensureBuilt, hasNodeModulesAbove, startBundle, type Runtime } from './helpers/bundle.ts';
import { startMesh } from './helpers/mesh.ts';
import { waitFor } from './helpers/wait.ts';

test.before(() => ensureBuilt('client'));
test.after(() => cleanupBundles());

for (const runtime of ['node', 'deno'] as Runtime[]) {
  test(`the client bundle alone under ${runtime} fills a module, follows a config change and stops on SIGTERM`, async () => {
    const m = await startMesh();
    const dir = copyBundleAlone('client');
    assert.not.ok(hasNodeModulesAbove(dir));
    const client = startBundle(runtime, dir, 'client', ['--node', 'n1', '--nats', m.nats.url, '--socket', m.socketPath, '--cache', join(dir, 'cache')]);
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
      assert.is(m.journal().length, 2);
      client.child.kill('SIGTERM');
      const { code } = await client.exited;
      assert.is(code, 0, client.stderr());
    } finally {
      client.kill();
      await m.close();
    }
  });
}

test.run();
