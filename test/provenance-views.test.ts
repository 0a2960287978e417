// The pure halves of `why` and `trace` (DESIGN §14): a KEY-PATTERN checked and matched, each input of
// a report judged against the bus's newest entries, and the fleet's reports tallied against a pattern.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Report } from '../src/shared/contract/report.ts';
import { matchesPattern, parseKeyPattern } from '../src/server/commands/trace/pattern.ts';
import { TraceTally } from '../src/server/commands/trace/tally.ts';
import { judgeReport, keysToRead, type Newest } from '../src/server/commands/why/judge.ts';

const AT = '2026-12-06T10:00:00.000Z';
const put = (rev: number): Newest => ({ rev, at: AT, op: 'PUT' });

function report(node: string, from: NonNullable<Report['files'][number]['from']> | undefined, extra: Partial<Report> = {}): Report {
  return {
    node,
    module: 'web',
    build: '2',
    state: 'applied',
    files: [{ path: '/etc/web.conf', action: 'written', digest: 'sha256:x', ...(from ? { from } : {}) }],
    waiting: [],
    at: AT,
    ...extra,
  };
}

test('a KEY-PATTERN is a bucket, a colon and tokens, * a whole token; each refusal names what is wrong', () => {
  assert.equal(parseKeyPattern('mesh-config_resolved:*.web.color'), { ok: true, value: { bucket: 'mesh-config_resolved', pattern: '*.web.color' } });
  assert.equal(parseKeyPattern('postgres_bound:n1.shop.database.main'), { ok: true, value: { bucket: 'postgres_bound', pattern: 'n1.shop.database.main' } });
  assert.ok(parseKeyPattern('mesh-config_resolved:n1.web.shell=3Azsh').ok);
  for (const [text, said] of [
    ['*.web.color', /has no bucket/],
    ['a b:x', /"a b" in KEY-PATTERN is not a bucket's name/],
    ['b:', /has no key pattern/],
    ['b:n1..x', /empty token/],
    ['b:n*.x', /"n\*" in the key pattern: \* stands for one whole token/],
    ['b:n1.>', /">" in the key pattern/],
    ['b:n1.a:b', /"a:b" in the key pattern is not a key's token/],
    ['b:n1.=3a', /"=3a" in the key pattern is not a key's token/],
  ] as const) {
    const parsed = parseKeyPattern(text);
    assert.ok(!parsed.ok && said.test(parsed.reason), `${text}: ${JSON.stringify(parsed)}`);
  }
  assert.ok(matchesPattern('*.web.color', 'n1.web.color'));
  assert.not.ok(matchesPattern('*.web.color', 'n1.web.db.color'), '* is one token, not more');
  assert.not.ok(matchesPattern('*.web', 'n1.web.color'));
});

test('why: a bucket key current, behind (rev X of Y), deleted or missing; the archive against the plan; a bound key through the plan’s provider; a vault name and {more} not judged', () => {
  const plan = {
    node: 'n1',
    module: 'web',
    build: '3',
    archive: { digest: 'sha256:new' },
    provisions: [{ provider: 'postgres', provision: 'database', local: 'main' }],
  };
  const r = report('n1', [
    { kind: 'archive', key: 'obj://a/web-2.tar', digest: 'sha256:old' },
    { kind: 'config', key: 'n1.web.color', rev: 41 },
    { kind: 'port', key: 'n1.web', rev: 7 },
    { kind: 'bound', key: 'n1.web.database.main', rev: 9 },
    { kind: 'bound', key: 'n1.web.cache', rev: 3 },
    { kind: 'collected', key: 'n1.env.api', rev: 5 },
    { kind: 'config', key: 'n1.web.gone', rev: 2 },
    { kind: 'secret', key: 'module/web/api-key' },
    { more: 12 },
  ]);
  const bus = new Map<string, Newest>([
    ['mesh-config_resolved\0n1.web.color', put(42)],
    ['mesh-provisioner_plans\0n1.web', put(7)],
    ['postgres_bound\0n1.web.database.main', put(9)],
    ['mesh-provisioner_collect\0n1.env.api', { rev: 6, at: AT, op: 'DEL' }],
  ]);
  assert.equal(
    keysToRead(r, plan).map((k) => `${k.bucket}:${k.key}`),
    [
      'mesh-config_resolved:n1.web.color',
      'mesh-provisioner_plans:n1.web',
      'postgres_bound:n1.web.database.main',
      'mesh-provisioner_collect:n1.env.api',
      'mesh-config_resolved:n1.web.gone',
    ],
  );
  const judged = judgeReport(r, { plan, newest: (b, k) => bus.get(`${b}\0${k}`) ?? null });
  assert.equal(
    judged.map((j) => [j.kind, j.verdict, j.note ?? '']),
    [
      ['archive', 'behind', "the plan names build 3's archive"],
      ['config', 'behind', 'rev 41 of 42'],
      ['port', 'current', ''],
      ['bound', 'current', ''],
      ['bound', 'gone', 'no provision of the plan binds this key any more'],
      ['collected', 'gone', 'the key was deleted'],
      ['config', 'gone', 'the key holds no entry'],
      ['secret', 'not judged', 'a vault name: the vault keeps no revision on the bus'],
      ['', 'not judged', '12 more inputs, not listed in the report'],
    ],
  );
  assert.equal(judged[3]!.bucket, 'postgres_bound');
  assert.equal(
    judgeReport(report('n1', undefined), { plan, newest: () => null }).map((j) => j.verdict),
    ['not judged'],
  );
  assert.equal(judgeReport(r, { plan, newest: () => null }, '/etc/other.conf'), [], 'PATH narrows to that file');
});

test('trace: a node counts once over its modules and files, behind when any input is, with the first input behind and how many more; removed reports and reports without from are not judged', () => {
  const tally = new TraceTally({ bucket: 'mesh-config_resolved', pattern: '*.*.color' });
  tally.addReport(report('n1', [{ kind: 'config', key: 'n1.web.color', rev: 42 }]));
  tally.addReport(report('n1', [{ kind: 'config', key: 'n1.api.color', rev: 40 }], { module: 'api', state: 'waiting', reason: 'engine not reachable' }));
  tally.addReport(report('n1', [{ kind: 'config', key: 'n1.db.color', rev: 30 }], { module: 'db' }));
  tally.addReport(
    report('n2', [
      { kind: 'config', key: 'n2.web.color', rev: 43 },
      { kind: 'port', key: 'n2.web', rev: 1 },
    ]),
  );
  tally.addReport(report('n3', [{ kind: 'config', key: 'n3.web.color', rev: 1 }], { state: 'removed' }));
  tally.addReport(report('n4', undefined));
  tally.addReport(report('n5', [{ kind: 'config', key: 'n5.web.size', rev: 1 }]));
  const view = tally.view(
    new Map([
      ['n1.web.color', put(42)],
      ['n1.api.color', put(44)],
      ['n1.db.color', { rev: 45, at: AT, op: 'DEL' as const }],
      ['n2.web.color', put(43)],
      ['n3.web.color', put(2)],
    ]),
  );
  assert.equal([view.keys, view.deleted, view.newest?.rev, view.nodes, view.current, view.withoutFrom], [5, 1, 45, 2, 1, 1]);
  assert.equal(view.behind, [
    {
      node: 'n1',
      module: 'api',
      path: '/etc/web.conf',
      key: 'n1.api.color',
      rev: 40,
      state: 'waiting',
      reason: 'engine not reachable',
      newest: 44,
      gone: false,
      behind: 2,
    },
  ]);
});

test.run();
