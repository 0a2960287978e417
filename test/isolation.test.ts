// Isolation on the bus (DESIGN §11): the seat and the test write as MESH's admin; each node's client
// logs in to an account of its own with the grants of reference/nats-isolation.example.conf.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { packTar } from 'modern-tar';
import { Kvm, type KV } from '@nats-io/kv';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { connectBus, ensureSeatKv, openKv, watchKv } from '../src/shared/bus.ts';
import { APPLIED, ASSIGNMENTS, CONFIG, DEFAULT_ARCHIVES, MODULES, NEEDS, PLANS } from '../src/shared/buckets.ts';
import { needKey } from '../src/shared/keys.ts';
import { memoryLogger } from '../src/shared/log.ts';
import type { Report } from '../src/shared/schemas.ts';
import { startSeat } from '../src/server/seat.ts';
import { createEngineClient } from '../src/client/engine.ts';
import { startNodeClient, type NodeClient } from '../src/client/node.ts';
import { startEngine } from '../src/engine/start.ts';
import { nodeInbox, nodeUser, REGISTRY_READ_IMPORTS, renderIsolationConf } from './helpers/isolation-conf.ts';
import { startNats, type NatsServer } from './helpers/nats.ts';
import { waitFor } from './helpers/wait.ts';

const NODES = [
  { node: 'na', password: 'na-secret' },
  { node: 'nb', password: 'nb-secret' },
];
const ADMIN = { user: 'admin', pass: 'admin-secret' };
const TEMPLATE = 'listen ${port:http}\nlevel ${config:level}\n';
const expected = (level: string) => `listen 8080\nlevel ${level}\n`;
/** What the client logs while a bucket's watch is refused (or the bucket is missing). */
const REGISTRY_WAITING = 'waiting for bucket mesh-provisioner_registry';

/** A node's client, its engine's root and what it said. */
type Node = {
  node: string;
  nc: NatsConnection;
  root: string;
  client: NodeClient;
  log: ReturnType<typeof memoryLogger>;
  engineLog: ReturnType<typeof memoryLogger>;
  /** The module's file under this node's engine root. */
  file(module: string): string | undefined;
};

/** The isolated mesh of one test. */
type Mesh = {
  nats: NatsServer;
  admin: NatsConnection;
  kv: { assignments: KV; modules: KV; config: KV; applied: KV; needs: KV; plans: KV };
  /** Publishes module `web` (a config and a placement placeholder) as a file:/// archive and assigns it to `node`. */
  publishWeb(node: string): Promise<void>;
  startNode(node: string): Promise<Node>;
  report(node: string, module: string): Promise<Report | null>;
  waitReport(n: Node, module: string, pred: (r: Report) => boolean, ms?: number): Promise<Report>;
  /** Waits until the admin's connection reaches JetStream again (after a restart). */
  jetStreamBack(): Promise<void>;
};

type MeshOptions = {
  /** Grant the nodes REGISTRY_READ_IMPORTS beyond the example. */
  registryRead: boolean;
};

/** Starts nats-server with the isolation config, the seat (as admin) and the input buckets; runs fn; closes everything. */
async function withIsolatedMesh(opts: MeshOptions, fn: (m: Mesh) => Promise<void>): Promise<void> {
  const closers: (() => unknown)[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'mesh-iso-'));
  closers.push(() => rmSync(dir, { recursive: true, force: true }));
  try {
    const conf = renderIsolationConf({
      nodes: NODES,
      adminPassword: ADMIN.pass,
      ...(opts.registryRead ? { extraNodeImports: () => [...REGISTRY_READ_IMPORTS] } : {}),
    });
    const nats = await startNats(conf);
    closers.push(() => nats.cleanup());
    const admin = await connectBus({ servers: [nats.url], name: 'test admin', ...ADMIN });
    closers.push(() => admin.close());
    const seat = await startSeat({ nc: admin, log: memoryLogger(), archives: DEFAULT_ARCHIVES, replicas: 1 });
    closers.push(() => seat.stop());
    // The input buckets hardened like the seat's: the reference says to create every shared bucket so.
    const [assignments, modules, config] = await Promise.all([ASSIGNMENTS, MODULES, CONFIG].map((b) => ensureSeatKv(admin, b, 1)));
    const kvm = new Kvm(jetstream(admin));
    const [applied, needs, plans] = await Promise.all([APPLIED, NEEDS, PLANS].map((b) => kvm.open(b)));
    const mesh: Mesh = {
      nats,
      admin,
      kv: { assignments: assignments!, modules: modules!, config: config!, applied: applied!, needs: needs!, plans: plans! },
      async publishWeb(node) {
        const body = new TextEncoder().encode(TEMPLATE);
        const tar = await packTar([{ header: { name: 'web.conf', size: body.length, type: 'file' }, body }]);
        const path = join(dir, 'web-1.tar');
        writeFileSync(path, tar);
        await mesh.kv.modules.put('web', JSON.stringify({
          module: 'web', build: '1', published: true,
          archive: { ref: pathToFileURL(path).href, digest: 'sha256:' + createHash('sha256').update(tar).digest('hex') },
          provisioning: { files: [{ path: '${dir:config}/web.conf', template: 'web.conf', mode: 'owned', change: 'restart' }] },
        }));
        await mesh.kv.assignments.put(`${node}.web`, JSON.stringify({
          node, module: 'web', placement: { dir: { config: join(dir, node, 'root', 'etc', 'web') }, port: { http: 8080 } },
        }));
      },
      async startNode(node) {
        const base = join(dir, node);
        const root = join(base, 'root');
        mkdirSync(root, { recursive: true });
        const log = memoryLogger();
        const engineLog = memoryLogger();
        const socketPath = join(base, 'fill.sock');
        const engine = await startEngine({ socketPath, root, log: engineLog });
        closers.push(() => engine.close());
        const engineClient = createEngineClient({ socketPath, log, pollMs: 50 });
        closers.push(() => engineClient.close());
        const pass = NODES.find((n) => n.node === node)!.password;
        const nc = await connectBus({ servers: [nats.url], name: `node-provisioner ${node}`, user: nodeUser(node), pass, inboxPrefix: nodeInbox(node) });
        closers.push(() => nc.close());
        const client = await startNodeClient({ nc, node, engine: engineClient, log, cacheDir: join(base, 'cache'), settleMs: 20, archiveDir: dir });
        closers.push(() => client.stop());
        const file = (module: string) => {
          const path = join(root, 'etc', module, `${module}.conf`);
          return existsSync(path) ? readFileSync(path, 'utf8') : undefined;
        };
        return { node, nc, root, client, log, engineLog, file };
      },
      async report(node, module) {
        const e = await mesh.kv.applied.get(`${node}.${module}`);
        return e && e.operation === 'PUT' ? (e.json() as Report) : null;
      },
      async waitReport(n, module, pred, ms = 15_000) {
        let last: Report | null = null;
        try {
          return await waitFor(`report ${n.node}.${module}`, async () => {
            last = await mesh.report(n.node, module);
            return last && pred(last) ? last : null;
          }, ms);
        } catch (err) {
          throw new Error(`${(err as Error).message}; last report: ${JSON.stringify(last)}; ${n.node} log: ${n.log.lines.slice(-12).join(' | ')}`);
        }
      },
      async jetStreamBack() {
        await waitFor('JetStream back for the admin', async () => {
          try {
            await admin.request(`$JS.API.STREAM.INFO.KV_${CONFIG}`, undefined, { timeout: 500 });
            return true;
          } catch {
            return false;
          }
        }, 20_000);
      },
    };
    await fn(mesh);
  } finally {
    for (const close of closers.reverse()) {
      try {
        await close();
      } catch {
        // Already gone with what was closed before it.
      }
    }
  }
}

/** An isolated mesh with `web` applied on na at level `info`. */
function withApplied(opts: MeshOptions, fn: (m: Mesh, na: Node) => Promise<void>): Promise<void> {
  return withIsolatedMesh(opts, async (m) => {
    await m.kv.config.put('na.web.level', 'info');
    await m.publishWeb('na');
    await waitFor('the plan of na.web', async () => (await m.kv.plans.get('na.web'))?.operation === 'PUT');
    const na = await m.startNode('na');
    await m.waitReport(na, 'web', (r) => r.state === 'applied');
    await fn(m, na);
  });
}

/** The error `fn` rejects with (or a timeout); fails the test when `fn` resolves. */
async function refused(what: string, fn: () => Promise<unknown>, ms = 5000): Promise<Error> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`timeout after ${ms} ms`)), ms)));
  let value: unknown;
  try {
    value = await Promise.race([fn(), timeout]);
  } catch (err) {
    return err as Error;
  } finally {
    clearTimeout(timer);
  }
  assert.unreachable(`${what} was allowed: ${JSON.stringify(value)}`);
  throw new Error('unreachable');
}

/** How a call refused across accounts comes back: nats.js says a 503 on a JetStream call as "jetstream is not enabled". */
const REFUSAL = /no responders|timeout|permission|503|jetstream is not enabled/i;

test('with exactly the example grants, a node gets its module applied from a file:/// archive, records its needs and follows a config change', () =>
  withApplied({ registryRead: false }, async (m, na) => {
    assert.is(na.file('web'), expected('info'));
    const report = (await m.report('na', 'web'))!;
    assert.is(report.build, '1');
    assert.equal(report.files.map((f) => f.action), ['written']);
    const level = await m.kv.needs.get(needKey('na', 'web', 'config', 'level'));
    const port = await m.kv.needs.get(needKey('na', 'web', 'port', 'http'));
    assert.is(level?.operation, 'PUT', 'the config need recorded');
    assert.is(port?.operation, 'PUT', 'the placement need recorded');
    assert.is((level!.json() as { met: boolean }).met, true);

    await m.kv.config.put('na.web.level', 'debug');
    await waitFor('the changed value on disk', () => na.file('web') === expected('debug'));
    await m.waitReport(na, 'web', (r) => r.state === 'applied');
    assert.not.ok(na.log.lines.some((l) => / error /.test(l)), `an error in na's log: ${na.log.lines.join(' | ')}`);
  }));

test('with the registry read granted, a node watches the registry without being refused', () =>
  withApplied({ registryRead: true }, async (m, na) => {
    const jsm = await jetstreamManager(m.admin);
    await waitFor('na’s bound consumer of the registry', async () => {
      for await (const c of jsm.consumers.list('KV_mesh-provisioner_registry')) {
        if (c.config.filter_subject === '$KV.mesh-provisioner_registry.config' && c.push_bound && c.config.deliver_subject?.startsWith('_INBOX_na.')) return true;
      }
      return false;
    });
    await na.client.idle();
    assert.not.ok(na.log.lines.some((l) => l.includes(REGISTRY_WAITING)), `na's registry watch refused: ${na.log.lines.join(' | ')}`);
  }));

test('another node cannot read or write the first node’s keys, and its client reports nothing for it', () =>
  withApplied({ registryRead: true }, async (m, na) => {
    await m.kv.config.put('nb.web.level', 'nb-own');
    const nb = await m.startNode('nb');
    const nbConfig = await openKv(nb.nc, CONFIG);
    const nbApplied = await openKv(nb.nc, APPLIED);

    // Control: the same calls work on nb's own keys, so what is refused below is refused by isolation.
    assert.is((await nbConfig.get('nb.web.level'))?.string(), 'nb-own');
    await nbApplied.put('nb.probe', '{}');
    assert.is((await m.kv.applied.get('nb.probe'))?.string(), '{}');

    const get = await refused('a direct get of na.web.level from nb', () => nbConfig.get('na.web.level'));
    assert.match(get.message, REFUSAL, get.message);
    await refused('a raw direct get of na.web.level from nb', () =>
      nb.nc.request(`$JS.API.DIRECT.GET.KV_${CONFIG}.$KV.${CONFIG}.na.web.level`, undefined, { timeout: 2000 }));
    await refused('a watch of na.> in mesh-config_resolved from nb', () => watchKv(nb.nc, CONFIG, 'na.>', () => {}));

    const before = await m.kv.applied.get('na.web');
    const put = await refused('a put of mesh-provisioner_applied na.web from nb', () => nbApplied.put('na.web', '{"forged":"put"}'));
    assert.match(put.message, REFUSAL, put.message);
    nb.nc.publish(`$KV.${APPLIED}.na.web`, '{"forged":"publish"}');
    // The confused-deputy writes the reference saw in one shared account: a reply aimed at na's key.
    nb.nc.publish(`$JS.API.DIRECT.GET.KV_${CONFIG}.$KV.${CONFIG}.nb.web.level`, '', { reply: `$KV.${APPLIED}.na.web` });
    nb.nc.publish(`$KV.${APPLIED}.nb.probe`, '{"forged":"ack"}', { reply: `$KV.${APPLIED}.na.web` });
    await nb.nc.flush();
    await waitFor('nb.probe written', async () => (await m.kv.applied.get('nb.probe'))?.string().includes('ack'));
    const after = await m.kv.applied.get('na.web');
    assert.is(after?.revision, before?.revision, `na.web written by nb: ${after?.string()}`);

    // A change of na's value reaches na, and nothing of it reaches nb.
    await m.kv.config.put('na.web.level', 'secret-of-na');
    await waitFor('na’s new value on disk', () => na.file('web') === expected('secret-of-na'));
    await nb.client.idle();
    const nbSaid = [...nb.log.lines, ...nb.engineLog.lines].join('\n');
    assert.not.ok(/\bna\.|secret-of-na/.test(nbSaid), `nb said something of na: ${nbSaid}`);
    assert.not.ok(nbSaid.includes(REGISTRY_WAITING), `nb's registry watch refused: ${nbSaid}`);
    assert.equal(readdirSync(nb.root), [], 'nb’s engine wrote nothing');
    const keys: string[] = [];
    for await (const k of await m.kv.applied.keys()) keys.push(k);
    assert.equal(keys.sort(), ['na.web', 'nb.probe']);
  }));

test('after nats-server restarts, with its consumers kept and then with them lost, a node follows new values under its grants', () =>
  withApplied({ registryRead: true }, async (m, na) => {
    const jsm = await jetstreamManager(m.admin);
    const naConsumers = async () => {
      const names: string[] = [];
      for await (const c of jsm.consumers.list(`KV_${CONFIG}`)) if (c.config.filter_subject === `$KV.${CONFIG}.na.>` && c.push_bound) names.push(c.name);
      return names;
    };
    const first = await naConsumers();
    assert.is(first.length, 1, `one bound consumer of na's config: ${first}`);

    // nats-server 2.9.10 keeps the ephemeral consumers in its store: the watch resumes on them.
    await m.nats.stop();
    await m.nats.restart();
    await waitFor('na back on the bus', () => na.log.lines.some((l) => l.includes('bus back: filling 1 module(s) again')), 20_000);
    await m.jetStreamBack();
    await m.kv.config.put('na.web.level', 'after-restart');
    await waitFor('the value put after the restart on disk', () => na.file('web') === expected('after-restart'), 15_000);

    // A server that comes back without them (lost store, another cluster member): the client must create
    // them again, with the named, filtered subject its grants allow. nats.js sees it by two missed 30 s heartbeats.
    await m.nats.stop();
    const streams = join(m.nats.dir, 'js', 'jetstream', 'MESH', 'streams');
    for (const stream of readdirSync(streams)) rmSync(join(streams, stream, 'obs'), { recursive: true, force: true });
    await m.nats.restart();
    await m.jetStreamBack();
    assert.equal(await naConsumers(), [], 'the consumers are gone');
    await m.kv.config.put('na.web.level', 'after-loss');
    await waitFor('the value put after the loss on disk', () => na.file('web') === expected('after-loss'), 75_000)
      .catch((err) => { throw new Error(`${(err as Error).message}; na log: ${na.log.lines.slice(-15).join(' | ')}`); });
    const again = await naConsumers();
    assert.is(again.length, 1, `one bound consumer of na's config again: ${again}`);
    assert.is.not(again[0], first[0], 'created again');
    await m.waitReport(na, 'web', (r) => r.state === 'applied');
  }));

test.run();
