// Leaf nodes (issue 22 item 2): a site runs a nats-server of its own as a leaf node of the mesh's hub,
// from the file `bus-config --leaf SITE` renders; the hub runs what `bus-config --leaf-listen` renders.
// A node's client (its bundle, its own nkey) and the reference engine at the site reach the hub's
// JetStream, the seat and the asks through the leaf connection, keep exactly their isolation, and
// catch up after the WAN link is cut and restored, without a restart.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import { connectBus } from '../src/shared/bus/bus.ts';
import { Kvm } from '@nats-io/kv';
import { APPLIED, CONFIG } from '../src/shared/contract/buckets.ts';
import { boundBucket } from '../src/shared/contract/keys.ts';
import { INBOX_PREFIXES } from '../src/shared/bus/inbox.ts';
import { USERS } from '../src/server/commands/bus-config/users.ts';
import { WATCH_HEARTBEAT_MS, WATCH_MISSED_HEARTBEATS } from '../src/shared/bus/watch/keeper.ts';
import { VAULT_CREDENTIAL } from '../src/shared/contract/subjects.ts';
import { startVault } from './helpers/vault.ts';
import type { ModuleSpec } from './helpers/archive.ts';
import type { Report } from '../src/shared/contract/report.ts';
import { busConfigOut } from './helpers/bus-config-run.ts';
import { jetStreamFor, withIsolatedMesh, type IsolatedMesh } from './helpers/isolated-mesh.ts';
import { createMeshNode, type MeshNode } from './helpers/mesh-node.ts';
import type { Running } from './helpers/bundle.ts';
import { BUCKET_API_TIMEOUT_MS } from '../src/shared/bus/bucket-bind.ts';
import { freePort, startNats, type NatsServer } from './helpers/nats.ts';
import { attempt, stored, sameStored } from './helpers/isolation-probe.ts';
import { startTcpProxy, type TcpProxy } from './helpers/tcp-proxy.ts';
import { waitFor } from './helpers/wait.ts';
import { spawnSync } from 'node:child_process';
import { tempDir } from './helpers/temp.ts';

const [NA, NB] = ['na', 'nb'];
const SITE = 'site1';
const MODULE = 'web';
const PROVIDER = 'pg';
const WEB: ModuleSpec = {
  templates: { 'web.conf': 'level ${config:level}\n' },
  provisioning: { files: [{ path: '${dir:config}/web.conf', template: 'web.conf', mode: 'owned', change: 'restart' }] },
};
/** A module reading a config value and a provider's bound entry, each of a bucket a node reads only its own keys of. */
const BOUND_WEB: ModuleSpec = {
  templates: { 'web.conf': 'level ${config:level}\nuser ${bound:database:user}\n' },
  provisioning: {
    files: [{ path: '${dir:config}/web.conf', template: 'web.conf', mode: 'owned', change: 'restart' }],
    provisions: [{ provider: PROVIDER, provision: 'database' }],
  },
};
/** How long a site's client, restarted, may take to fill and report `applied`: a client on the hub takes about 50 ms besides its process's start. */
const RESTART_BUDGET_MS = 3000;
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

/** The site's leaf server on the file bus-config renders, reaching the hub at `port` (through a proxy, or the hub's own leaf port), trusting `hubCa` when given. */
async function startSite(m: IsolatedMesh, port: number, hubCa?: string): Promise<NatsServer> {
  const hub = `nats-leaf://127.0.0.1:${port}`;
  const ca = hubCa ? ['--hub-ca', hubCa] : [];
  return startNats('', { dir: join(m.dir, SITE), whole: ({ listen }) => busConfig(m, ['--leaf', SITE, '--hub', hub, ...ca, '--listen', listen]) });
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
  const certDir = tempDir('mesh-leaf-tls-');
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
      site = await startSite(m, proxy.port, tls.cert);
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

/** Stops a client bundle as systemd does: SIGTERM, and it exits 0. */
async function stopClient(running: Running): Promise<void> {
  running.child.kill('SIGTERM');
  assert.is((await running.exited).code, 0);
}

/** Starts `node`'s client bundle: the process, and how long after its start it reported `applied` (seen in `reports`). */
async function startTimed(node: MeshNode, reports: readonly Report[]): Promise<{ running: Running; tookMs: number }> {
  const startedAt = new Date();
  const running = node.startClientProcess();
  const applied = await waitFor(
    'an applied report of the restarted client',
    () => reports.find((r) => r.state === 'applied' && new Date(r.at) >= startedAt),
    15_000,
  ).catch((err: Error) => {
    throw new Error(`${err.message}; its log:\n${running.stderr()}`);
  });
  return { running, tookMs: new Date(applied.at).getTime() - startedAt.getTime() };
}

/** A site's leaf file as bus-config rendered it before issue 22: every JetStream API call of a node crossed to the hub. */
function everyApiMapped(conf: string): string {
  const before = conf.replace(/mappings: \{[^}]*\}/, 'mappings: { "$JS.API.>": "$JS.mesh.API.>", "$KV.>": "$JS.mesh.API.$KV.>" }');
  assert.is.not(before, conf, 'the leaf file has its mappings');
  return before;
}

/** The module's file, every value filled. */
const FILLED = 'level one\nuser web_user\n';

test("a site's client restarted fills and reports applied within seconds, never `waiting` for a value that is there", async () => {
  const hubLeafPort = await freePort();
  await withIsolatedMesh({ nodes: [NA, NB], providers: [PROVIDER], leaf: { listen: `127.0.0.1:${hubLeafPort}` } }, async (m) => {
    const closing: (() => unknown)[] = [];
    try {
      const site = await startSite(m, hubLeafPort);
      closing.push(() => site.cleanup());
      // Every value is there before the client first starts: no report may ever say it is waited for.
      await m.kv.config.put(`${NA}.${MODULE}.level`, 'one');
      const bound = await new Kvm(m.admin).open(boundBucket(PROVIDER));
      await bound.put(`${NA}.${MODULE}.database`, JSON.stringify({ as: 'web', user: 'web_user', values: {} }));
      await m.publish(MODULE, BOUND_WEB);
      await m.assign(NA, MODULE);
      const reports: Report[] = [];
      const watch = await m.kv.applied.watch({ key: `${NA}.${MODULE}` });
      closing.push(() => watch.stop());
      void (async () => {
        for await (const e of watch) if (e.operation === 'PUT') reports.push(e.json<Report>());
      })();
      const login = { nkey: m.nkey(USERS.client(NA)) };
      const node = createMeshNode({ name: NA, dir: join(m.dir, NA), url: site.url, archiveDir: m.archiveDir, login });
      closing.push(() => node.stop());
      await node.startEngine();
      const first = node.startClientProcess();
      await m.waitReport(NA, MODULE, (r) => r.state === 'applied', 20_000);
      assert.is(node.moduleFile(MODULE), FILLED);

      await stopClient(first);
      const restarted = await startTimed(node, reports);
      console.log(`  the restarted client at the site reported applied ${restarted.tookMs} ms after its start`);
      assert.ok(restarted.tookMs < RESTART_BUDGET_MS, `applied ${restarted.tookMs} ms after its start; its log:\n${restarted.running.stderr()}`);

      // A site still on the previous release's leaf file: a check of a stream the node may not read is
      // unanswered until its timeout — once for the start's buckets and their watches, once for the
      // provider's bucket its plan names — and the start waits for the values all the same.
      await stopClient(restarted.running);
      await site.cleanup();
      const before = await startNats('', {
        dir: join(m.dir, `${SITE}-before`),
        whole: ({ listen }) => everyApiMapped(busConfig(m, ['--leaf', SITE, '--hub', `nats-leaf://127.0.0.1:${hubLeafPort}`, '--listen', listen])),
      });
      closing.push(() => before.cleanup());
      const probe = await onSite(before, m, USERS.client(NA), INBOX_PREFIXES.node(NA));
      closing.push(() => probe.close());
      await waitFor('JetStream through the leaf connection', async () => ((await jetStreamFor(probe)) === 'ok' ? true : null), 10_000);
      const atBefore = createMeshNode({ name: NA, dir: join(m.dir, NA), url: before.url, archiveDir: m.archiveDir, login });
      closing.push(() => atBefore.stop());
      const old = await startTimed(atBefore, reports);
      console.log(`  on the previous leaf file: applied ${old.tookMs} ms after its start`);
      const budget = 2 * BUCKET_API_TIMEOUT_MS + RESTART_BUDGET_MS;
      assert.ok(old.tookMs < budget, `applied ${old.tookMs} ms after its start (at most ${budget}); its log:\n${old.running.stderr()}`);

      assert.equal(
        reports.filter((r) => r.state === 'waiting').map((r) => ({ at: r.at, waiting: r.waiting.map((w) => `${w.kind}:${w.name}`) })),
        [],
        'no report waits for a value that is there',
      );
      assert.is(node.moduleFile(MODULE), FILLED);
    } finally {
      for (const step of closing.reverse())
        await Promise.resolve()
          .then(step)
          .catch(() => {});
    }
  });
});

test.run();
