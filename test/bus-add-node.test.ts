// Adding a node to a running mesh as the README says (issue 20 item 8): `bus-config` again with one
// more --node, written over the file nats-server runs, then two reloads. nats-server 2.9 makes a new
// account on a reload but wires its service imports only on a reload that finds the account there
// already: after one reload the new node's login gets no JetStream at all, after the second it gets
// its plans — no restart, and the nodes already there go on.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { connectBus } from '../src/shared/bus/bus.ts';
import { INBOX_PREFIXES } from '../src/shared/bus/inbox.ts';
import { cleanupBundles, ensureBuilt, ROOT } from './helpers/bundle.ts';
import { jetStreamFor, startIsolatedMesh, type IsolatedMesh } from './helpers/isolated-mesh.ts';
import { createMeshNode, nodePaths, placementUnder } from './helpers/mesh-node.ts';
import { waitFor } from './helpers/wait.ts';
import { tempDir } from './helpers/temp.ts';

/** How long the new node may take from its client's start to its module applied. */
const APPLIED_MS = 15_000;

test.before(() => ['server', 'client'].forEach(ensureBuilt));
test.after(() => cleanupBundles());

/** Runs `node dist/server.js bus-config` as an operator does, over the file the mesh's nats-server runs. */
function busConfigOver(m: IsolatedMesh, nodes: string[]): { status: number | null; stderr: string } {
  const args = [...nodes.flatMap((n) => ['--node', n]), '--credentials', join(m.dir, 'credentials')];
  const where = ['--listen', `127.0.0.1:${m.nats.port}`, '--store-dir', join(m.nats.dir, 'js'), '--out', join(m.nats.dir, 'nats.conf')];
  return spawnSync(process.execPath, [join(ROOT, 'dist', 'server.js'), 'bus-config', ...args, ...where], { encoding: 'utf8' });
}

/** Sends nats-server SIGHUP and waits until its log says the `count`th reload is done. */
async function reload(m: IsolatedMesh, count: number): Promise<void> {
  process.kill(m.nats.pid()!, 'SIGHUP');
  await waitFor(`reload ${count}`, () => (m.serverSaid().match(/Reloaded server configuration/g) ?? []).length >= count);
}

test('a node added by bus-config and two reloads gets its plans; after one reload its account has no JetStream yet', async () => {
  const m = await startIsolatedMesh({ nodes: ['n1', 'n2'], initNodes: 3 });
  try {
    await m.publish('web', {
      templates: { 'web.conf': 'mode ${config:mode}\n' },
      provisioning: { files: [{ path: '${dir:config}/web.conf', template: 'web.conf' }] },
    });
    await m.kv.config.put('n1.web.mode', 'one');
    const n1 = m.node('n1');
    await n1.startEngine();
    await n1.startClient();
    await m.assign('n1', 'web');
    await m.waitReport('n1', 'web', (r) => r.state === 'applied');

    const rerun = busConfigOver(m, ['n1', 'n2', 'n3']);
    assert.is(rerun.status, 0, rerun.stderr);
    assert.match(rerun.stderr, /generated the nkey seed of provisioner\.n3/);
    assert.match(rerun.stderr, /new account provisioner\.n3: reload nats-server twice/);

    await reload(m, 1);
    const probe = await connectBus({ servers: [m.nats.url], name: 'n3 probe', nkey: m.nkey('provisioner.n3'), inboxPrefix: INBOX_PREFIXES.node('n3') });
    try {
      // The login is known (it connects) but its account's imports are not wired yet.
      const before = await jetStreamFor(probe);
      console.log(`# n3 after one reload: ${before}`);
      assert.is.not(before, 'ok');
      await reload(m, 2);
      await waitFor('JetStream for n3', async () => (await jetStreamFor(probe)) === 'ok');
    } finally {
      await probe.close();
    }

    const n3dir = join(m.dir, 'n3');
    const n3 = createMeshNode({ name: 'n3', dir: n3dir, url: m.nats.url, archiveDir: m.archiveDir, login: { nkey: m.nkey('provisioner.n3') } });
    try {
      await n3.startEngine();
      const client = n3.startClientProcess();
      await m.kv.config.put('n3.web.mode', 'three');
      await m.kv.assignments.put('n3.web', JSON.stringify({ node: 'n3', module: 'web', placement: placementUnder(nodePaths(n3dir).root, 'web') }));
      await m
        .waitReport('n3', 'web', (r) => r.state === 'applied', APPLIED_MS)
        .catch((err: Error) => {
          throw new Error(`${err.message}; n3's client said:\n${client.stderr()}`);
        });
      assert.is(n3.moduleFile('web'), 'mode three\n');
      // The nodes already there go on through both reloads.
      await m.kv.config.put('n1.web.mode', 'again');
      await waitFor("n1's change", () => n1.moduleFile('web') === 'mode again\n');
      assert.equal(m.violations(), []);
    } finally {
      await n3.stop();
    }
  } finally {
    await m.close();
  }
});

test('bus-config says the accounts a run adds or drops over an existing file, and nothing when the file is new or keeps its accounts', () => {
  const dir = tempDir('mesh-add-node-');
  try {
    const run = (nodes: string[]) =>
      spawnSync(
        process.execPath,
        [
          join(ROOT, 'dist', 'server.js'),
          'bus-config',
          ...nodes.flatMap((n) => ['--node', n]),
          '--credentials',
          join(dir, 'c'),
          '--out',
          join(dir, 'nats.conf'),
        ],
        { encoding: 'utf8' },
      );
    const first = run(['n1']);
    assert.is(first.status, 0, first.stderr);
    assert.not.match(first.stderr, /reload/);
    const more = run(['n1', 'n2', 'n3']);
    assert.match(more.stderr, /^mesh-provisioner: new accounts provisioner\.n2, provisioner\.n3: reload nats-server twice .*one after the other$/m);
    assert.is(
      more.stderr
        .trim()
        .split('\n')
        .filter((l) => /reload/.test(l)).length,
      1,
      more.stderr,
    );
    assert.not.match(run(['n1', 'n2', 'n3']).stderr, /reload/);
    const fewer = run(['n1', 'n3']);
    assert.not.match(fewer.stderr, /reload nats-server twice/, 'a node removed needs no second reload');
    // A node left off the run (a forgotten --node) is said, not dropped in silence.
    assert.match(
      fewer.stderr,
      /^mesh-provisioner: account provisioner\.n2 no longer in the file \(not named by this run's --node\/--provider\): once nats-server reloads it, their logins are refused/m,
    );
    assert.not.match(run(['n1', 'n3']).stderr, /no longer in the file/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
