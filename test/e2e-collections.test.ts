// Collections end to end (DESIGN §7 points 6–7): contributors' items in mesh-provisioner_collect,
// a collector's file assembled from them — real nats-server, the seat bundle, the engine, a client.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import { Kvm, type KV } from '@nats-io/kv';
import { jetstream } from '@nats-io/jetstream';
import { jsonBytes } from '../src/shared/base/bytes.ts';
import { COLLECT } from '../src/shared/contract/buckets.ts';
import { PROVISIONING_VERB } from '../src/shared/contract/subjects.ts';
import type { VerbReply } from '../src/shared/contract/verb.ts';
import { startMesh, type Mesh } from './helpers/mesh.ts';
import { waitFor } from './helpers/wait.ts';

const ZSH = 'shell:zsh:normal';

/** A contributor whose item to the zsh collection names a config value. */
async function contributor(m: Mesh, name: string, alias = name): Promise<void> {
  await m.publish(name, {
    templates: { 'item.zsh': 'alias ${config:alias}=' + name + '\n' },
    provisioning: { items: [{ collection: ZSH, template: 'item.zsh' }] },
  });
  await m.setConfig('n1', name, 'alias', alias);
  await m.assign('n1', name);
}

/** The collector: one file assembling the zsh collection, reloaded on change. */
async function collector(
  m: Mesh,
  template = '# zshrc\n${collected:shell:zsh:normal}# end\n',
  collections: unknown[] = [{ name: ZSH, comment: '#' }],
): Promise<string> {
  await m.publish('rc', {
    templates: { zshrc: template },
    provisioning: { files: [{ path: '${dir:config}/zshrc', template: 'zshrc', change: 'reload' }], collections },
  });
  await m.assign('n1', 'rc');
  return join(m.root, 'etc', 'rc', 'zshrc');
}

async function withCollections(fn: (m: Mesh, collect: KV) => Promise<void>): Promise<void> {
  const m = await startMesh();
  try {
    await fn(m, await new Kvm(jetstream(m.nc)).open(COLLECT));
  } finally {
    await m.close();
  }
}

test('three contributors and one collector: the file holds the items in name order, each under its comment line; one change rewrites the item and the file once', () =>
  withCollections(async (m, collect) => {
    for (const name of ['web', 'api', 'db']) await contributor(m, name);
    const rc = await collector(m);
    await m.startClient();
    const full = '# zshrc\n# api\nalias api=api\n# db\nalias db=db\n# web\nalias web=web\n# end\n';
    await waitFor('the assembled file', () => m.file(rc) === full);
    await m.waitReport('n1', 'rc', (r) => r.state === 'applied');
    const stored = await collect.get(`n1.shell=3Azsh=3Anormal.web`);
    assert.equal(stored?.json(), { node: 'n1', collection: ZSH, contributor: 'web', content: 'alias web=web\n' });

    await m.idle();
    const reloads = m.journal().length;
    const revision = stored!.revision;
    await m.setConfig('n1', 'db', 'alias', 'database');
    await waitFor('the changed item in the file', () => m.file(rc) === full.replace('alias db=db', 'alias database=db'));
    // A later change proves the first one has been fully handled.
    await m.setConfig('n1', 'api', 'alias', 'a');
    await waitFor('the second change', () => m.file(rc)?.includes('alias a=api'));
    await m.idle();
    assert.is(m.journal().length - reloads, 2, `one reload of rc per change: ${m.journal().slice(reloads).join(', ')}`);
    assert.is((await collect.get(`n1.shell=3Azsh=3Anormal.web`))!.revision, revision, 'another contributor’s item is not rewritten');
  }));

test('a contributor removed: its item goes and the collector is filled again without it', () =>
  withCollections(async (m, collect) => {
    for (const name of ['web', 'api']) await contributor(m, name);
    const rc = await collector(m);
    await m.startClient();
    await waitFor('both items', () => m.file(rc)?.includes('alias web=web'));
    await m.unassign('n1', 'web');
    await waitFor('the file without web', () => m.file(rc) === '# zshrc\n# api\nalias api=api\n# end\n');
    await waitFor('the item deleted', async () => (await collect.get('n1.shell=3Azsh=3Anormal.web'))?.operation === 'DEL');
  }));

test('a collector naming a collection its plan does not list fails; an empty collection fills empty', () =>
  withCollections(async (m) => {
    await m.publish('bad', {
      templates: { f: '${environment:posix}' },
      provisioning: { files: [{ path: '${dir:config}/f', template: 'f' }], collections: [{ name: ZSH }] },
    });
    await m.assign('n1', 'bad');
    const rc = await collector(m, '[${shell:zsh:normal}]');
    await m.startClient();
    const bad = await m.waitReport('n1', 'bad', (r) => r.state === 'failed');
    assert.is(bad.reason, 'template f line 1: ${environment:posix}: collection "environment:posix" is not in the plan\'s collections');
    await waitFor('the empty collection', () => m.file(rc) === '[]');
  }));

test('a contributor that waits records no item; once its value comes, it does', () =>
  withCollections(async (m, collect) => {
    await m.publish('late', {
      templates: { 'item.zsh': 'alias ${config:alias}=late\n' },
      provisioning: { items: [{ collection: ZSH, template: 'item.zsh' }] },
    });
    await m.assign('n1', 'late');
    await collector(m);
    await m.startClient();
    const waiting = await m.waitReport('n1', 'late', (r) => r.state === 'waiting');
    assert.equal(waiting.waiting, [{ kind: 'config', name: 'alias', files: [`item ${ZSH}`] }]);
    assert.is(await collect.get('n1.shell=3Azsh=3Anormal.late'), null);
    await m.setConfig('n1', 'late', 'alias', 'l');
    await waitFor('the item', async () => (await collect.get('n1.shell=3Azsh=3Anormal.late'))?.operation === 'PUT');
  }));

test('items of another node never appear; an item that does not validate is said in the collector’s report and left out', () =>
  withCollections(async (m, collect) => {
    await contributor(m, 'web');
    await collect.put('n2.shell=3Azsh=3Anormal.spy', jsonBytes({ node: 'n2', collection: ZSH, contributor: 'spy', content: 'alias spy=1\n' }));
    const rc = await collector(m);
    await m.startClient();
    await waitFor('the file', () => m.file(rc) === '# zshrc\n# web\nalias web=web\n# end\n');
    // Written after the start (which deletes items of contributors without a plan), as a buggy writer could.
    await collect.put('n1.shell=3Azsh=3Anormal.broken', '{"node":"n1","collection":"shell:zsh:normal"}');
    const report = await m.waitReport('n1', 'rc', (r) => (r.reason ?? '').includes('broken'));
    assert.match(report.reason!, /^mesh-provisioner_collect n1\.shell=3Azsh=3Anormal\.broken left out: field "contributor"/);
    assert.is(report.state, 'applied');
    assert.is(m.file(rc), '# zshrc\n# web\nalias web=web\n# end\n');
  }));

test('the verb reads items back by the collection’s name, and a restarted client deletes the items of modules whose plans went', () =>
  withCollections(async (m, collect) => {
    for (const name of ['web', 'api']) await contributor(m, name);
    await m.startClient();
    await waitFor('both items', async () => (await collect.get('n1.shell=3Azsh=3Anormal.api'))?.operation === 'PUT');
    const reply = (await m.nc.request(PROVISIONING_VERB, jsonBytes({ what: 'collect', node: 'n1', collection: ZSH }), { timeout: 5000 })).json<VerbReply>();
    assert.equal(
      reply.entries.map((e) => [e.key, (e.value as { collection: string }).collection]),
      [
        ['n1.shell=3Azsh=3Anormal.api', ZSH],
        ['n1.shell=3Azsh=3Anormal.web', ZSH],
      ],
    );
    await m.stopClient();
    await m.unassign('n1', 'web');
    await waitFor('the plan retired', async () => (await m.kv.plans.get('n1.web'))?.operation !== 'PUT');
    await m.startClient();
    await waitFor('the stale item deleted', async () => (await collect.get('n1.shell=3Azsh=3Anormal.web'))?.operation === 'DEL');
    assert.is((await collect.get('n1.shell=3Azsh=3Anormal.api'))?.operation, 'PUT');
  }));

test.run();
