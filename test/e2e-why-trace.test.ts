// Issue 33 items 2 and 3, the operator's side (DESIGN §14): `why`, `trace`, `config set`'s revision,
// status's DRIFT and `query drift`, each run as the seat's bundle on the bus `bus-config` generates,
// with the login the README gives it (admin for why and trace, the seat's for status and query). The
// reports are written as a node's client writes them, `from` and `drift` included.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { USERS } from '../src/server/commands/bus-config/users.ts';
import type { Report, ReportFile } from '../src/shared/contract/report.ts';
import { withIsolatedMesh, type IsolatedMesh } from './helpers/isolated-mesh.ts';
import type { ModuleSpec } from './helpers/archive.ts';
import { waitFor } from './helpers/wait.ts';

const NODES = ['n1', 'n2', 'n3'];
const WEB: ModuleSpec = {
  templates: { 'web.conf': 'port=${port:http}\ncolor=${config:color}\nkey=${secret:api-key}\n' },
  provisioning: { files: [{ path: '${dir:config}/web.conf', template: 'web.conf', mode: 'owned', change: 'restart' }], secrets: [{ name: 'api-key' }] },
};

const run = (m: IsolatedMesh, user: string, args: string[]) => m.serverCommand(user, args);
const asAdmin = (m: IsolatedMesh, args: string[]) => run(m, USERS.admin, args);
const asSeat = (m: IsolatedMesh, args: string[]) => run(m, USERS.seat, args);

/** `config set` as admin; the revision its one line says. */
async function setColor(m: IsolatedMesh, node: string, color: string): Promise<number> {
  const set = await asAdmin(m, ['config', 'set', node, 'web', 'color', color]);
  assert.is(set.code, 0, set.stderr);
  const said = new RegExp(`^set ${node} web color: mesh-config_resolved:${node}\\.web\\.color rev (\\d+), ${color.length} bytes\\n$`).exec(set.stdout);
  assert.ok(said, set.stdout);
  return Number(said![1]);
}

/** The plan of web on `node`, once the seat has written it: its revision and its archive's digest. */
async function planOf(m: IsolatedMesh, node: string): Promise<{ rev: number; ref: string; digest: string; path: string }> {
  const e = await waitFor(`plan ${node}.web`, async () => ((e) => (e?.operation === 'PUT' ? e : undefined))(await m.kv.plans.get(`${node}.web`)));
  const plan = e.json() as { archive: { ref: string; digest: string }; files: { path: string }[] };
  return { rev: e.revision, ...plan.archive, path: plan.files[0]!.path };
}

/** A report of web on `node` as the client writes it: its one file's `from` and, when given, `drift`. */
async function putReport(
  m: IsolatedMesh,
  node: string,
  colorRev: number,
  extra: { state?: Report['state']; reason?: string; drift?: ReportFile['drift'] } = {},
) {
  const plan = await planOf(m, node);
  const file: ReportFile = {
    path: plan.path,
    action: 'written',
    digest: 'sha256:' + '0'.repeat(64),
    from: [
      { kind: 'archive', key: plan.ref, digest: plan.digest },
      { kind: 'port', key: `${node}.web`, rev: plan.rev },
      { kind: 'config', key: `${node}.web.color`, rev: colorRev },
      { kind: 'secret', key: 'module/web/api-key' },
    ],
    ...(extra.drift ? { drift: extra.drift } : {}),
  };
  const report: Report = {
    node,
    module: 'web',
    build: '1',
    state: extra.state ?? 'applied',
    files: [file],
    waiting: [],
    at: new Date().toISOString(),
    ...(extra.reason ? { reason: extra.reason } : {}),
  };
  await m.kv.applied.put(`${node}.web`, JSON.stringify(report));
}

test('config set says the revision it wrote; trace counts the nodes holding the newest revision and names the one behind; why judges each input; exit codes say which', () =>
  withIsolatedMesh({ nodes: NODES }, async (m) => {
    await m.publish('web', WEB);
    for (const n of NODES) await m.assign(n, 'web');
    const revs = new Map<string, number>();
    for (const n of NODES) revs.set(n, await setColor(m, n, 'blue'));
    const n2New = await setColor(m, 'n2', 'green');
    await putReport(m, 'n1', revs.get('n1')!);
    await putReport(m, 'n2', revs.get('n2')!, { state: 'waiting', reason: 'engine not reachable (connect ENOENT)' });
    await putReport(m, 'n3', revs.get('n3')!);

    const traced = await asAdmin(m, ['trace', 'mesh-config_resolved:*.web.color']);
    assert.is(traced.code, 1, traced.stderr + traced.stdout);
    assert.match(traced.stdout, /^mesh-config_resolved:\*\.web\.color: 3 keys matched, newest rev \d+/m);
    assert.match(traced.stdout, /^newest revision in place on 2 of 3 nodes whose files use them$/m);
    const behind = traced.stdout.split('\n').filter((l) => /^n\d: /.test(l));
    assert.equal(behind, [
      `n2: rev ${revs.get('n2')} of ${n2New} (n2.web.color in ${(await planOf(m, 'n2')).path} of web), waiting: engine not reachable (connect ENOENT)`,
    ]);
    const json = JSON.parse((await asAdmin(m, ['trace', 'mesh-config_resolved:*.web.color', '--json'])).stdout);
    assert.equal([json.keys, json.nodes, json.current, json.behind.map((b: { node: string }) => b.node)], [3, 3, 2, ['n2']]);
    // One key: n1's alone, current on its one node.
    const one = await asAdmin(m, ['trace', 'mesh-config_resolved:n1.web.color']);
    assert.is(one.code, 0, one.stderr + one.stdout);
    assert.match(one.stdout, /newest revision in place on 1 of 1 node whose files use them/);

    const n1 = await asAdmin(m, ['why', 'n1', 'web']);
    assert.is(n1.code, 0, n1.stderr + n1.stdout);
    assert.match(n1.stdout, /^n1 web: report applied, build 1, at \S+ — 3 current, 1 not judged$/m);
    assert.match(
      n1.stdout,
      new RegExp(`config\\s+mesh-config_resolved:n1\\.web\\.color\\s+rev ${revs.get('n1')}\\s+rev ${revs.get('n1')}\\s+\\S+Z\\s+current`),
    );
    assert.match(n1.stdout, /secret\s+module\/web\/api-key\s+not judged: a vault name/);
    assert.not.match(n1.stdout, /blue|green/, 'never a value');
    const n2 = await asAdmin(m, ['why', 'n2', 'web', '--json']);
    assert.is(n2.code, 1, n2.stderr);
    const inputs = JSON.parse(n2.stdout).inputs as { kind: string; verdict: string; rev?: number; newest?: { rev: number }; note?: string }[];
    assert.equal(
      inputs.map((i) => [i.kind, i.verdict]),
      [
        ['archive', 'current'],
        ['port', 'current'],
        ['config', 'behind'],
        ['secret', 'not judged'],
      ],
    );
    assert.equal(inputs[2], { ...inputs[2], rev: revs.get('n2'), newest: { ...inputs[2]!.newest!, rev: n2New }, note: `rev ${revs.get('n2')} of ${n2New}` });

    // A key deleted since: gone in why, behind in trace.
    assert.is((await asAdmin(m, ['config', 'rm', 'n3', 'web', 'color'])).code, 0);
    const gone = await asAdmin(m, ['why', 'n3', 'web']);
    assert.is(gone.code, 1, gone.stdout);
    assert.match(gone.stdout, /config\s+mesh-config_resolved:n3\.web\.color\s+rev \d+\s+rev \d+\s+\S+\s+gone: the key was deleted/);
    assert.match((await asAdmin(m, ['trace', 'mesh-config_resolved:*.web.color'])).stdout, /^n3: rev \d+, the key deleted at rev \d+ /m);
  }));

test('why and trace refuse what they cannot read or match, naming it: no report, a file not in it, no key matched, the seat’s login; usage errors exit 2', () =>
  withIsolatedMesh({ nodes: ['n1'] }, async (m) => {
    await m.publish('web', WEB);
    await m.assign('n1', 'web');
    const rev = await setColor(m, 'n1', 'blue');
    const none = await asAdmin(m, ['why', 'n1', 'web']);
    assert.equal([none.code, none.stderr.trim()], [1, 'mesh-provisioner: why: n1 has no report of web: nothing to say where its files came from']);
    await putReport(m, 'n1', rev);
    const path = await asAdmin(m, ['why', 'n1', 'web', '/etc/nope.conf']);
    assert.equal([path.code, path.stderr.trim()], [1, 'mesh-provisioner: why: the report of web on n1 names no file /etc/nope.conf']);
    const nothing = await asAdmin(m, ['trace', 'mesh-config_resolved:*.api.color']);
    assert.equal([nothing.code, nothing.stderr.trim()], [1, 'mesh-provisioner: trace: no key of mesh-config_resolved matches *.api.color']);
    const seat = await asSeat(m, ['why', 'n1', 'web']);
    assert.is(seat.code, 1, seat.stdout);
    assert.match(
      seat.stderr,
      /^mesh-provisioner: why: this login may not ask mesh-provisioner\.provisioning; .* they need admin's login \(admin\.nk, as --nkey\); the bus said: /,
    );
    const seatTrace = await asSeat(m, ['trace', 'mesh-config_resolved:*.web.color']);
    assert.is(seatTrace.code, 1, seatTrace.stdout);
    assert.match(seatTrace.stderr, /^mesh-provisioner: trace: .*they need admin's login \(admin\.nk, as --nkey\)/);

    for (const [args, said] of [
      [['why', 'n1'], /why needs a NODE and a MODULE/],
      [['why', 'N1', 'web'], /why: NODE "N1" is not a valid name/],
      [['why', 'n1', 'web', 'rel/path'], /why: PATH "rel\/path" is not absolute/],
      [['trace'], /trace needs a KEY-PATTERN/],
      [['trace', '*.web.color'], /trace: KEY-PATTERN "\*\.web\.color" has no bucket/],
      [['trace', 'mesh-config_resolved:n*.web'], /"n\*" in the key pattern: \* stands for one whole token/],
      [['trace', 'mesh-config_resolved:a..b'], /empty token/],
    ] as const) {
      const r = await asAdmin(m, [...args]);
      assert.is(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, said);
      assert.is(r.stderr.trim().split('\n').length, 1, r.stderr);
    }
    for (const command of ['why', 'trace']) {
      const help = await asAdmin(m, [command, '--help']);
      assert.is(help.code, 0);
      assert.match(help.stdout, new RegExp(`^usage: node server\\.js ${command} `));
    }
  }));

test('status shows each node’s DRIFT and each module’s in its detail; query drift lists every drifted file newest first', () =>
  withIsolatedMesh({ nodes: NODES }, async (m) => {
    await m.publish('web', WEB);
    for (const n of NODES) await m.assign(n, 'web');
    const rev = await setColor(m, 'n1', 'blue');
    await putReport(m, 'n1', rev, { drift: { count: 3, last: '2026-12-06T10:00:03.000Z' } });
    await putReport(m, 'n2', rev, { drift: { count: 1, last: '2026-12-06T10:05:00.000Z' } });
    await putReport(m, 'n3', rev);

    const fleet = await asSeat(m, ['status']);
    const head = fleet.stdout.split('\n')[0]!;
    const drift = head.indexOf('DRIFT');
    assert.ok(drift > 0, fleet.stdout);
    const cells = Object.fromEntries(
      fleet.stdout
        .split('\n')
        .filter((l) => /^n\d /.test(l))
        .map((l) => [l.split(' ')[0], l.slice(drift).split(/\s+/)[0]]),
    );
    assert.equal(cells, { n1: '3', n2: '1', n3: '0' }, fleet.stdout);
    const json = JSON.parse((await asSeat(m, ['status', '--json'])).stdout) as { nodes: { node: string; drift: number }[] };
    assert.equal(
      json.nodes.map((n) => [n.node, n.drift]),
      [
        ['n1', 3],
        ['n2', 1],
        ['n3', 0],
      ],
    );
    const detail = await asSeat(m, ['status', 'n1']);
    assert.match(detail.stdout, /^n1 web: applied, build 1, reported \S+ ago \(\S+\); drift 3, last 2026-12-06T10:00:03.000Z$/m);
    assert.match(detail.stdout, /^\s+FILE\s+ACTION\s+DIGEST\s+DRIFT$/m);

    const listed = await asSeat(m, ['query', 'drift']);
    assert.is(listed.code, 0, listed.stderr);
    const rows = listed.stdout.trim().split('\n');
    assert.match(rows[0]!, /^NODE\s+MODULE\s+PATH\s+COUNT\s+LAST$/);
    assert.equal(
      rows.slice(1).map((r) => [r.split(/\s+/)[0], r.split(/\s+/)[3], r.split(/\s+/)[4]]),
      [
        ['n2', '1', '2026-12-06T10:05:00.000Z'],
        ['n1', '3', '2026-12-06T10:00:03.000Z'],
      ],
    );
    const asJson = JSON.parse((await asSeat(m, ['query', 'drift', '--json'])).stdout) as { entries: { node: string; count: number }[] };
    assert.equal(
      asJson.entries.map((e) => [e.node, e.count]),
      [
        ['n2', 1],
        ['n1', 3],
      ],
    );
  }));

test('with the real clients: a config change traced to every node, the node whose engine is away named behind with its reason until it is back; why agrees', () =>
  withIsolatedMesh({ nodes: ['n1', 'n2'] }, async (m) => {
    for (const n of ['n1', 'n2']) {
      await m.node(n).startEngine();
      await m.node(n).startClient();
    }
    const color = (n: string, rev: number) => (r: Report) =>
      r.state === 'applied' && r.files.some((f) => f.from?.some((i) => 'kind' in i && i.kind === 'config' && i.key === `${n}.web.color` && i.rev === rev));
    const first = new Map<string, number>();
    for (const n of ['n1', 'n2']) first.set(n, await setColor(m, n, 'blue'));
    await m.publish('web', {
      ...WEB,
      templates: { 'web.conf': 'port=${port:http}\ncolor=${config:color}\n' },
      provisioning: { files: WEB.provisioning.files },
    });
    for (const n of ['n1', 'n2']) await m.assign(n, 'web');
    for (const n of ['n1', 'n2']) await m.waitReport(n, 'web', color(n, first.get(n)!));
    const all = await asAdmin(m, ['trace', 'mesh-config_resolved:*.web.color']);
    assert.is(all.code, 0, all.stderr + all.stdout);
    assert.match(all.stdout, /^newest revision in place on 2 of 2 nodes whose files use them$/m);
    assert.is((await asAdmin(m, ['why', 'n1', 'web'])).code, 0);

    // n2's engine away: its file keeps what is on disk, and its report says why.
    await m.node('n2').stopEngine();
    const n1Rev = await setColor(m, 'n1', 'green');
    const n2Rev = await setColor(m, 'n2', 'green');
    await m.waitReport('n1', 'web', color('n1', n1Rev));
    await m.waitReport('n2', 'web', (r) => r.state === 'waiting');
    const traced = await asAdmin(m, ['trace', 'mesh-config_resolved:*.web.color']);
    assert.is(traced.code, 1, traced.stderr + traced.stdout);
    assert.match(traced.stdout, /^newest revision in place on 1 of 2 nodes whose files use them$/m);
    assert.match(traced.stdout, new RegExp(`^n2: rev ${first.get('n2')} of ${n2Rev} \\(n2\\.web\\.color in \\S+ of web\\), waiting: `, 'm'));
    const why = await asAdmin(m, ['why', 'n2', 'web']);
    assert.is(why.code, 1, why.stdout);
    assert.match(
      why.stdout,
      new RegExp(
        `config\\s+mesh-config_resolved:n2\\.web\\.color\\s+rev ${first.get('n2')}\\s+rev ${n2Rev}\\s+\\S+\\s+behind: rev ${first.get('n2')} of ${n2Rev}`,
      ),
    );

    await m.node('n2').startEngine();
    await m.waitReport('n2', 'web', color('n2', n2Rev));
    const back = await asAdmin(m, ['trace', 'mesh-config_resolved:*.web.color']);
    assert.is(back.code, 0, back.stdout);
    assert.match(back.stdout, /^newest revision in place on 2 of 2 nodes whose files use them$/m);

    // A hand edit of n1's file: the engine puts it back, the client counts it, status and query drift show it.
    writeFileSync(join(m.node('n1').root, 'etc', 'web', 'web.conf'), 'edited by hand\n');
    const restored = await m.waitReport('n1', 'web', (r) => r.files.some((f) => f.drift?.count === 1));
    const fleet = JSON.parse((await asSeat(m, ['status', '--json'])).stdout) as { nodes: { node: string; drift: number }[] };
    assert.equal(
      fleet.nodes.map((n) => [n.node, n.drift]),
      [
        ['n1', 1],
        ['n2', 0],
      ],
    );
    const drifted = await asSeat(m, ['query', 'drift']);
    assert.is(drifted.code, 0, drifted.stderr);
    assert.equal(
      drifted.stdout
        .trim()
        .split('\n')
        .slice(1)
        .map((l) => l.split(/\s+/).slice(0, 2).concat(l.split(/\s+/).slice(3))),
      [['n1', 'web', '1', restored.files[0]!.drift!.last]],
    );
  }));

test.run();
