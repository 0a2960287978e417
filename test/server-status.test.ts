// `mesh-provisioner status` (issue 14, issue 20): the fleet per node and a node in detail, from the
// seat's verb page by page (reports and the seat's health), against a real nats-server and the seat
// bundle copied alone.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { APPLIED, ASSIGNMENTS, MODULES, PLANS } from '../src/shared/contract/buckets.ts';
import { PROVISIONING_VERB } from '../src/shared/contract/subjects.ts';
import type { Report } from '../src/shared/contract/report.ts';
import { formatAge } from '../src/server/commands/status/format.ts';
import { FleetSummary } from '../src/server/commands/status/summary.ts';
import { jsonBytes } from '../src/shared/base/bytes.ts';
import { waitFor } from './helpers/wait.ts';
import { cleanupBundles, copyBundleAlone, ensureBuilt, runBundle, startBundle, type Running } from './helpers/bundle.ts';
import { startNats, type NatsServer } from './helpers/nats.ts';
import { assignment, composition } from './helpers/seat.ts';
import { ensureKv } from '../src/shared/bus/bus.ts';

const MINUTE = 60_000;
const DIGEST = 'sha256:' + 'b'.repeat(64);

let dir: string;
let nats: NatsServer;
let nc: NatsConnection;
let seat: Running;

const ago = (ms: number) => new Date(Date.now() - ms).toISOString();

function report(node: string, module: string, state: Report['state'], more: Partial<Report> = {}): Report {
  return { node, module, build: '1', state, files: [], waiting: [], at: ago(MINUTE), ...more };
}

/**
 * The fleet: n1 web waits (10 min) for a config value, api applied, cron failed; n2 waits twice,
 * api the longer (30 min) on a bound value; n3 runs batch, whose build is unpublished; n4 runs
 * legacy, which has no composition at all (both assigned, so the seat holds them). Eight reports in key order:
 * n1.api n1.cron n1.web | n2.api n2.web n3.batch | n3.web n4.legacy (pages of 3).
 */
const FLEET: Report[] = [
  report('n1', 'web', 'waiting', {
    at: ago(10 * MINUTE),
    waiting: [{ kind: 'config', name: 'db.host', files: ['/etc/web/web.conf'] }],
    files: [{ path: '/etc/web/web.env', action: 'written', digest: DIGEST }],
  }),
  report('n1', 'api', 'applied', { files: [{ path: '/etc/api/api.conf', action: 'unchanged', digest: DIGEST }] }),
  report('n1', 'cron', 'failed', { reason: 'template cron.conf: placeholder ${nope:x} of an unknown kind' }),
  report('n2', 'api', 'waiting', { at: ago(30 * MINUTE), waiting: [{ kind: 'bound', name: 'database.main:user', files: ['/etc/api/db.conf'] }] }),
  report('n2', 'web', 'waiting', { at: ago(2 * MINUTE), waiting: [{ kind: 'port', name: 'http', files: ['/etc/web/web.conf'] }] }),
  report('n3', 'batch', 'applied'),
  report('n3', 'web', 'applied'),
  report('n4', 'legacy', 'applied'),
];

const EXPECTED = [
  { node: 'n1', applied: 1, waiting: 1, failed: 1, oldest: 'config:db.host (web, 10m', held: 0 },
  { node: 'n2', applied: 0, waiting: 2, failed: 0, oldest: 'bound:database.main:user (api, 30m', held: 0 },
  { node: 'n3', applied: 2, waiting: 0, failed: 0, oldest: '', held: 1 },
  { node: 'n4', applied: 1, waiting: 0, failed: 0, oldest: '', held: 1 },
];

const status = (args: string[]) => runBundle('node', dir, 'server', ['status', '--nats', nats.url, ...args], {}, 20_000);

/** A table printed by status, read by the columns its header line sets out (a cell may be empty). */
function readTable(lines: string[]): Record<string, string>[] {
  const head = lines[0]!;
  const starts = [...head.matchAll(/\S+(?: \S+)*/g)].map((m) => ({ name: m[0], at: m.index! }));
  return lines.slice(1).map((line) => Object.fromEntries(starts.map((col, i) => [col.name, line.slice(col.at, starts[i + 1]?.at).trim()])));
}

function fleetRows(stdout: string): Record<string, string>[] {
  const lines = stdout.split('\n');
  const end = lines.indexOf('');
  return readTable(lines.slice(0, end));
}

test.before(async () => {
  ensureBuilt('server');
  dir = copyBundleAlone('server');
  nats = await startNats();
  nc = await connect({ servers: nats.url });
  const kvm = new Kvm(jetstream(nc));
  const assignments = await ensureKv(nc, ASSIGNMENTS, 1);
  const modules = await ensureKv(nc, MODULES, 1);
  for (const m of ['web', 'api', 'cron']) await modules.put(m, JSON.stringify(composition(m, '1')));
  await modules.put('batch', JSON.stringify({ ...composition('batch', '3'), published: false }));
  seat = startBundle('node', dir, 'server', ['--nats', nats.url]);
  await seat.waitForLog(/seat ready/, 15_000);
  const applied = await kvm.open(APPLIED);
  for (const r of FLEET) await applied.put(`${r.node}.${r.module}`, JSON.stringify(r));
  await assignments.put('n3.batch', JSON.stringify(assignment('n3', 'batch')));
  await assignments.put('n4.legacy', JSON.stringify(assignment('n4', 'legacy')));
  await waitFor('the seat holds batch and legacy', async () => {
    const reply = (await nc.request(PROVISIONING_VERB, jsonBytes({ what: 'health' }), { timeout: 5000 })).json<{ entries?: unknown[] }>();
    return reply.entries?.length === 2;
  });
});

test.after(async () => {
  seat?.kill();
  await nc?.close().catch(() => {});
  await nats?.cleanup();
  cleanupBundles();
});

test('status prints one row per node with exact applied, waiting and failed counts, the oldest waiting value with its age, and held modules; it exits 1', async () => {
  const run = await status([]);
  assert.is(run.code, 1, run.stderr + run.stdout);
  const rows = fleetRows(run.stdout);
  assert.equal(
    rows.map((r) => [r['NODE'], Number(r['APPLIED']), Number(r['WAITING']), Number(r['FAILED'])]),
    EXPECTED.map((e) => [e.node, e.applied, e.waiting, e.failed]),
    run.stdout,
  );
  for (const e of EXPECTED) {
    const row = rows.find((r) => r['NODE'] === e.node)!;
    if (e.oldest) assert.ok(row['OLDEST WAITING']!.startsWith(e.oldest), `${e.node}: ${row['OLDEST WAITING']}`);
    else assert.is(row['OLDEST WAITING'], '');
    assert.is(row['HELD'], String(e.held), run.stdout);
    assert.is(row['COMPOSE FAILED'], '0', run.stdout);
  }
  assert.match(run.stdout, /4 nodes: 4 applied, 3 waiting, 1 failed; the seat holds 2, cannot compose 0/);
  assert.match(run.stdout, /^batch\s+held\s+3\s+1\s+\S+\s+composition not published$/m);
  assert.match(run.stdout, /^legacy\s+held\s+1\s+\S+\s+composition missing$/m);
});

test('status --json parses to the same counts, oldest waiting values and held modules as the table', async () => {
  const [table, json] = await Promise.all([status([]), status(['--json'])]);
  assert.is(json.code, 1, json.stderr);
  const view = JSON.parse(json.stdout) as {
    nodes: {
      node: string;
      applied: number;
      waiting: number;
      failed: number;
      held: number;
      composeFailed: number;
      oldestWaiting?: { module: string; kind: string; name: string; seconds: number };
    }[];
    health: { module: string; state: string; reason: string; nodes: number }[];
  };
  const rows = fleetRows(table.stdout);
  assert.equal(
    view.nodes.map((n) => [n.node, String(n.applied), String(n.waiting), String(n.failed), String(n.held), String(n.composeFailed)]),
    rows.map((r) => [r['NODE'], r['APPLIED'], r['WAITING'], r['FAILED'], r['HELD'], r['COMPOSE FAILED']]),
  );
  const n2 = view.nodes.find((n) => n.node === 'n2')!;
  assert.equal([n2.oldestWaiting?.module, n2.oldestWaiting?.kind, n2.oldestWaiting?.name], ['api', 'bound', 'database.main:user']);
  assert.ok(Math.abs(n2.oldestWaiting!.seconds - 30 * 60) < 120, String(n2.oldestWaiting!.seconds));
  assert.equal(
    view.health.map((h) => [h.module, h.state, h.reason, h.nodes]),
    [
      ['batch', 'held', 'composition not published', 1],
      ['legacy', 'held', 'composition missing', 1],
    ],
  );
});

test('status with --limit 3 pages through the verb (3 requests for 8 reports) and its counts are still exact', async () => {
  const asked: Record<string, unknown>[] = [];
  const sub = nc.subscribe(PROVISIONING_VERB, { callback: (_e, msg) => void asked.push(msg.json()) });
  await nc.flush();
  try {
    const [whole, paged] = [await status(['--json']), await status(['--json', '--limit', '3'])];
    assert.is(paged.code, 1, paged.stderr);
    const counts = (stdout: string) =>
      (JSON.parse(stdout).nodes as Record<string, unknown>[]).map(({ node, applied, waiting, failed, held }) => ({ node, applied, waiting, failed, held }));
    assert.equal(
      counts(paged.stdout),
      EXPECTED.map(({ node, applied, waiting, failed, held }) => ({ node, applied, waiting, failed, held })),
    );
    assert.equal(counts(paged.stdout), counts(whole.stdout));
    const pages = asked.filter((r) => r['what'] === 'applied' && r['limit'] === 3);
    assert.is(pages.length, 3, JSON.stringify(asked));
    assert.equal(
      pages.map((r) => r['after']),
      [undefined, 'n1.web', 'n3.batch'],
    );
  } finally {
    sub.unsubscribe();
  }
});

test('status n1 web lists the waited value with the domain that owns it and its key, the last report and the files with actions and digests', async () => {
  const run = await status(['n1', 'web']);
  assert.is(run.code, 1, run.stderr + run.stdout);
  const lines = run.stdout.split('\n');
  assert.match(lines[0]!, /^n1 web: waiting, build 1, reported 10m\d\ds ago/);
  const waitingAt = lines.findIndex((l) => l.trim().startsWith('WAITING FOR'));
  const waited = readTable(lines.slice(waitingAt, waitingAt + 2).map((l) => l.slice(2)));
  assert.equal(waited, [{ 'WAITING FOR': 'config:db.host', OWNER: 'mesh-config', WHERE: 'mesh-config_resolved n1.web.db.host', FILES: '/etc/web/web.conf' }]);
  const filesAt = lines.findIndex((l) => l.trim().startsWith('FILE '));
  const files = readTable(lines.slice(filesAt, filesAt + 2).map((l) => l.slice(2)));
  assert.equal(files, [{ FILE: '/etc/web/web.env', ACTION: 'written', DIGEST }]);
  assert.not.match(run.stdout, /api|cron/);
});

test('status n1 --json gives every module of the node with state, reason, owners and files; a held module says so', async () => {
  const run = await status(['n1', '--json']);
  assert.is(run.code, 1, run.stderr);
  const view = JSON.parse(run.stdout) as {
    modules: { module: string; state: string; reason?: string; waiting: { owner: string; where: string }[]; files: { action: string }[] }[];
  };
  assert.equal(
    view.modules.map((m) => [m.module, m.state]),
    [
      ['api', 'applied'],
      ['cron', 'failed'],
      ['web', 'waiting'],
    ],
  );
  assert.match(view.modules[1]!.reason!, /unknown kind/);
  assert.equal(
    view.modules[2]!.waiting.map((w) => [w.owner, w.where]),
    [['mesh-config', 'mesh-config_resolved']],
  );
  const n3 = await status(['n3', 'batch']);
  assert.is(n3.code, 1, n3.stdout);
  assert.match(n3.stdout, /^ {2}held by the seat: composition not published \(build 3, \d+ pass(?:es)?, since \S+ ago\)$/m);
  assert.is((await status(['n3', 'web'])).code, 0, 'n3 web alone is applied');
});

test('status with three positional arguments or a bad node name exits 2 with one line naming it', async () => {
  for (const [args, word] of [
    [['n1', 'web', 'extra'], 'extra'],
    [['N_1'], 'N_1'],
  ] as const) {
    const run = await runBundle('node', dir, 'server', ['status', ...args]);
    assert.is(run.code, 2, run.stderr);
    assert.is(run.stderr.trim().split('\n').length, 1, run.stderr);
    assert.ok(run.stderr.includes(word), run.stderr);
  }
});

test('status --help says each exit code as the command gives it (DESIGN §13): rollouts and keys out of shape among the 1s', async () => {
  const help = await status(['--help']);
  assert.is(help.code, 0, help.stderr);
  const text = help.stdout.replace(/\s+/g, ' ');
  for (const said of [
    'It exits 0 when every module shown is applied on its newest build; 1 when one is waiting, failed (or listed failed by its rolling or done rollout and not applied the new build since), held or cannot be composed,',
    'when its rollout is rolling, halted or aborted, when a key is out of shape, when a node (or module) named has nothing shown,',
    "or when the seat's verb cannot be asked; 2 on a usage error or a request the seat refuses.",
  ])
    assert.ok(text.includes(said), `--help lacks: ${said}\n${help.stdout}`);
});

test('a module taken off a node (its report `removed`, the key going next) keeps neither view from exiting 0', async () => {
  const applied = await new Kvm(jetstream(nc)).open(APPLIED);
  await applied.put('n5.web', JSON.stringify(report('n5', 'web', 'applied')));
  await applied.put('n5.old', JSON.stringify(report('n5', 'old', 'removed')));
  try {
    const node = await status(['n5']);
    assert.is(node.code, 0, node.stdout + node.stderr);
    assert.match(node.stdout, /^n5 old: removed, /m);
    const fleet = JSON.parse((await status(['--json'])).stdout) as { nodes: { node: string; applied: number }[] };
    assert.is(fleet.nodes.find((n) => n.node === 'n5')?.applied, 1, 'a removed report is not counted');
  } finally {
    await applied.delete('n5.web');
    await applied.delete('n5.old');
  }
});

test('a node summary keeps the oldest waiting report across pages, counts the seat’s entries, groups them, and counts a key out of shape apart', () => {
  const now = Date.parse('2026-01-01T12:00:00Z');
  const summary = new FleetSummary(now);
  const at = (minutes: number) => new Date(now - minutes * MINUTE).toISOString();
  summary.addReport('n1.web', report('n1', 'web', 'waiting', { at: at(5), waiting: [{ kind: 'config', name: 'a', files: [] }] }));
  summary.addReport('n1.api', report('n1', 'api', 'waiting', { at: at(50), waiting: [{ kind: 'config', name: 'b', files: [] }] }));
  summary.addReport('n1.db', report('n1', 'db', 'waiting', { at: at(20), waiting: [] }));
  summary.addReport('n1.bad', { node: 'n1', module: 'bad', state: 'exploded' });
  const entry = (node: string, module: string, state: string, reason: string, since: string) => ({ node, module, state, reason, since, passes: 3 });
  summary.addHealth('n1.ghost', entry('n1', 'ghost', 'held', 'composition missing', at(9)));
  summary.addHealth('n2.ghost', entry('n2', 'ghost', 'held', 'composition missing', at(30)));
  summary.addHealth('n2.web', { ...entry('n2', 'web', 'failed', 'file web.conf: path …', at(1)), build: '4' });
  summary.addHealth('n3.web', entry('n2', 'web', 'failed', 'x', at(1)));
  summary.addHealth('web', { module: 'web', build: '5', state: 'rolling', wave: 1, reason: '', since: at(1) });
  const [n1, n2] = summary.nodes();
  assert.equal([n1!.waiting, n1!.oldestWaiting?.module, n1!.oldestWaiting?.name, n1!.oldestWaiting?.seconds], [3, 'api', 'b', 3000]);
  assert.equal([n1!.held, n1!.composeFailed, n2!.held, n2!.composeFailed], [1, 0, 1, 1]);
  assert.equal(
    summary.health().map((h) => [h.module, h.state, h.build, h.nodes, h.since]),
    [
      ['ghost', 'held', '', 2, at(30)],
      ['web', 'failed', '4', 1, at(1)],
    ],
  );
  assert.equal(
    summary.outOfShape.listed.map((o) => o.key),
    ['n1.bad', 'n3.web'],
    'a report out of shape, and an entry naming another node than its key; a rollout’s entry is left to rollout',
  );
});

test('ages read as seconds, minutes, hours or days', () => {
  assert.equal([0, 42, 60, 307, 3600, 3 * 3600 + 5 * 60 + 9, 86_400 * 2 + 4 * 3600].map(formatAge), ['0s', '42s', '1m00s', '5m07s', '1h00m', '3h05m', '2d04h']);
});

test("status n5 shop says whom a bound value waits on, from the plan: the provider's bucket, and that nothing binds it while no module there provides it", async () => {
  const kvm = new Kvm(jetstream(nc));
  const [applied, assignments, modules, plans] = await Promise.all([APPLIED, ASSIGNMENTS, MODULES, PLANS].map((b) => kvm.open(b)));
  const provisions = [{ provider: 'pg', provision: 'database', local: 'main', node: 'db1' }];
  await modules!.put('shop', JSON.stringify(composition('shop', '1', { provisions })));
  await assignments!.put('n5.shop', JSON.stringify(assignment('n5', 'shop')));
  await applied!.put(
    'n5.shop',
    JSON.stringify(report('n5', 'shop', 'waiting', { waiting: [{ kind: 'bound', name: 'database.main:user', files: ['/etc/shop/shop.conf'] }] })),
  );
  const planned = (key: string, build: string) =>
    waitFor(`plan ${key} build ${build}`, async () => (await plans!.get(key))?.json<{ build: string }>().build === build);
  await planned('n5.shop', '1');
  const waitedRow = (stdout: string) => {
    const lines = stdout.split('\n');
    const at = lines.findIndex((l) => l.trim().startsWith('WAITING FOR'));
    return readTable(lines.slice(at, at + 2).map((l) => l.slice(2)))[0];
  };
  try {
    // No pg on db1: the provider's own bucket, and the note that nothing binds it.
    let run = await status(['n5', 'shop']);
    assert.is(run.code, 1, run.stderr + run.stdout);
    assert.equal(waitedRow(run.stdout), {
      'WAITING FOR': 'bound:database.main:user',
      OWNER: 'pg',
      WHERE: 'pg_bound n5.shop.database.main user',
      FILES: '/etc/shop/shop.conf',
    });
    assert.match(run.stdout, /\n    bound:database\.main:user: no module pg is planned on db1, so nothing binds it: assign pg there/);
    // pg on db1, providing something else: said with what it provides.
    await modules!.put('pg', JSON.stringify(composition('pg', '1', { provides: [{ provision: 'cache' }] })));
    await assignments!.put('db1.pg', JSON.stringify(assignment('db1', 'pg')));
    await planned('db1.pg', '1');
    run = await status(['n5', 'shop', '--json']);
    const json = JSON.parse(run.stdout) as { modules: { waiting: { owner: string; where: string; note?: string }[] }[] };
    assert.is(json.modules[0]!.waiting[0]!.note, 'pg on db1 does not provide database (its plan provides cache), so nothing binds it');
    // pg providing database: the value is only waited for, with no note.
    await modules!.put('pg', JSON.stringify(composition('pg', '2', { provides: [{ provision: 'database' }] })));
    await planned('db1.pg', '2');
    run = await status(['n5', 'shop']);
    assert.is(run.code, 1, run.stderr + run.stdout);
    assert.is(waitedRow(run.stdout)!['OWNER'], 'pg');
    assert.not.match(run.stdout, /nothing binds it/);
  } finally {
    for (const [kv, key] of [
      [applied, 'n5.shop'],
      [assignments, 'n5.shop'],
      [assignments, 'db1.pg'],
    ] as const)
      await kv!.delete(key);
  }
});

test.run();
