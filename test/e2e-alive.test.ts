// The client's alive message end to end (DESIGN §3, §14; issue 33 item 1, the client's side): the
// client bundle, logged in with its own node's seed on the bus bus-config generates, says
// `prov.alive.<node>` at start and every `--alive` period, and the mesh's account hears it; the engine
// stopped, the next message says `down` since then; started again, `up`.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as v from 'valibot';
import { AliveSchema, type Alive } from '../src/shared/contract/alive.ts';
import { ALIVE_ALL } from '../src/shared/contract/subjects.ts';
import { USERS } from '../src/server/commands/bus-config/users.ts';
import { cleanupBundles, copyBundleAlone, ensureBuilt, ROOT, startBundle } from './helpers/bundle.ts';
import { withIsolatedMesh } from './helpers/isolated-mesh.ts';
import { nodePaths } from './helpers/mesh-node.ts';
import { busConfigOut } from './helpers/bus-config-run.ts';
import { freePort, startNats } from './helpers/nats.ts';
import { startTcpProxy } from './helpers/tcp-proxy.ts';
import { sleep, waitFor } from './helpers/wait.ts';

test.before(() => ensureBuilt('client'));
test.after(() => cleanupBundles());

const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

test("the client says it is alive every --alive period with its version, its plans' count and its engine's state, which follows the engine", () =>
  withIsolatedMesh({ nodes: ['n1'] }, async (m) => {
    await m.publish('web', {
      templates: { 'web.conf': 'port=${port:http}\n' },
      provisioning: { files: [{ path: '${dir:config}/web.conf', template: 'web.conf' }] },
    });
    await m.assign('n1', 'web');
    const n1 = m.node('n1');
    await n1.startEngine();
    // Heard as the mesh's account hears it: through n1's export and the mesh's import.
    const heard: { subject: string; alive: Alive; got: number }[] = [];
    const sub = m.admin.subscribe(ALIVE_ALL, {
      callback: (_err, msg) => void heard.push({ subject: msg.subject, alive: v.parse(AliveSchema, msg.json()), got: Date.now() }),
    });
    await m.admin.flush();
    const paths = nodePaths(join(m.dir, 'n1'));
    const args = ['--node', 'n1', '--nats', m.nats.url, '--nkey', m.nkey(USERS.client('n1')), '--socket', paths.socketPath, '--cache', paths.cacheDir];
    const client = startBundle('node', copyBundleAlone('client'), 'client', [...args, '--archive-dir', m.archiveDir, '--alive', '1', '--engine-timeout', '2']);
    await m.waitReport('n1', 'web', (r) => r.state === 'applied');

    const first = await waitFor('a first alive message', () => heard[0], 10_000);
    assert.is(first.subject, 'prov.alive.n1');
    assert.equal(
      { ...first.alive, at: '', engine: { ...first.alive.engine, since: '' } },
      {
        node: 'n1',
        version: VERSION,
        every: 1,
        engine: { state: 'up', since: '' },
        modules: 1,
        at: '',
      },
    );
    assert.ok(Math.abs(Date.parse(first.alive.at) - first.got) < 2000, first.alive.at);
    // Every period, not only at start.
    await waitFor('three alive messages', () => heard.length >= 3, 5000);

    const stoppedAt = Date.now();
    await n1.stopEngine();
    const down = await waitFor('an alive message saying the engine is down', () => heard.find((h) => h.alive.engine.state === 'down'), 5000);
    assert.ok(down.got - stoppedAt < 2500, `said ${down.got - stoppedAt} ms after the engine stopped`);
    assert.ok(Date.parse(down.alive.engine.since) >= stoppedAt - 50, `down since ${down.alive.engine.since}, stopped at ${new Date(stoppedAt).toISOString()}`);

    const startedAt = Date.now();
    await n1.startEngine();
    const up = await waitFor(
      'an alive message saying the engine is up again',
      () => heard.find((h) => h.got > startedAt && h.alive.engine.state === 'up'),
      5000,
    );
    assert.ok(Date.parse(up.alive.engine.since) >= startedAt - 50, `up since ${up.alive.engine.since}`);

    client.child.kill('SIGTERM');
    assert.equal(await client.exited, { code: 0, signal: null }, client.stderr());
    sub.unsubscribe();
  }));

test('a site cut from the hub: its client says at warning that it cannot reach the hub, the hub hears no word from it, and both end once the link is back', async () => {
  const hubLeafPort = await freePort();
  // The WAN link: the hub advertises it, so the site reconnects through it, never around it.
  const proxy = await startTcpProxy(hubLeafPort);
  const leaf = { listen: `127.0.0.1:${hubLeafPort}`, advertise: `127.0.0.1:${proxy.port}` };
  await withIsolatedMesh({ nodes: ['n1'], leaf }, async (m) => {
    const hub = `nats-leaf://127.0.0.1:${proxy.port}`;
    const credentials = ['--node', 'n1', '--credentials', join(m.dir, 'credentials')];
    const site = await startNats('', {
      dir: join(m.dir, 'site1'),
      whole: ({ listen }) => busConfigOut([...credentials, '--leaf', 'site1', '--hub', hub, '--listen', listen]),
    });
    try {
      const heard: number[] = [];
      const sub = m.admin.subscribe(ALIVE_ALL, { callback: () => void heard.push(Date.now()) });
      const paths = nodePaths(join(m.dir, 'n1'));
      const args = ['--node', 'n1', '--nats', site.url, '--nkey', m.nkey(USERS.client('n1')), '--socket', paths.socketPath, '--cache', paths.cacheDir];
      const client = startBundle('node', copyBundleAlone('client'), 'client', [...args, '--alive', '1'], { JOURNAL_STREAM: '8:1' });
      await client.waitForLog(/^<6>client ready$/, 20_000);
      await waitFor('alive messages from the site at the hub', () => heard.length >= 2, 10_000);

      proxy.cut();
      const cutAt = Date.now();
      const warning = await client.waitForLog(/cannot reach the hub/, 5000);
      console.log(`  said ${Date.now() - cutAt} ms after the cut: ${warning}`);
      assert.match(
        warning,
        /^<4>cannot reach the hub: \$JS\.API\.INFO found no responders behind 127\.0\.0\.1:\d+; the mesh's buckets cannot be read or written from here until it answers$/,
      );
      const quietFrom = Date.now();
      await sleep(2500);
      assert.is(heard.filter((t) => t > quietFrom).length, 0, 'the hub hears nothing from the site during the cut');
      assert.is(
        client
          .stderr()
          .split('\n')
          .filter((l) => /cannot reach the hub/.test(l)).length,
        1,
        'said once',
      );

      proxy.restore();
      await client.waitForLog(/^<6>the hub is in reach again: its JetStream answers$/, 15_000);
      const backFrom = Date.now();
      await waitFor('alive messages at the hub again', () => heard.some((t) => t > backFrom), 5000);
      client.child.kill('SIGTERM');
      assert.equal(await client.exited, { code: 0, signal: null }, client.stderr());
      sub.unsubscribe();
    } finally {
      await site.cleanup();
      proxy.close();
    }
  });
});

test.run();
