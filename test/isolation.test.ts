// Isolation on the bus (DESIGN §11): the seat and the test write as MESH's admin; each node's client
// logs in to an account of its own with the grants of reference/nats-isolation.example.conf.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { openKv, readAll, watchKv } from '../src/shared/bus.ts';
import { APPLIED, CONFIG } from '../src/shared/buckets.ts';
import { needKey } from '../src/shared/keys.ts';
import type { ModuleSpec } from './helpers/archive.ts';
import { nodeUser, REGISTRY_READ_IMPORTS, renderIsolationConf } from './helpers/isolation-conf.ts';
import { withMesh, type Mesh } from './helpers/mesh.ts';
import type { MeshNode } from './helpers/mesh-node.ts';
import { waitFor } from './helpers/wait.ts';

const NODES = [
  { node: 'na', password: 'na-secret' },
  { node: 'nb', password: 'nb-secret' },
];
const ADMIN = { user: 'admin', pass: 'admin-secret' };
const expected = (level: string) => `listen 8080\nlevel ${level}\n`;
/** What the client logs while a bucket's watch is refused (or the bucket is missing). */
const REGISTRY_WAITING = 'waiting for bucket mesh-provisioner_registry';

/** Module `web`: a config and a placement placeholder, published as a file:/// archive (a node cannot read the object store). */
const WEB: ModuleSpec = {
  templates: { 'web.conf': 'listen ${port:http}\nlevel ${config:level}\n' },
  provisioning: { files: [{ path: '${dir:config}/web.conf', template: 'web.conf', mode: 'owned', change: 'restart' }] },
};

type IsolationOptions = {
  /** Grant the nodes REGISTRY_READ_IMPORTS beyond the example. */
  registryRead: boolean;
};

/**
 * Runs fn on a mesh under the isolation config: the test and the seat (in process) as MESH's admin,
 * each node's client as its own user; archives as files, since no node account imports the object store.
 */
function withIsolatedMesh(opts: IsolationOptions, fn: (m: Mesh) => Promise<void>): Promise<void> {
  const natsConfig = renderIsolationConf({
    nodes: NODES,
    adminPassword: ADMIN.pass,
    ...(opts.registryRead ? { extraNodeImports: () => [...REGISTRY_READ_IMPORTS] } : {}),
  });
  const nodeLogin = (node: string) => ({ user: nodeUser(node), pass: NODES.find((n) => n.node === node)!.password });
  return withMesh(fn, { natsConfig, login: ADMIN, seat: 'in-process', node: 'na', nodeLogin, engine: false, archives: 'file' });
}

/** Starts a node's engine and client. */
async function startNode(m: Mesh, name: string): Promise<MeshNode> {
  const node = m.node(name);
  await node.startEngine();
  await node.startClient();
  return node;
}

/** An isolated mesh with `web` applied on na at level `info`. */
function withApplied(opts: IsolationOptions, fn: (m: Mesh, na: MeshNode) => Promise<void>): Promise<void> {
  return withIsolatedMesh(opts, async (m) => {
    await m.kv.config.put('na.web.level', 'info');
    await m.publish('web', WEB);
    await m.assign('na', 'web');
    await waitFor('the plan of na.web', async () => (await m.kv.plans.get('na.web'))?.operation === 'PUT');
    const na = await startNode(m, 'na');
    await m.waitReport('na', 'web', (r) => r.state === 'applied');
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
    assert.is(na.moduleFile('web'), expected('info'));
    const report = (await m.report('na', 'web'))!;
    assert.is(report.build, '1');
    assert.equal(report.files.map((f) => f.action), ['written']);
    const level = await m.kv.needs.get(needKey('na', 'web', 'config', 'level'));
    const port = await m.kv.needs.get(needKey('na', 'web', 'port', 'http'));
    assert.is(level?.operation, 'PUT', 'the config need recorded');
    assert.is(port?.operation, 'PUT', 'the placement need recorded');
    assert.is((level!.json() as { met: boolean }).met, true);

    await m.kv.config.put('na.web.level', 'debug');
    await waitFor('the changed value on disk', () => na.moduleFile('web') === expected('debug'));
    await m.waitReport('na', 'web', (r) => r.state === 'applied');
    assert.not.ok(na.log.lines.some((l) => / error /.test(l)), `an error in na's log: ${na.log.lines.join(' | ')}`);
  }));

test('with the registry read granted, a node watches the registry without being refused', () =>
  withApplied({ registryRead: true }, async (m, na) => {
    const jsm = await jetstreamManager(m.nc);
    await waitFor('na’s bound consumer of the registry', async () => {
      for await (const c of jsm.consumers.list('KV_mesh-provisioner_registry')) {
        if (c.config.filter_subject === '$KV.mesh-provisioner_registry.config' && c.push_bound && c.config.deliver_subject?.startsWith('_INBOX_na.')) return true;
      }
      return false;
    });
    await na.idle();
    assert.not.ok(na.log.lines.some((l) => l.includes(REGISTRY_WAITING)), `na's registry watch refused: ${na.log.lines.join(' | ')}`);
  }));

test('another node cannot read or write the first node’s keys, and its client reports nothing for it', () =>
  withApplied({ registryRead: true }, async (m, na) => {
    await m.kv.config.put('nb.web.level', 'nb-own');
    const nb = await startNode(m, 'nb');
    const nbNc = nb.connection();
    const nbConfig = await openKv(nbNc, CONFIG);
    const nbApplied = await openKv(nbNc, APPLIED);

    // Control: the same calls work on nb's own keys, so what is refused below is refused by isolation.
    assert.is((await nbConfig.get('nb.web.level'))?.string(), 'nb-own');
    await nbApplied.put('nb.probe', '{}');
    assert.is((await m.kv.applied.get('nb.probe'))?.string(), '{}');

    const get = await refused('a direct get of na.web.level from nb', () => nbConfig.get('na.web.level'));
    assert.match(get.message, REFUSAL, get.message);
    await refused('a raw direct get of na.web.level from nb', () =>
      nbNc.request(`$JS.API.DIRECT.GET.KV_${CONFIG}.$KV.${CONFIG}.na.web.level`, undefined, { timeout: 2000 }));
    await refused('a watch of na.> in mesh-config_resolved from nb', () => watchKv(nbNc, CONFIG, 'na.>', () => {}));

    const before = await m.kv.applied.get('na.web');
    const put = await refused('a put of mesh-provisioner_applied na.web from nb', () => nbApplied.put('na.web', '{"forged":"put"}'));
    assert.match(put.message, REFUSAL, put.message);
    nbNc.publish(`$KV.${APPLIED}.na.web`, '{"forged":"publish"}');
    // The confused-deputy writes the reference saw in one shared account: a reply aimed at na's key.
    nbNc.publish(`$JS.API.DIRECT.GET.KV_${CONFIG}.$KV.${CONFIG}.nb.web.level`, '', { reply: `$KV.${APPLIED}.na.web` });
    nbNc.publish(`$KV.${APPLIED}.nb.probe`, '{"forged":"ack"}', { reply: `$KV.${APPLIED}.na.web` });
    await nbNc.flush();
    await waitFor('nb.probe written', async () => (await m.kv.applied.get('nb.probe'))?.string().includes('ack'));
    const after = await m.kv.applied.get('na.web');
    assert.is(after?.revision, before?.revision, `na.web written by nb: ${after?.string()}`);

    // A change of na's value reaches na, and nothing of it reaches nb.
    await m.kv.config.put('na.web.level', 'secret-of-na');
    await waitFor('na’s new value on disk', () => na.moduleFile('web') === expected('secret-of-na'));
    await nb.idle();
    const nbSaid = [...nb.log.lines, ...nb.engineLog.lines].join('\n');
    assert.not.ok(/\bna\.|secret-of-na/.test(nbSaid), `nb said something of na: ${nbSaid}`);
    assert.not.ok(nbSaid.includes(REGISTRY_WAITING), `nb's registry watch refused: ${nbSaid}`);
    assert.equal(readdirSync(nb.root), [], 'nb’s engine wrote nothing');
    // Read with the project's own watch: nats.js's keys() can miss a key on nats-server 2.9 (see src/shared/bus.ts).
    const keys = [...(await readAll(m.nc, APPLIED)).keys()];
    assert.equal(keys.sort(), ['na.web', 'nb.probe']);
  }));

test('after nats-server restarts, with its consumers kept and then with them lost, a node follows new values under its grants', () =>
  withApplied({ registryRead: true }, async (m, na) => {
    const jsm = await jetstreamManager(m.nc);
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
    await waitFor('the value put after the restart on disk', () => na.moduleFile('web') === expected('after-restart'), 15_000);

    // A server that comes back without them (lost store, another cluster member): the client must create
    // them again, with the named, filtered subject its grants allow. nats.js sees it by two missed 30 s heartbeats.
    await m.nats.stop();
    const streams = join(m.nats.dir, 'js', 'jetstream', 'MESH', 'streams');
    for (const stream of readdirSync(streams)) rmSync(join(streams, stream, 'obs'), { recursive: true, force: true });
    await m.nats.restart();
    await m.jetStreamBack();
    assert.equal(await naConsumers(), [], 'the consumers are gone');
    await m.kv.config.put('na.web.level', 'after-loss');
    await waitFor('the value put after the loss on disk', () => na.moduleFile('web') === expected('after-loss'), 75_000)
      .catch((err) => { throw new Error(`${(err as Error).message}; na log: ${na.log.lines.slice(-15).join(' | ')}`); });
    const again = await naConsumers();
    assert.is(again.length, 1, `one bound consumer of na's config again: ${again}`);
    assert.is.not(again[0], first[0], 'created again');
    await m.waitReport('na', 'web', (r) => r.state === 'applied');
  }));

test.run();
