// Leaf nodes (issue 22 item 2): a site runs a nats-server of its own as a leaf node of the mesh's hub,
// from the file `bus-config --leaf SITE` renders; the hub runs what `bus-config --leaf-listen` renders.
// A node's client (its bundle, its own nkey) and the reference engine at the site reach the hub's
// JetStream, the seat and the asks through the leaf connection, keep exactly their isolation, and
// catch up after the WAN link is cut and restored, without a restart.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import { connectBus } from '../src/shared/bus.ts';
import { APPLIED, CONFIG } from '../src/shared/buckets.ts';
import { INBOX_PREFIXES } from '../src/shared/inbox.ts';
import { USERS } from '../src/server/commands/bus-config/config.ts';
import { WATCH_HEARTBEAT_MS, WATCH_MISSED_HEARTBEATS } from '../src/shared/watch/keeper.ts';
import { VAULT_CREDENTIAL } from '../src/shared/subjects.ts';
import { startVault } from './helpers/vault.ts';
import type { ModuleSpec } from './helpers/archive.ts';
import { busConfigOut } from './helpers/bus-config-run.ts';
import { jetStreamFor, withIsolatedMesh, type IsolatedMesh } from './helpers/isolated-mesh.ts';
import { createMeshNode } from './helpers/mesh-node.ts';
import { freePort, startNats, type NatsServer } from './helpers/nats.ts';
import { attempt, stored, sameStored } from './helpers/isolation-probe.ts';
import { startTcpProxy, type TcpProxy } from './helpers/tcp-proxy.ts';
import { waitFor } from './helpers/wait.ts';
import { spawnSync } from 'node:child_process';

const [NA, NB] = ['na', 'nb'];
const SITE = 'site1';
const MODULE = 'web';
const WEB: ModuleSpec = {
  templates: { 'web.conf': 'level ${config:level}\n' },
  provisioning: { files: [{ path: '${dir:config}/web.conf', template: 'web.conf', mode: 'owned', change: 'restart' }] },
};
/**
 * How long a change may take to reach a site's engine once the WAN link is back: the leaf connection's
 * reconnect (1 s) and the watch's recovery. The client's own connection to its site never drops, so
 * only the watch's heartbeats tell it the hub missed it: the budget follows their period.
 */
const CATCH_UP_MS = 10_000 + (WATCH_MISSED_HEARTBEATS + 2) * WATCH_HEARTBEAT_MS;

/** `node dist/server.js bus-config <args>` for the mesh's nodes with its credentials: its stdout, or an error with its stderr. */
function busConfig(m: IsolatedMesh, args: string[]): string {
  return busConfigOut(['--node', NA, '--node', NB, '--credentials', join(m.dir, 'credentials'), ...args]);
}

/** A self-signed certificate for 127.0.0.1 and its key, in `dir`: the hub's leaf port serves it, and a site trusts it as its CA. */
function selfSignedCert(dir: string): { cert: string; key: string } {
  const [cert, key] = [join(dir, 'hub-leaf.pem'), join(dir, 'hub-leaf.key')];
  const run = spawnSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=mesh hub',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
      '-keyout',
      key,
      '-out',
      cert,
    ],
    { encoding: 'utf8' },
  );
  if (run.status !== 0) throw new Error(`openssl exited ${run.status}: ${run.stderr}`);
  return { cert, key };
}

/** The site's leaf server on the file bus-config renders, reaching the hub through `proxy`. */
async function startSite(m: IsolatedMesh, proxy: TcpProxy, hubCa: string): Promise<NatsServer> {
  const hub = `nats-leaf://127.0.0.1:${proxy.port}`;
  return startNats('', { dir: join(m.dir, SITE), whole: ({ listen }) => busConfig(m, ['--leaf', SITE, '--hub', hub, '--hub-ca', hubCa, '--listen', listen]) });
}

/** A connection to the site's server as `user`, with the inbox prefix its grants allow. */
async function onSite(site: NatsServer, m: IsolatedMesh, user: string, prefix: string): Promise<NatsConnection> {
  return connectBus({ servers: [site.url], name: `${user} at ${SITE}`, nkey: m.nkey(user), inboxPrefix: prefix });
}

/** What a direct get of `key` in `bucket` answers `nc`: the value, or why there is none. */
async function directGet(nc: NatsConnection, bucket: string, key: string): Promise<string> {
  const got = await attempt(() => nc.request(`$JS.API.DIRECT.GET.KV_${bucket}.$KV.${bucket}.${key}`, '', { timeout: 1500 }));
  if (!got.ok) return `refused: ${got.why}`;
  return got.value.headers?.code ? `refused: ${got.value.headers.code}` : got.value.string();
}

test('a node at a site fills, follows a change, answers asks and keeps its isolation through its leaf server, and catches up after a WAN cut', async () => {
  const hubLeafPort = await freePort();
  // The WAN link: the hub advertises it, so the site reconnects through it, never around it.
  const proxy = await startTcpProxy(hubLeafPort);
  const certDir = mkdtempSync(join(tmpdir(), 'mesh-leaf-tls-'));
  const tls = selfSignedCert(certDir);
  const leaf = { listen: `127.0.0.1:${hubLeafPort}`, advertise: `127.0.0.1:${proxy.port}`, tls };
  await withIsolatedMesh({ nodes: [NA, NB], leaf }, async (m) => {
    let site: NatsServer | undefined;
    const closing: (() => unknown)[] = [() => proxy.close(), () => rmSync(certDir, { recursive: true, force: true })];
    try {
      // The hub runs exactly what bus-config renders for it.
      const hubConf = readFileSync(join(m.nats.dir, 'nats.conf'), 'utf8');
      const [, listen] = /^listen: "([^"]+)"/m.exec(hubConf)!;
      const [, storeDir] = /store_dir: "([^"]+)"/.exec(hubConf)!;
      assert.is(
        hubConf,
        busConfig(m, [
          '--listen',
          listen!,
          '--store-dir',
          storeDir!,
          '--leaf-listen',
          leaf.listen,
          '--leaf-advertise',
          leaf.advertise,
          '--leaf-tls-cert',
          tls.cert,
          '--leaf-tls-key',
          tls.key,
        ]),
      );
      // The WAN link carries TLS: the site verifies the hub's certificate, and its passwords never cross in the clear.
      site = await startSite(m, proxy, tls.cert);
      closing.push(() => site?.cleanup());

      const password = readFileSync(join(m.dir, 'credentials', `leaf.${NA}.pw`), 'utf8').trim();
      const client = await onSite(site, m, USERS.client(NA), INBOX_PREFIXES.node(NA));
      closing.push(() => client.close());
      await waitFor('JetStream through the leaf connection', async () => ((await jetStreamFor(client)) === 'ok' ? true : null), 10_000);

      assert.ok(proxy.carried().length > 0);
      assert.not.ok(proxy.carried().includes(password), 'the leaf password never crossed the link in the clear');
      await m.kv.config.put(`${NA}.${MODULE}.level`, 'one');
      await m.kv.config.put(`${NB}.${MODULE}.level`, 'nb-secret');
      await m.publish(MODULE, WEB);
      await m.assign(NA, MODULE);
      // The placement `assign` writes is under the node's dir in the mesh.
      const node = createMeshNode({ name: NA, dir: join(m.dir, NA), url: site.url, archiveDir: m.archiveDir, login: { nkey: m.nkey(USERS.client(NA)) } });
      closing.push(() => node.stop());
      await node.startEngine();
      const running = node.startClientProcess();
      await m.waitReport(NA, MODULE, (r) => r.state === 'applied', 20_000);
      assert.is(node.moduleFile(MODULE), 'level one\n', 'filled through the leaf');

      await m.kv.config.put(`${NA}.${MODULE}.level`, 'two');
      await waitFor('the change at the site', async () => (node.moduleFile(MODULE) === 'level two\n' ? true : null), 10_000);

      // An ask from the node's runner on the hub crosses the leaf connection to the client at the site.
      const runner = await m.connect(USERS.runner(NA));
      const answer = await runner.request(`prov.ask.${NA}`, JSON.stringify({ module: MODULE, kind: 'config', key: 'level' }), { timeout: 5000 });
      assert.equal(answer.json(), { value: 'two' });

      // The vault, asked at the site, learns the asking node from the subject its account maps the ask to.
      const vault = await startVault(await m.connect(USERS.vault), []);
      closing.push(() => vault.stop());
      const name = `pair/pg/database/${NA}/${MODULE}`;
      const vaultAnswer = await client.request(VAULT_CREDENTIAL, JSON.stringify({ name }), { timeout: 5000 });
      assert.ok('error' in vaultAnswer.json<object>(), 'no provider pg is planned for na: refused, and said so');
      assert.equal(
        vault.asks.map((a) => [a.name, a.asker]),
        [[name, NA]],
      );

      // Isolation at the site: its own keys, never another node's.
      assert.is(await directGet(client, CONFIG, `${NA}.${MODULE}.level`), 'two');
      assert.match(await directGet(client, CONFIG, `${NB}.${MODULE}.level`), /^refused/);
      const before = await stored(m.admin, APPLIED, `${NB}.${MODULE}`);
      client.publish(`$KV.${APPLIED}.${NB}.${MODULE}`, 'forged at the site');
      await client.flush();
      await new Promise((r) => setTimeout(r, 500));
      assert.ok(sameStored(before, await stored(m.admin, APPLIED, `${NB}.${MODULE}`)), "nb's report untouched");
      const nbRunner = await onSite(site, m, USERS.runner(NB), INBOX_PREFIXES.runner(NB));
      closing.push(() => nbRunner.close());
      const crossAsk = await attempt(() =>
        nbRunner.request(`prov.ask.${NA}`, JSON.stringify({ module: MODULE, kind: 'config', key: 'level' }), { timeout: 1500 }),
      );
      assert.not.ok(crossAsk.ok, "nb's runner cannot ask na");

      // The WAN link cut: the site keeps what it has; a change made meanwhile arrives once it is back.
      const pid = running.child.pid;
      proxy.cut();
      await m.kv.config.put(`${NA}.${MODULE}.level`, 'three');
      await new Promise((r) => setTimeout(r, 2000));
      assert.is(node.moduleFile(MODULE), 'level two\n', 'the site runs on what it had');
      const cutAt = Date.now();
      proxy.restore();
      await waitFor('the change made during the cut', async () => (node.moduleFile(MODULE) === 'level three\n' ? true : null), CATCH_UP_MS);
      console.log(`  caught up ${Date.now() - cutAt} ms after the WAN link came back`);
      assert.is(running.child.pid, pid);
      assert.is(running.child.exitCode, null, 'the client was not restarted');
      await m.waitReport(NA, MODULE, (r) => r.state === 'applied', 10_000);
    } finally {
      for (const step of closing.reverse())
        await Promise.resolve()
          .then(step)
          .catch(() => {});
    }
  });
});

test.run();
