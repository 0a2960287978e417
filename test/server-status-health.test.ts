// `status` shows the seat's health beside the nodes' reports and exits as a check can rely on
// (issue 20 item 5, DESIGN §6, §13), on the generated bus: the seat's bundle logged in as
// `provisioner`, n1's client as `provisioner.n1`, `status` run as the seat's login. A failed module,
// a waiting one, an unpublished one, one with no composition and one whose path the seat cannot
// resolve (on a node with no client, so with no report) each show and make `status` exit 1; once put
// right, `status` exits 0. The seat says a hold that lasts pass after pass once, not once a pass.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { USERS } from '../src/server/commands/bus-config/users.ts';
import { webAppliedOn, withIsolatedMesh, type IsolatedMesh } from './helpers/isolated-mesh.ts';
import { placementUnder } from './helpers/mesh.ts';
import { nodePaths } from './helpers/mesh-node.ts';
import { waitFor } from './helpers/wait.ts';
import { join } from 'node:path';

const file = (module: string, path = '${dir:config}/' + module + '.conf') => ({ files: [{ path, template: `${module}.conf`, change: 'restart' }] });
const spec = (module: string, template: string, more: { build?: string; published?: boolean; path?: string } = {}) => ({
  build: more.build ?? '1',
  templates: { [`${module}.conf`]: template },
  provisioning: file(module, more.path),
  ...(more.published === undefined ? {} : { published: more.published }),
});

/** A table printed by status, read by the columns its header line sets out (a cell may be empty). */
function readTable(lines: string[]): Record<string, string>[] {
  const head = lines[0]!;
  const starts = [...head.matchAll(/\S+(?: \S+)*/g)].map((m) => ({ name: m[0], at: m.index! }));
  return lines.slice(1).map((line) => Object.fromEntries(starts.map((col, i) => [col.name, line.slice(col.at, starts[i + 1]?.at).trim()])));
}

/** The table whose header line begins with `head`, to an empty line, a line indented otherwise, or the next header. */
function tableAt(stdout: string, head: string): Record<string, string>[] {
  const lines = stdout.split('\n');
  const at = lines.findIndex((l) => l.trimStart().startsWith(head));
  assert.ok(at >= 0, `no table ${head} in:\n${stdout}`);
  const indent = /^ */.exec(lines[at]!)![0];
  const rows: string[] = [];
  for (const line of lines.slice(at + 1)) {
    const body = line.slice(indent.length);
    if (!line.startsWith(indent) || body.trim() === '' || body.startsWith(' ') || /^[A-Z][A-Z ]+$/.test(body)) break;
    rows.push(body);
  }
  return readTable([lines[at]!.slice(indent.length), ...rows]);
}

const status = (m: IsolatedMesh, args: string[] = []) => m.serverCommand(USERS.seat, ['status', ...args]);

/** Puts n2's web assignment with another config dir: one more pass of the seat, seen when n2.web's plan holds it. */
async function onePass(m: IsolatedMesh, i: number): Promise<void> {
  const placement = placementUnder(join(nodePaths(join(m.dir, 'n2')).root, String(i)), 'web');
  await m.kv.assignments.put('n2.web', JSON.stringify({ node: 'n2', module: 'web', placement }));
  await waitFor(`n2.web planned with pass ${i}`, async () => {
    const plan = await m.kv.plans.get('n2.web');
    return plan?.operation === 'PUT' && plan.string().includes(placement.dir.config);
  });
}

/** The seat's log lines that name `word`. */
const seatLines = (m: IsolatedMesh, word: RegExp) =>
  m
    .seatSaid()
    .split('\n')
    .filter((l) => word.test(l));

test('status exits 0 with every module applied, 1 with a module failed, waiting, held, missing or not composable, and 0 again once put right', () =>
  withIsolatedMesh({ nodes: ['n1', 'n2'], seat: 'process' }, async (m) => {
    const n1 = m.node('n1');
    await n1.startEngine();
    await n1.startClient();
    await m.publish('web', spec('web', 'port ${port:http}\n'));
    await m.assign('n1', 'web');
    await m.waitReport('n1', 'web', (r) => r.state === 'applied');

    const clean = await status(m);
    assert.is(clean.code, 0, clean.stdout + clean.stderr);
    assert.match(clean.stdout, /1 node: 1 applied, 0 waiting, 0 failed; the seat holds 0, cannot compose 0/);
    for (const args of [['n1'], ['n1', 'web'], ['--json']]) assert.is((await status(m, args)).code, 0, args.join(' '));
    const unknown = await status(m, ['n9']);
    assert.is(unknown.code, 1, 'a node with no report and nothing held');
    assert.match(unknown.stdout, /^\(no report of n9, and the seat holds nothing of it\)$/m);
    assert.is((await status(m, ['n1', 'nope'])).code, 1, 'a module of n1 with nothing shown');

    await m.publish('cfg', spec('cfg', 'host ${config:db.host}\n'));
    await m.publish('broken', spec('broken', 'x ${nope:x}\n'));
    await m.publish('draft', spec('draft', 'draft\n', { build: '3', published: false }));
    await m.publish('pathy', spec('pathy', 'p\n', { build: '4', path: '${dir:nope}/pathy.conf' }));
    // A secret name out of its grammar: the composition is out of shape, its plans failed (not held).
    const evil = spec('evil', 'e\n');
    await m.publish('evil', { ...evil, provisioning: { ...evil.provisioning, secrets: [{ name: '../x' }] } });
    for (const module of ['cfg', 'broken', 'draft', 'ghost']) await m.assign('n1', module);
    await m.assign('n2', 'pathy');
    await m.assign('n2', 'evil');
    await m.waitReport('n1', 'cfg', (r) => r.state === 'waiting');
    await m.waitReport('n1', 'broken', (r) => r.state === 'failed');
    for (let i = 0; i < 4; i++) await onePass(m, i);

    const run = await waitFor('status with the seat’s health', async () => {
      const r = await status(m);
      return /cannot compose 2/.test(r.stdout) && /holds 2/.test(r.stdout) ? r : undefined;
    });
    assert.is(run.code, 1, run.stdout);
    const rows = tableAt(run.stdout, 'NODE');
    assert.equal(
      rows.map((r) => [r['NODE'], r['APPLIED'], r['WAITING'], r['FAILED'], r['HELD'], r['COMPOSE FAILED']]),
      [
        ['n1', '1', '1', '1', '2', '0'],
        ['n2', '0', '0', '0', '0', '2'],
      ],
      run.stdout,
    );
    assert.match(run.stdout, /2 nodes: 1 applied, 1 waiting, 1 failed; the seat holds 2, cannot compose 2/);
    const health = tableAt(run.stdout, 'MODULE');
    assert.match(
      health.find((h) => h['MODULE'] === 'evil')?.['REASON'] ?? '',
      /^composition does not validate: field "provisioning\.secrets\.0\.name" is "\.\.\/x"/,
    );
    assert.equal(
      health.filter((h) => h['MODULE'] !== 'evil').map((h) => [h['MODULE'], h['STATE'], h['BUILD'], h['NODES'], h['REASON']]),
      [
        ['draft', 'held', '3', '1', 'composition not published'],
        ['ghost', 'held', '', '1', 'composition missing'],
        ['pathy', 'failed', '4', '1', 'file pathy.conf: path "${dir:nope}/pathy.conf": ${dir:nope} is not in the assignment\'s placement'],
      ],
      run.stdout,
    );

    const json = await status(m, ['--json']);
    assert.is(json.code, 1);
    const view = JSON.parse(json.stdout) as { nodes: { node: string; held: number; composeFailed: number }[]; health: { module: string; state: string }[] };
    assert.equal(
      view.nodes.map((n) => [n.node, n.held, n.composeFailed]),
      [
        ['n1', 2, 0],
        ['n2', 0, 2],
      ],
    );
    assert.equal(
      view.health.map((h) => [h.module, h.state]),
      [
        ['draft', 'held'],
        ['evil', 'failed'],
        ['ghost', 'held'],
        ['pathy', 'failed'],
      ],
    );

    const n2 = await status(m, ['n2']);
    assert.is(n2.code, 1, n2.stdout);
    assert.match(n2.stdout, /^n2 evil: no report\n {2}the seat cannot compose it: composition does not validate: /m);
    assert.match(n2.stdout, /^n2 pathy: no report$/m);
    assert.match(
      n2.stdout,
      /^ {2}the seat cannot compose it: file pathy\.conf: path "\$\{dir:nope\}\/pathy\.conf": .* \(build 4, \d+ pass(?:es)?, since \S+ ago\)$/m,
    );
    const ghost = await status(m, ['n1', 'ghost']);
    assert.is(ghost.code, 1);
    assert.match(ghost.stdout, /^n1 ghost: no report\n {2}held by the seat: composition missing \(\d+ passes, since \S+ ago\)$/m);
    const detail = JSON.parse((await status(m, ['n1', '--json'])).stdout) as {
      modules: { module: string; state?: string; health?: { state: string; reason: string } }[];
    };
    assert.equal(
      detail.modules.map((x) => [x.module, x.state ?? null, x.health?.state ?? null]),
      [
        ['broken', 'failed', null],
        ['cfg', 'waiting', null],
        ['draft', null, 'held'],
        ['ghost', null, 'held'],
        ['web', 'applied', null],
      ],
    );
    assert.is((await status(m, ['n1', 'web'])).code, 0, 'only web shown, and applied');

    // Held for every one of those passes, said once each; the path the seat cannot resolve, once.
    assert.equal(seatLines(m, /\bghost\b/).length, 1, seatLines(m, /\bghost\b/).join('\n'));
    assert.match(seatLines(m, /\bghost\b/)[0]!, /(warning |<4>)module ghost held for 3 passes: composition missing \(build unknown\)$/);
    assert.equal(seatLines(m, /\bdraft\b/).length, 1, seatLines(m, /\bdraft\b/).join('\n'));
    for (const once of [/\bpathy\b/, /\bevil\b/]) assert.equal(seatLines(m, once).length, 1, seatLines(m, once).join('\n'));

    await m.publish('ghost', spec('ghost', 'ghost\n'));
    await m.publish('draft', spec('draft', 'draft\n', { build: '3' }));
    await m.kv.config.put('n1.cfg.db.host', 'db1');
    await m.kv.assignments.delete('n1.broken');
    await m.kv.assignments.delete('n2.pathy');
    await m.kv.assignments.delete('n2.evil');
    await m.kv.assignments.delete('n2.web');
    for (const module of ['ghost', 'draft', 'cfg']) await m.waitReport('n1', module, (r) => r.state === 'applied');
    const fixed = await waitFor('status 0 once put right', async () => {
      const r = await status(m);
      return r.code === 0 ? r : undefined;
    });
    assert.match(fixed.stdout, /1 node: 4 applied, 0 waiting, 0 failed; the seat holds 0, cannot compose 0/);
    await waitFor('the end of the hold said', () => seatLines(m, /module ghost no longer held/).length === 1);
    assert.equal(seatLines(m, /\bghost\b/).length, 2, 'its beginning and its end');
  }));

test('status <node> <module> says where a waited value is read: the bucket and the key', () =>
  withIsolatedMesh({ nodes: ['n1'] }, async (m) => {
    const n1 = m.node('n1');
    await n1.startEngine();
    await n1.startClient();
    await m.publish('cfg', spec('cfg', 'host ${config:db.host}\nport ${port:admin}\n'));
    await m.assign('n1', 'cfg');
    await m.waitReport('n1', 'cfg', (r) => r.state === 'waiting' && r.waiting.length === 2);
    const run = await status(m, ['n1', 'cfg']);
    assert.is(run.code, 1, run.stdout);
    const waited = tableAt(run.stdout, 'WAITING FOR');
    assert.equal(
      waited.map((w) => [w['WAITING FOR'], w['OWNER'], w['WHERE']]),
      [
        ['config:db.host', 'mesh-config', 'mesh-config_resolved n1.cfg.db.host'],
        ['port:admin', 'mesh-provisioner', 'mesh-provisioner_plans n1.cfg placement.port.admin'],
      ],
      run.stdout,
    );
    const json = JSON.parse((await status(m, ['n1', 'cfg', '--json'])).stdout) as { modules: { waiting: Record<string, unknown>[] }[] };
    assert.equal(
      json.modules[0]!.waiting.map(({ where, key, field }) => ({ where, key, field })),
      [
        { where: 'mesh-config_resolved', key: 'n1.cfg.db.host', field: undefined },
        { where: 'mesh-provisioner_plans', key: 'n1.cfg', field: 'placement.port.admin' },
      ],
    );
  }));

test('the fleet view’s OLDEST WAITING cell carries the hint the client gives for a config key’s typo, as status NODE MODULE does', () =>
  withIsolatedMesh({ nodes: ['n1'] }, async (m) => {
    const n1 = m.node('n1');
    await n1.startEngine();
    await n1.startClient();
    await m.kv.config.put('n1.typo.color', 'blue');
    await m.publish('typo', spec('typo', 'color ${config:colr}\n'));
    await m.assign('n1', 'typo');
    await m.waitReport('n1', 'typo', (r) => r.state === 'waiting' && r.reason !== undefined);
    const run = await status(m);
    assert.is(run.code, 1, run.stdout);
    const row = tableAt(run.stdout, 'NODE').find((r) => r['NODE'] === 'n1');
    assert.match(row?.['OLDEST WAITING'] ?? '', /^config:colr: did you mean "color"\? \(typo, \d+s\)$/, run.stdout);
    const json = JSON.parse((await status(m, ['--json'])).stdout) as { nodes: { oldestWaiting?: Record<string, unknown> }[] };
    assert.equal(json.nodes[0]?.oldestWaiting?.['hint'], 'did you mean "color"?');
    assert.match((await status(m, ['n1', 'typo'])).stdout, /^  reason: config:colr: did you mean "color"\?$/m);
  }));

test("status <node> <module>, run as the seat's login, says whom a bound value waits on and that nothing binds it while its provider is not planned", () =>
  withIsolatedMesh({ nodes: ['n1'], providers: ['pg'] }, async (m) => {
    const n1 = m.node('n1');
    await n1.startEngine();
    await n1.startClient();
    await m.publish('shop', {
      templates: { 'shop.conf': 'user=${bound:database:user}\nhost=${bound:database:host}\n' },
      provisioning: { ...file('shop'), provisions: [{ provider: 'pg', provision: 'database' }] },
    });
    await m.assign('n1', 'shop');
    await m.waitReport('n1', 'shop', (r) => r.state === 'waiting' && r.waiting.length === 2);
    const run = await status(m, ['n1', 'shop']);
    assert.is(run.code, 1, run.stdout);
    assert.equal(
      tableAt(run.stdout, 'WAITING FOR').map((w) => [w['WAITING FOR'], w['OWNER'], w['WHERE']]),
      [
        ['bound:database:user', 'pg', 'pg_bound n1.shop.database user'],
        ['bound:database:host', 'pg', 'pg_bound n1.shop.database host'],
      ],
      run.stdout,
    );
    // Said once for both values.
    assert.match(run.stdout, /bound:database:user and 1 more: no module pg is planned on n1, so nothing binds it/);
    assert.is(run.stdout.split('nothing binds it').length, 2, run.stdout);
    // pg planned on n1, providing it: only waited for.
    await m.publish('pg', { templates: { 'pg.conf': 'x\n' }, provisioning: { ...file('pg'), provides: [{ provision: 'database' }] } });
    await m.assign('n1', 'pg');
    await waitFor('n1.pg planned', async () => (await m.kv.plans.get('n1.pg'))?.operation === 'PUT');
    const after = await status(m, ['n1', 'shop']);
    assert.is(after.code, 1, after.stdout);
    assert.not.match(after.stdout, /nothing binds it/);
    assert.match(after.stdout, /pg_bound n1\.shop\.database/);
  }));

test('a change while the engine is away: the module waits saying so and status exits 1, not applied with the file before the change', () =>
  withIsolatedMesh({ nodes: ['n1'] }, async (m) => {
    const n1 = await webAppliedOn(m, 'n1');
    assert.is((await status(m, ['n1', 'web'])).code, 0);
    await n1.stopEngine();
    await m.kv.config.put('n1.web.level', 'debug');
    const r = await m.waitReport('n1', 'web', (x) => x.state === 'waiting');
    assert.match(r.reason ?? '', /^engine not reachable \(.+\); waiting for a knock \(the engine starting, or its socket touched\)$/);
    assert.equal(
      r.files.map((f) => f.action),
      ['pending'],
    );
    const run = await status(m, ['n1', 'web']);
    assert.is(run.code, 1, run.stdout);
    assert.match(run.stdout, /n1 web: waiting/);
    assert.match(run.stdout, /engine not reachable/);
    // The fleet's OLDEST WAITING cell says why when no value is waited for.
    const fleetRow = tableAt((await status(m)).stdout, 'NODE').find((row) => row['NODE'] === 'n1');
    assert.match(fleetRow?.['OLDEST WAITING'] ?? '', /^engine not reachable \(.*(…)? \(web, \d+s\)$/, JSON.stringify(fleetRow));
    assert.is(n1.moduleFile('web'), 'level info\n', 'the file is still the one before the change');
    // The engine back: its knock sends the module again.
    await n1.startEngine();
    await m.waitReport('n1', 'web', (x) => x.state === 'applied');
    assert.is(n1.moduleFile('web'), 'level debug\n');
    assert.is((await status(m, ['n1', 'web'])).code, 0);
  }));

test.run();
