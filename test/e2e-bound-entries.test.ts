// Bound entries out of shape, end to end (DESIGN §3, §7 point 9): the client bundle on a real
// nats-server reading entries planted in `<provider>_bound` by a provider that cannot be trusted.
// Only `{as, user, values}` of strings and numbers, or `{refused}` alone, is used; anything else
// fails the consumer with a reason naming the bucket, the key, the field and what is wrong.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import { ensureKv } from '../src/shared/bus/bus.ts';
import { jsonBytes } from '../src/shared/base/bytes.ts';
import { boundKey } from '../src/shared/contract/keys.ts';
import { ensureBuilt } from './helpers/bundle.ts';
import { withMesh } from './helpers/mesh.ts';

test.before(() => ensureBuilt('client'));

const SERVED = { as: 'c_a', user: 'c_a', values: { database: 'db', port: 5432 } };

/** Each consumer module with the entry planted for it, and what its report must say (null: applied). */
const CASES: { module: string; entry: unknown; reason: RegExp | null }[] = [
  { module: 'good', entry: SERVED, reason: null },
  {
    module: 'both',
    entry: { ...SERVED, refused: 'not served' },
    reason: /postgres_bound a\.both\.database: the provider's entry is out of shape: field "as" is not allowed beside "refused"/,
  },
  {
    module: 'object',
    entry: { ...SERVED, values: { database: 'db', port: { number: 5432 } } },
    reason: /postgres_bound a\.object\.database: .*field "values\.port" is neither a string nor a number/,
  },
  {
    module: 'list',
    entry: { ...SERVED, values: { database: ['db'], port: 5432 } },
    reason: /postgres_bound a\.list\.database: .*field "values\.database" is neither a string nor a number/,
  },
  { module: 'extra', entry: { ...SERVED, password: 'p' }, reason: /postgres_bound a\.extra\.database: .*field "password" is not a field of a served entry/ },
  {
    module: 'refusedextra',
    entry: { refused: 'no', values: SERVED.values },
    reason: /postgres_bound a\.refusedextra\.database: .*field "values" is not allowed beside "refused"/,
  },
  { module: 'novalues', entry: { as: 'c_a', user: 'c_a' }, reason: /postgres_bound a\.novalues\.database: .*field "values" is missing/ },
  { module: 'refused', entry: { refused: 'database taken' }, reason: /postgres_bound a\.refused\.database: the provider refused: database taken/ },
];

test('the client bundle uses only well-shaped bound entries; each other one fails its consumer naming bucket, key, field and what is wrong', () =>
  withMesh(
    async (m) => {
      const bound = await ensureKv(m.nc, 'postgres_bound', 1);
      for (const { module, entry } of CASES) {
        await m.publish(module, {
          templates: { 'db.conf': 'database=${bound:database:database}\nport=${bound:database:port}\n' },
          provisioning: {
            files: [{ path: '${dir:config}/db.conf', template: 'db.conf' }],
            provisions: [{ provider: 'postgres', provision: 'database', node: 'b' }],
          },
        });
        await bound.put(boundKey('a', module, 'database'), jsonBytes(entry));
        await m.assign('a', module);
      }
      const client = m.startClientProcess();
      try {
        for (const { module, reason } of CASES) {
          const report = await m
            .waitReport('a', module, (r) => r.state === (reason ? 'failed' : 'applied'), 20_000)
            .catch((err: Error) => {
              throw new Error(`${module}: ${err.message}; client stderr: ${client.stderr().slice(-2000)}`);
            });
          if (reason) assert.match(report.reason ?? '', reason, module);
          else assert.is(m.file(join(m.root, 'etc', module, 'db.conf')), 'database=db\nport=5432\n');
        }
        assert.match(
          client.stderr(),
          /postgres_bound a\.both\.database: the provider's entry is out of shape: field "as" is not allowed beside "refused"/,
          'the entry is said in the log too',
        );
        assert.is(m.file(join(m.root, 'etc', 'both', 'db.conf')), undefined, 'an entry holding refused was used as served');
        assert.is(m.file(join(m.root, 'etc', 'object', 'db.conf')), undefined, 'an object value was written as JSON text');
      } finally {
        client.kill();
      }
    },
    { node: 'a' },
  ));

/** The `for` of `{provider: "postgres", provision: "database", node: "b"}`, made by another implementation (Python's json.dumps, sort_keys; hashlib). */
const ANSWERS_PLAN = 'sha256:e366fb10a54661cb3394ed2107fab5c44f30c3279dd84424d39a463b2e73e10b';
/** The `for` of another request: the same provision asking other values. */
const ANSWERS_BEFORE = `sha256:${'0'.repeat(64)}`;

test("the client bundle waits on an entry answering another request than its plan's, a refusal of it included, saying so; one answering its plan's, or naming none, is used", () =>
  withMesh(
    async (m) => {
      const bound = await ensureKv(m.nc, 'postgres_bound', 1);
      const cases: { module: string; entry: unknown }[] = [
        { module: 'fresh', entry: { ...SERVED, for: ANSWERS_PLAN } },
        { module: 'plain', entry: SERVED },
        { module: 'stale', entry: { ...SERVED, for: ANSWERS_BEFORE } },
        { module: 'stalerefused', entry: { refused: 'the request before was refused', for: ANSWERS_BEFORE } },
      ];
      for (const { module, entry } of cases) {
        await m.publish(module, {
          templates: { 'db.conf': 'database=${bound:database:database}\nport=${bound:database:port}\n' },
          provisioning: {
            files: [{ path: '${dir:config}/db.conf', template: 'db.conf' }],
            provisions: [{ provider: 'postgres', provision: 'database', node: 'b' }],
          },
        });
        await bound.put(boundKey('a', module, 'database'), jsonBytes(entry));
        await m.assign('a', module);
      }
      const client = m.startClientProcess();
      try {
        for (const module of ['fresh', 'plain']) {
          await m.waitReport('a', module, (r) => r.state === 'applied', 20_000);
          assert.is(m.file(join(m.root, 'etc', module, 'db.conf')), 'database=db\nport=5432\n', module);
        }
        for (const module of ['stale', 'stalerefused']) {
          const report = await m.waitReport('a', module, (r) => r.state === 'waiting', 20_000);
          assert.equal(report.waiting.map((w) => `${w.kind}:${w.name}`).sort(), ['bound:database:database', 'bound:database:port'], module);
          assert.is(
            report.reason,
            `postgres_bound a.${module}.database answers an earlier request of database: waiting for postgres to answer the new request (the plan's provision changed)`,
          );
          assert.is(m.file(join(m.root, 'etc', module, 'db.conf')), undefined, `${module}: filled from an answer to another request`);
        }
        // The provider answers the plan's request: the module is filled from that answer.
        await bound.put(boundKey('a', 'stale', 'database'), jsonBytes({ ...SERVED, values: { database: 'new', port: 5433 }, for: ANSWERS_PLAN }));
        await bound.put(boundKey('a', 'stalerefused', 'database'), jsonBytes({ refused: 'the new request is refused too', for: ANSWERS_PLAN }));
        await m.waitReport('a', 'stale', (r) => r.state === 'applied', 20_000);
        assert.is(m.file(join(m.root, 'etc', 'stale', 'db.conf')), 'database=new\nport=5433\n');
        const refused = await m.waitReport('a', 'stalerefused', (r) => r.state === 'failed', 20_000);
        assert.match(refused.reason ?? '', /the provider refused: the new request is refused too/);
      } finally {
        client.kill();
      }
    },
    { node: 'a' },
  ));

test.run();
