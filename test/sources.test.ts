// The client's value sources (src/client/sources/): the kind table, each source's lookup and the
// dependency key it carries, and the index of which module named which value — pure, no bus.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DependencyIndex } from '../src/client/schedule/dependencies.ts';
import { assemble, collectionDependency, NodeItems } from '../src/client/sources/collected.ts';
import { configDependency, ConfigValues } from '../src/client/sources/config.ts';
import { ItemWriter } from '../src/client/report/items.ts';
import { boundField } from '../src/client/sources/bound.ts';
import { collectionOf, resolveBound } from '../src/module/plan-names.ts';
import { consumersOf } from '../src/client/sources/consumers.ts';
import { MAX_VAULT_NAME_CHARS, parseVaultNotice } from '../src/client/sources/vault-notice.ts';
import { collectKey } from '../src/shared/contract/keys.ts';
import { memoryLogger } from '../src/shared/cli/log.ts';
import { kindsWithoutSource, SOURCE_OF_KIND, Sources } from '../src/client/sources/index.ts';
import { placementSource } from '../src/client/sources/placement.ts';
import { KNOWN_KINDS } from '../src/shared/contract/registry.ts';
import { BoundEntrySchema } from '../src/shared/contract/bound-entry.ts';
import { decodeJson } from '../src/shared/contract/decode.ts';
import type { Plan } from '../src/shared/contract/plan.ts';

const plan: Plan = {
  node: 'n1',
  module: 'web',
  build: '1',
  archive: { ref: 'obj://b/x.tar', digest: 'sha256:' + 'a'.repeat(64) },
  files: [],
  placement: { dir: { config: '/etc/web' }, port: { http: 8080 } },
  secrets: [],
  provisions: [],
  provides: [],
  items: [],
  collections: [],
};

function nodeSources(config = new ConfigValues('n1')): Sources {
  return new Sources([
    placementSource(),
    { name: 'config', lookup: (p, w) => ({ ...config.lookup(p.module, w.name), dependency: configDependency(p.module, w.name) }) },
  ]);
}

test('every kind of the registry has exactly one source in the table, secrets the engine', () => {
  assert.equal(kindsWithoutSource(), []);
  assert.equal(Object.keys(SOURCE_OF_KIND).sort(), [...KNOWN_KINDS].sort());
  assert.is(SOURCE_OF_KIND['secret'], 'engine');
  for (const kind of ['collected', 'shell', 'environment', 'contribution']) assert.is(SOURCE_OF_KIND[kind], 'collected', kind);
});

test('lookups, table by kind: placement from the plan (own keys only), config by module, unbuilt and unknown kinds fail clearly', () => {
  const config = new ConfigValues('n1');
  config.set('web', 'db.host', new TextEncoder().encode('db1'));
  config.set('web', 'bad', new Uint8Array([0xc3, 0x28]));
  config.set('web', 'bom', new Uint8Array([0xef, 0xbb, 0xbf, 0x78]));
  config.set('api', 'only-api', new TextEncoder().encode('x'));
  const sources = nodeSources(config);
  const rows: [string, string, unknown][] = [
    ['dir', 'config', { state: 'value', text: '/etc/web' }],
    ['port', 'http', { state: 'value', text: '8080' }],
    ['dir', 'state', { state: 'waiting' }],
    ['dir', '__proto__', { state: 'waiting' }],
    ['machine', 'x', { state: 'waiting' }],
    ['config', 'db.host', { state: 'value', text: 'db1' }],
    ['config', 'bom', { state: 'value', text: '\uFEFFx' }],
    ['config', 'only-api', { state: 'waiting' }],
    ['config', 'bad', { state: 'failed', reason: 'mesh-config_resolved n1.web.bad: value is not UTF-8' }],
    ['bound', 'db:user', { state: 'failed', reason: 'this client has no bound source to fill bound values' }],
    ['consumers', 'database', { state: 'failed', reason: 'this client has no consumers source to fill consumers values' }],
    ['nope', 'x', { state: 'failed', reason: 'unknown kind "nope"' }],
    ['constructor', 'x', { state: 'failed', reason: 'unknown kind "constructor"' }],
  ];
  for (const [kind, name, expected] of rows) {
    const { dependency, ...found } = sources.lookup(plan, { kind, name });
    assert.equal(found, expected, `${kind}:${name}`);
    assert.is(
      dependency,
      kind === 'config'
        ? `config:web:${name}`
        : kind === 'dir' || kind === 'port' || kind === 'machine'
          ? `placement:web:${kind}:${name}`
          : `${kind}:web:${name}`,
      `${kind}:${name}`,
    );
  }
});

test('a lookup carries its dependency key: one per value whatever names it, never shared across modules or sources', () => {
  const sources = nodeSources();
  const api = { ...plan, module: 'api' };
  const key = (p: Plan, kind: string, name: string) => sources.lookup(p, { kind, name }).dependency;
  assert.is(key(plan, 'config', 'db.host'), 'config:web:db.host');
  assert.is.not(key(plan, 'config', 'x'), key(api, 'config', 'x'));
  assert.is.not(key(plan, 'config', 'x'), key(plan, 'dir', 'x'));
  assert.is(key(plan, 'shell', 'zsh:normal'), 'shell:web:zsh:normal', 'a kind with no source running is still known by a key of its own');
});

test('the dependency index names exactly the modules whose last fill named a changed value', () => {
  const index = new DependencyIndex();
  index.set('web', ['config:web:a', 'config:web:b']);
  index.set('api', ['config:api:a']);
  assert.equal([...index.modulesNaming(['config:web:a'])], ['web']);
  assert.equal([...index.modulesNaming(['config:api:a', 'config:web:b'])].sort(), ['api', 'web']);
  index.set('web', ['config:web:c']);
  assert.equal([...index.modulesNaming(['config:web:a'])], [], 'what a module no longer names does not fill it');
  assert.equal([...index.modulesNaming(['config:web:c'])], ['web']);
  index.forget('web');
  assert.equal([...index.modulesNaming(['config:web:c'])], [], 'a forgotten module is filled by no change');
  assert.equal([...index.modulesNaming(['config:api:a'])], ['api'], 'the others are kept');
});

const item = (node: string, collection: string, contributor: string, content: string) =>
  new TextEncoder().encode(JSON.stringify({ node, collection, contributor, content }));

test('collections: every kind naming one collection reads the same items, in byte order of contributors, each under its comment line', () => {
  const items = new NodeItems('n1');
  const zsh = 'shell:zsh:normal';
  for (const [contributor, content] of [
    ['web', 'alias w=web'],
    ['api', 'alias a=api\n'],
    ['Zed', ''],
    ['db', 'x'],
  ] as const) {
    assert.equal(
      items.set(collectKey('n1', zsh, contributor === 'Zed' ? 'zed' : contributor), item('n1', zsh, contributor === 'Zed' ? 'zed' : contributor, content)),
      { collection: zsh },
    );
  }
  items.set(collectKey('n1', zsh, 'bad'), new TextEncoder().encode('{"node":"n1"}'));
  items.set(collectKey('n1', zsh, 'liar'), item('n1', zsh, 'other', 'x'));
  assert.equal(items.set(collectKey('n2', zsh, 'web'), item('n2', zsh, 'web', 'x')), { reason: 'names node n2' });
  const collector = { ...plan, collections: [{ name: zsh, comment: '#' }] };
  const expected = '# api\nalias a=api\n# db\nx\n# web\nalias w=web\n# zed\n';
  for (const wanted of [
    { kind: 'collected', name: zsh },
    { kind: 'shell', name: 'zsh:normal' },
  ]) {
    const got = assemble(collector, items, wanted);
    assert.is(got.state === 'value' && got.text, expected, JSON.stringify(wanted));
    assert.equal(got.state === 'value' && got.notes?.map((n) => n.replace(/:.*/, '')), [
      'mesh-provisioner_collect n1.shell=3Azsh=3Anormal.bad left out',
      'mesh-provisioner_collect n1.shell=3Azsh=3Anormal.liar left out',
    ]);
  }
  assert.is(collectionOf({ kind: 'environment', name: 'posix' }), 'environment:posix');
  assert.is(collectionDependency(collectionOf({ kind: 'shell', name: 'zsh:normal' })), collectionDependency(collectionOf({ kind: 'collected', name: zsh })));
  assert.equal(assemble(collector, items, { kind: 'environment', name: 'posix' }), {
    state: 'failed',
    reason: 'collection "environment:posix" is not in the plan\'s collections',
  });
  assert.equal(assemble({ ...plan, collections: [{ name: 'environment:posix', comment: '//' }] }, items, { kind: 'environment', name: 'posix' }), {
    state: 'value',
    text: '',
  });
  items.set(collectKey('n1', zsh, 'web'), null);
  assert.not.ok((assemble(collector, items, { kind: 'collected', name: zsh }) as { text: string }).text.includes('web'));
});

test('items are written only where they differ from the bucket, and those the module no longer has are deleted', async () => {
  const ops: string[] = [];
  const stored = new Map<string, string | undefined>([
    ['a', 'same'],
    ['b', 'old'],
    ['gone', 'x'],
    ['broken', undefined],
  ]);
  const kv = {
    put: async (key: string) => {
      ops.push(`put ${key}`);
      return 1;
    },
    delete: async (key: string) => {
      ops.push(`delete ${key}`);
    },
  };
  const writer = new ItemWriter('n1', kv, () => stored, memoryLogger());
  await writer.record('web', [
    { collection: 'a', content: 'same' },
    { collection: 'b', content: 'new' },
    { collection: 'broken', content: 'fixed' },
    { collection: 'c', content: 'first' },
  ]);
  assert.equal(ops, ['put n1.b.web', 'put n1.broken.web', 'put n1.c.web', 'delete n1.gone.web']);
});

test('bound names resolve against the plan’s own provisions, locals and dotted names included; fields read as, user or values', () => {
  const p = (provision: string, local?: string) => ({ provider: 'postgres', provision, node: 'b', ...(local ? { local } : {}) });
  const consumer = { ...plan, provisions: [p('database'), p('database', 'main'), p('cache.v2')] };
  const rows: [string, string | null, string | null][] = [
    ['database:user', 'database', 'user'],
    ['database.main:host', 'database.main', 'host'],
    ['cache.v2:port', 'cache.v2', 'port'],
    ['queue:user', null, null],
    ['database:', null, null],
  ];
  for (const [name, binding, field] of rows) {
    const ref = resolveBound(consumer, name);
    if (binding === null) assert.ok('reason' in ref, name);
    else
      assert.equal(
        'provision' in ref ? [ref.provision.local ? `${ref.provision.provision}.${ref.provision.local}` : ref.provision.provision, ref.field] : ref,
        [binding, field],
        name,
      );
  }
  const entry = { as: 'web_a', user: 'web_u', values: { host: 'db1', port: 5432, ratio: 0.5 } };
  assert.equal(boundField(entry, 'as', 'w'), { state: 'value', text: 'web_a' });
  assert.equal(boundField(entry, 'user', 'w'), { state: 'value', text: 'web_u' });
  assert.equal(boundField(entry, 'port', 'w'), { state: 'value', text: '5432' });
  assert.equal(boundField(entry, 'ratio', 'w'), { state: 'value', text: '0.5' });
  assert.equal(boundField(entry, 'nope', 'w'), { state: 'failed', reason: 'w: the provider served no value "nope"' });
  assert.equal(boundField({ refused: 'full' }, 'user', 'w'), { state: 'failed', reason: 'w: the provider refused: full' });
});

test('a bound entry is {as, user, values} of strings and numbers, or {refused} alone: anything else names its field and what is wrong', () => {
  const decode = (value: unknown) => decodeJson(BoundEntrySchema, new TextEncoder().encode(JSON.stringify(value)));
  const served = { as: 'web_a', user: 'web_a', values: { host: 'db1', port: 5432 } };
  assert.equal(decode(served), { ok: true, value: served });
  assert.equal(decode({ refused: 'full' }), { ok: true, value: { refused: 'full' } });
  const rows: [unknown, string][] = [
    [{ ...served, refused: 'no' }, 'field "as" is not allowed beside "refused"'],
    [{ refused: 'no', extra: 1 }, 'field "extra" is not allowed beside "refused"'],
    [{ ...served, values: { port: { n: 5432 } } }, 'field "values.port" is neither a string nor a number'],
    [{ ...served, values: { hosts: ['a', 'b'] } }, 'field "values.hosts" is neither a string nor a number'],
    [{ ...served, values: { tls: true } }, 'field "values.tls" is neither a string nor a number'],
    [{ ...served, values: ['db1'] }, 'field "values" is not an object'],
    [{ ...served, extra: 1 }, 'field "extra" is not a field of a served entry (as, user, values, for)'],
    [{ as: 'web_a', user: 'web_a' }, 'field "values" is missing'],
    [{ ...served, as: 7 }, 'field "as" is not a string'],
    [{ refused: null }, 'field "refused" is not a string'],
    [['web_a'], 'value is not a JSON object'],
    ['web_a', 'value is not a JSON object'],
  ];
  for (const [value, reason] of rows) assert.equal(decode(value), { ok: false, reason }, JSON.stringify(value));
});

test('consumers of a provision: every plan bound to this provider on this node, in key byte order, then provision order', () => {
  const consumer = (node: string, module: string, provisions: Plan['provisions']): [string, Plan] => [
    `${node}.${module}`,
    { ...plan, node, module, provisions },
  ];
  const x = (provider: string, provision: string, node: string, local?: string, values?: Record<string, unknown>) => ({
    provider,
    provision,
    node,
    ...(local ? { local } : {}),
    ...(values ? { values } : {}),
  });
  const plans = new Map<string, Plan>([
    consumer('b', 'web', [x('postgres', 'database', 'b', 'main', { name: 'w' }), x('postgres', 'database', 'b', 'audit')]),
    consumer('a', 'api', [x('postgres', 'database', 'b')]),
    consumer('a', 'other', [x('postgres', 'database', 'c'), x('redis', 'database', 'b'), x('postgres', 'cache', 'b')]),
    consumer('A', 'x', []),
  ]);
  assert.equal(consumersOf(plans, 'b', 'postgres', 'database'), [
    { consumer: 'a', module: 'api', local: null, vault: 'pair/postgres/database/a/api', value: {}, provision: x('postgres', 'database', 'b') },
    {
      consumer: 'b',
      module: 'web',
      local: 'main',
      vault: 'pair/postgres/database/b/web/main',
      value: { name: 'w' },
      provision: x('postgres', 'database', 'b', 'main', { name: 'w' }),
    },
    {
      consumer: 'b',
      module: 'web',
      local: 'audit',
      vault: 'pair/postgres/database/b/web/audit',
      value: {},
      provision: x('postgres', 'database', 'b', 'audit'),
    },
  ]);
});

test('a mesh-vault.changed notice is read within limits: a vault name of either grammar, at most its longest, quoting nothing of a bad one', () => {
  const read = (t: string) => parseVaultNotice(new TextEncoder().encode(t));
  const longest = `pair/${'p'.repeat(63)}/${'d'.repeat(128)}/${'n'.repeat(63)}/${'m'.repeat(63)}/${'L'.repeat(128)}`;
  assert.is(longest.length, MAX_VAULT_NAME_CHARS);
  for (const name of ['pair/postgres/database/a/web', 'pair/postgres/database/a/web/main_2', 'module/web/api-key', longest]) {
    assert.equal(read(JSON.stringify({ name, at: '2026-12-01' })), { ok: true, value: name });
  }
  const refused: [string, string][] = [
    [JSON.stringify({ name: longest + 'x' }), `field "name" is longer than ${MAX_VAULT_NAME_CHARS} characters`],
    ...[
      'pair/postgres/database/a',
      'pair/postgres/../a/web',
      'pair/Postgres/database/a/web',
      'pair/postgres/database/a/web/main/x',
      'module/web/a.b',
      'secret/x',
      '',
    ].map((name): [string, string] => [JSON.stringify({ name }), 'field "name" is not a vault name']),
    ['{"name":42}', 'field "name" is not a string'],
    ['{}', 'field "name" is missing'],
    ['"pair/postgres/database/a/web"', 'value is not an object'],
    ['{"name":"pair/p', 'not JSON'],
    ['{"name":' + '['.repeat(100) + ']'.repeat(100) + '}', 'nested deeper than 4 levels'],
    [JSON.stringify({ name: 'pair/postgres/database/a/web', pad: 'x'.repeat(5000) }), '5048 bytes, past the limit of 4096 bytes'],
  ];
  for (const [text, reason] of refused) assert.equal(read(text), { ok: false, reason }, text.slice(0, 60));
});

test.run();
