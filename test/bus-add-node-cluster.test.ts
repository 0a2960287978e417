// Adding a node to a running three-server cluster as deploy/README.md says (issue 20 item 8): each
// server runs its own nats.conf (name, routes) that includes the generated mesh.conf, and init makes
// three copies of each bucket (deploy/README.md, "A cluster of three servers"); bus-config is
// run again on every server with one more --node, and each server is reloaded twice, one after the
// other. The new node, on a server of its own, gets its plans; a node already there goes on.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { connectBus } from '../src/shared/bus/bus.ts';
import { DEFAULT_ARCHIVES } from '../src/shared/contract/buckets.ts';
import { INBOX_PREFIXES } from '../src/shared/bus/inbox.ts';
import { publishModule } from './helpers/archive.ts';
import { cleanupBundles, ensureBuilt, ROOT } from './helpers/bundle.ts';
import { jetStreamFor } from './helpers/isolated-mesh.ts';
import { createInputBuckets, startSeatProcess, waitForSeat } from './helpers/mesh-bus.ts';
import { createMeshNode, nodePaths, placementUnder } from './helpers/mesh-node.ts';
import { freePort, startNats, type NatsServer } from './helpers/nats.ts';
import { spawnQuiet } from './helpers/spawn.ts';
import { waitFor } from './helpers/wait.ts';
import { tempDir } from './helpers/temp.ts';

/** How long the new node may take from its client's start to its file. */
const APPLIED_MS = 15_000;

test.before(() => ['server', 'client'].forEach(ensureBuilt));
test.after(() => cleanupBundles());

/** One server of the cluster test: its own dir, with the generated `mesh.conf` its `nats.conf` includes. */
type MeshServer = { name: string; dir: string; nats: NatsServer; said: () => string; listen: string; storeDir: string };

/** Writes the generated configuration of `nodes` into `server.dir/mesh.conf`, as the operator does on each server. */
function busConfigInto(server: Pick<MeshServer, 'dir' | 'listen' | 'storeDir'>, credentials: string, nodes: string[]): string {
  const run = spawnSync(
    process.execPath,
    [
      join(ROOT, 'dist', 'server.js'),
      'bus-config',
      ...nodes.flatMap((n) => ['--node', n]),
      ...['--credentials', credentials, '--listen', server.listen, '--store-dir', server.storeDir, '--out', join(server.dir, 'mesh.conf')],
    ],
    { encoding: 'utf8' },
  );
  if (run.status !== 0) throw new Error(`bus-config exited ${run.status}: ${run.stderr}`);
  return run.stderr;
}

/** Three servers routed to each other, each running its own `nats.conf` (name, cluster) that includes the generated `mesh.conf`, as deploy/README.md says. */
async function startMeshCluster(dir: string, credentials: string, nodes: string[]): Promise<MeshServer[]> {
  const names = ['s1', 's2', 's3'];
  const routes = await Promise.all(names.map(() => freePort()));
  return Promise.all(
    names.map(async (name, i) => {
      let said = '';
      const server = { name, dir: join(dir, name), listen: '', storeDir: '' };
      const nats = await startNats('', {
        dir: server.dir,
        spawn: (label, command, args) => {
          const child = spawnQuiet(label, command, args);
          child.stderr?.on('data', (d: Buffer) => (said += String(d)));
          return child;
        },
        whole: (where) => {
          Object.assign(server, where);
          busConfigInto(server, credentials, nodes);
          const others = routes.filter((_, j) => j !== i).map((p) => `"nats-route://127.0.0.1:${p}"`);
          return `server_name: "${name}"\ncluster { name: "mesh", listen: "127.0.0.1:${routes[i]}", routes: [${others.join(', ')}] }\ninclude "mesh.conf"\n`;
        },
      });
      return { ...server, nats, said: () => said };
    }),
  );
}

test('on a three-server cluster, a node added by bus-config on every server and two reloads each, one server after the other, gets its plans', async () => {
  const dir = tempDir('mesh-add-node-cluster-');
  const credentials = join(dir, 'credentials');
  const undo: (() => unknown)[] = [];
  try {
    const servers = await startMeshCluster(dir, credentials, ['n1', 'n2']);
    undo.push(() => Promise.all(servers.map((s) => s.nats.cleanup())));
    const urls = servers.map((s) => s.nats.url).join(',');
    const seed = (user: string) => join(credentials, `${user}.nk`);
    const admin = await waitFor(
      'the cluster’s JetStream',
      async () => {
        const nc = await connectBus({ servers: [urls], name: 'admin', nkey: seed('admin'), inboxPrefix: INBOX_PREFIXES.admin });
        if ((await jetStreamFor(nc)) === 'ok') return nc;
        await nc.close();
        return undefined;
      },
      30_000,
    );
    undo.push(() => admin.close());
    // Three copies of each bucket, as deploy/README.md's cluster makes them.
    const init = spawnSync(
      process.execPath,
      [join(ROOT, 'dist', 'server.js'), 'init', '--nats', urls, '--nkey', seed('admin'), '--nodes', '3', '--replicas', '3'],
      {
        encoding: 'utf8',
      },
    );
    assert.is(init.status, 0, init.stderr + init.stdout);
    assert.match(init.stdout, /buckets ready, each with 3 copies/, init.stdout);
    const seat = startSeatProcess(urls, { login: { nkey: seed('provisioner') } });
    undo.push(() => seat.stop());
    const kv = { ...(await createInputBuckets(admin)), ...(await waitForSeat(admin, seat, 30_000)) };
    await publishModule(kv.modules, { store: kv.archives, bucket: DEFAULT_ARCHIVES }, 'web', {
      templates: { 'web.conf': 'mode ${config:mode}\n' },
      provisioning: { files: [{ path: '${dir:config}/web.conf', template: 'web.conf' }] },
    });
    // Each node on a server of its own: what it asks crosses the routes.
    const node = (name: string, server: MeshServer) => {
      const n = createMeshNode({
        name,
        dir: join(dir, name),
        url: server.nats.url,
        archiveDir: join(dir, 'archives'),
        login: { nkey: seed(`provisioner.${name}`) },
      });
      undo.push(() => n.stop());
      return n;
    };
    const assign = async (name: string, mode: string) => {
      await kv.config.put(`${name}.web.mode`, mode);
      await kv.assignments.put(`${name}.web`, JSON.stringify({ node: name, module: 'web', placement: placementUnder(nodePaths(join(dir, name)).root, 'web') }));
    };
    const n1 = node('n1', servers[0]!);
    await n1.startEngine();
    n1.startClientProcess();
    await assign('n1', 'one');
    await waitFor('n1’s file', () => n1.moduleFile('web') === 'mode one\n', 30_000);

    for (const server of servers) assert.match(busConfigInto(server, credentials, ['n1', 'n2', 'n3']), /new account provisioner\.n3: reload nats-server twice/);
    for (const server of servers) {
      for (const count of [1, 2]) {
        process.kill(server.nats.pid()!, 'SIGHUP');
        await waitFor(`${server.name}: reload ${count}`, () => (server.said().match(/Reloaded server configuration/g) ?? []).length >= count);
      }
    }

    const n3 = node('n3', servers[2]!);
    await n3.startEngine();
    const client = n3.startClientProcess();
    await assign('n3', 'three');
    await waitFor('n3’s file', () => n3.moduleFile('web') === 'mode three\n', APPLIED_MS).catch((err: Error) => {
      throw new Error(`${err.message}; n3's client said:\n${client.stderr()}`);
    });
    await kv.config.put('n1.web.mode', 'again');
    await waitFor('n1’s change', () => n1.moduleFile('web') === 'mode again\n');
  } finally {
    for (const step of undo.reverse())
      await Promise.resolve()
        .then(step)
        .catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
