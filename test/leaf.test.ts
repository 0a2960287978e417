// Leaf nodes (issue 22 item 2): a site runs a nats-server of its own as a leaf node of the mesh's hub,
// from the file `bus-config --leaf SITE` renders; the hub runs what `bus-config --leaf-listen` renders.
// A node's client (its bundle, its own nkey) and the reference engine at the site reach the hub's
// JetStream, the seat and the asks through the leaf connection, keep exactly their isolation, and
// catch up after the WAN link is cut and restored, without a restart.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import bcrypt from 'bcryptjs';
import { dirname, join } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import { connectBus } from '../src/shared/bus.ts';
import { APPLIED, CONFIG } from '../src/shared/buckets.ts';
import { INBOX_PREFIXES } from '../src/shared/inbox.ts';
import { USERS } from '../src/server/commands/bus-config/config.ts';
import { WATCH_HEARTBEAT_MS, WATCH_MISSED_HEARTBEATS } from '../src/shared/watch/keeper.ts';
import { VAULT_CREDENTIAL } from '../src/shared/subjects.ts';
import { startVault } from './helpers/vault.ts';
import type { ModuleSpec } from './helpers/archive.ts';
import { ensureBuilt, ROOT } from './helpers/bundle.ts';
import { jetStreamFor, withIsolatedMesh, type IsolatedMesh } from './helpers/isolated-mesh.ts';
import { createMeshNode } from './helpers/mesh-node.ts';
import { freePort, startNats, type NatsServer } from './helpers/nats.ts';
import { attempt, stored, sameStored } from './helpers/isolation-probe.ts';
import { startTcpProxy, type TcpProxy } from './helpers/tcp-proxy.ts';
import { waitFor } from './helpers/wait.ts';
import { spawnSync } from 'node:child_process';
import { spawnQuiet, type Spawn } from './helpers/spawn.ts';

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

/** `node dist/server.js bus-config <args>` run to its end. */
function busConfigRun(args: string[]) {
  ensureBuilt('server');
  return spawnSync(process.execPath, [join(ROOT, 'dist', 'server.js'), 'bus-config', ...args], { encoding: 'utf8' });
}

/** `node dist/server.js bus-config <args>`'s stdout, or an error with its stderr. */
function busConfigOut(args: string[]): string {
  const run = busConfigRun(args);
  if (run.status !== 0) throw new Error(`bus-config ${args.join(' ')} exited ${run.status}: ${run.stderr}`);
  return run.stdout;
}

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

test('without --leaf-listen the hub names no domain, takes no leaf and makes no leaf password', () => {
  const creds = join(mkdtempSync(join(tmpdir(), 'mesh-leaf-')), 'creds');
  const run = busConfigRun(['--node', NA, '--credentials', creds]);
  assert.is(run.status, 0, run.stderr);
  assert.not.match(run.stdout, /leafnodes|domain/);
  assert.not.ok(readdirSync(creds).some((f) => f.endsWith('.pw')));
  rmSync(dirname(creds), { recursive: true, force: true });
});

test("the hub keeps only the leaf passwords' hashes, each login a user of its node's account; the site's file holds them, mode 0600", () => {
  const dir = mkdtempSync(join(tmpdir(), 'mesh-leaf-'));
  const creds = join(dir, 'creds');
  const hubArgs = ['--node', `${NB},${NA}`, '--credentials', creds, '--leaf-listen', '0.0.0.0:7422', '--js-domain', 'central'];
  const hub = busConfigRun(hubArgs);
  assert.is(hub.status, 0, hub.stderr);
  assert.match(hub.stderr, /generated the leaf password of leaf\.na in .*leaf\.na\.pw/);
  const again = busConfigRun(hubArgs);
  assert.is(again.stdout, hub.stdout, 'the same mesh renders the same bytes');
  assert.not.match(again.stderr, /generated/, 'the second run reads the passwords the first wrote');
  assert.match(hub.stdout, /jetstream \{ store_dir: "[^"]+", domain: "central" \}/);
  for (const n of [NA, NB]) {
    const file = join(creds, `leaf.${n}.pw`);
    assert.is(statSync(file).mode & 0o777, 0o600);
    const password = readFileSync(file, 'utf8').trim();
    assert.not.ok(hub.stdout.includes(password), `the hub's file does not hold ${n}'s leaf password`);
    const account = hub.stdout.slice(hub.stdout.indexOf(`"provisioner.${n}": {`)).split('\n  }')[0]!;
    const [, hash] = new RegExp(`\\{ user: "leaf\\.${n}", password: "([^"]+)" \\}`).exec(account) ?? [];
    assert.ok(hash && bcrypt.compareSync(password, hash), `leaf.${n} logs in with its password, into its own account`);
  }
  const out = join(dir, 'site.conf');
  const site = busConfigRun([
    '--node',
    NA,
    '--credentials',
    creds,
    '--leaf',
    SITE,
    '--hub',
    'nats-leaf://hub1:7422,nats-leaf://hub2:7422',
    '--js-domain',
    'central',
    '--out',
    out,
  ]);
  assert.is(site.status, 0, site.stderr);
  assert.is(statSync(out).mode & 0o777, 0o600);
  const text = readFileSync(out, 'utf8');
  const password = readFileSync(join(creds, `leaf.${NA}.pw`), 'utf8').trim();
  assert.ok(text.includes(`"nats-leaf://leaf.${NA}:${password}@hub1:7422", "nats-leaf://leaf.${NA}:${password}@hub2:7422"`));
  assert.match(text, /"\$JS\.API\.>": "\$JS\.central\.API\.>", "\$KV\.>": "\$JS\.central\.API\.\$KV\.>"/);
  assert.not.match(text, /jetstream|provisioner\.nb|leaf\.nb/, 'no JetStream at the site, nothing of a node elsewhere');
  chmodSync(join(creds, `leaf.${NA}.pw`), 0o644);
  const open = busConfigRun(hubArgs);
  assert.is(open.status, 1);
  assert.match(open.stderr, /leaf\.na\.pw: mode 644 lets others read the password; it must be 0600/);
  assert.is(open.stdout, '');
  rmSync(dir, { recursive: true, force: true });
});

test('bad leaf flags exit 2 naming the flag', () => {
  for (const [args, reason] of [
    [['--hub', 'nats-leaf://h:7422'], /--hub needs --leaf SITE/],
    [['--leaf', SITE], /--leaf needs --hub/],
    [['--leaf', SITE, '--hub', 'nats://h:4222'], /--hub: "nats:\/\/h:4222" is not nats-leaf:\/\/HOST:PORT/],
    [['--leaf', SITE, '--hub', 'nats-leaf://h:7422', '--leaf-listen', 'h:7422'], /--leaf and --leaf-listen contradict/],
    [['--leaf-advertise', 'h:7422'], /--leaf-advertise needs --leaf-listen/],
    [['--leaf-tls-cert', 'c.pem', '--leaf-tls-key', 'c.key'], /--leaf-tls-cert needs --leaf-listen/],
    [['--leaf-listen', 'h:7422', '--leaf-tls-cert', 'c.pem'], /--leaf-tls-cert and --leaf-tls-key go together/],
    [['--hub-ca', 'ca.pem'], /--hub-ca needs --leaf SITE/],
    [['--leaf-listen', 'nowhere'], /--leaf-listen: "nowhere" is not HOST:PORT/],
    [['--leaf-listen', 'h:7422', '--js-domain', 'a.b'], /--js-domain: "a\.b" is not a valid name/],
    [['--leaf', 'Bad_Site', '--hub', 'nats-leaf://h:7422'], /--leaf: "Bad_Site" is not a valid name/],
  ] as const) {
    const run = busConfigRun(['--node', NA, ...args, '--credentials', join(tmpdir(), 'mesh-leaf-never')]);
    assert.is(run.status, 2, `${args.join(' ')}: ${run.stderr}`);
    assert.match(run.stderr, reason);
  }
});

test('a node added to a hub that takes leaves is two reloads, not a restart; a leaf without a login reaches nothing', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'mesh-leaf-'));
  const creds = join(dir, 'creds');
  let said = '';
  const spawnLogged: Spawn = (n, c, a) => {
    const child = spawnQuiet(n, c, a);
    child.stderr?.on('data', (d: Buffer) => (said += String(d)));
    return child;
  };
  const leafPort = await freePort();
  const hubFile = (nodes: string, where: { listen: string; storeDir: string }) =>
    busConfigOut(['--node', nodes, '--credentials', creds, '--listen', where.listen, '--store-dir', where.storeDir, '--leaf-listen', `127.0.0.1:${leafPort}`]);
  let where = { listen: '', storeDir: '' };
  const hub = await startNats('', { dir: join(dir, 'hub'), spawn: spawnLogged, whole: (w) => hubFile(NA, (where = w)) });
  const closing: (() => unknown)[] = [() => hub.cleanup()];
  try {
    writeFileSync(join(hub.dir, 'nats.conf'), hubFile(`${NA},${NB}`, where));
    for (const round of [1, 2]) {
      process.kill(hub.pid()!, 'SIGHUP');
      await waitFor(`reload ${round}`, async () => ((said.match(/Reloaded server configuration/g) ?? []).length >= round ? true : null), 10_000);
    }
    assert.not.match(said, /Failed to reload/);
    const site = await startNats('', {
      dir: join(dir, 'site'),
      whole: ({ listen }) =>
        busConfigOut(['--node', NB, '--credentials', creds, '--leaf', SITE, '--hub', `nats-leaf://127.0.0.1:${leafPort}`, '--listen', listen]),
    });
    closing.push(() => site.cleanup());
    const nb = await connectBus({ servers: [site.url], name: 'nb', nkey: join(creds, `${USERS.client(NB)}.nk`), inboxPrefix: INBOX_PREFIXES.node(NB) });
    closing.push(() => nb.close());
    await waitFor('JetStream for the node added by a reload, at its site', async () => ((await jetStreamFor(nb)) === 'ok' ? true : null), 10_000);
    const stranger = await startNats('', {
      dir: join(dir, 'stranger'),
      whole: ({ listen }) =>
        `listen: "${listen}"\naccounts { A: { users: [ { user: a, password: a } ], mappings: { "$JS.API.>": "$JS.mesh.API.>" } } }\n` +
        `leafnodes { remotes: [ { url: "nats-leaf://127.0.0.1:${leafPort}", account: A } ] }\n`,
    });
    closing.push(() => stranger.cleanup());
    const a = await connectBus({ servers: [stranger.url], name: 'stranger', user: 'a', pass: 'a' });
    closing.push(() => a.close());
    await waitFor('the stranger connected', async () => (/for account "LEAF_STRANGERS"/.test(said) ? true : null), 10_000);
    assert.is.not(await jetStreamFor(a), 'ok', 'a leaf without a login reaches no JetStream');
  } finally {
    for (const step of closing.reverse())
      await Promise.resolve()
        .then(step)
        .catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  }
});

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
