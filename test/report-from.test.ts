// A report file's `from` and `drift` (DESIGN §14), below the bus: the cut at 64 inputs, the order
// and once-each rule of fill/from.ts, the fill handing each file its inputs, the handoff keeping the
// `from` of the content the engine last confirmed, and the restores it counts.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { buildFrom, cutFrom } from '../src/client/fill/from.ts';
import { fillModule, FillMemo, prepareTemplates } from '../src/client/fill/fill.ts';
import { EngineTimeout } from '../src/client/handoff/engine-errors.ts';
import type { EngineClient } from '../src/client/handoff/fill-socket.ts';
import { Handoff } from '../src/client/handoff/handoff.ts';
import { fitReport } from '../src/client/report/fit.ts';
import { ConfigValues, configDependency } from '../src/client/sources/config.ts';
import { assemble, NodeItems } from '../src/client/sources/collected.ts';
import { notePlanEntry, placementSource } from '../src/client/sources/placement.ts';
import { Sources } from '../src/client/sources/index.ts';
import type { FillResult, FillRequest } from '../src/shared/contract/fill-protocol.ts';
import { PlanSchema, type Plan } from '../src/shared/contract/plan.ts';
import { MAX_FROM_INPUTS, type FromInput, type Report } from '../src/shared/contract/report.ts';
import { memoryLogger } from '../src/shared/cli/log.ts';
import * as v from 'valibot';

const enc = new TextEncoder();
const ARCHIVE = { ref: 'obj://mesh-catalog_archives/web-1.tar.gz', digest: 'sha256:' + 'a'.repeat(64) };
const configInput = (key: string, rev: number): FromInput => ({ kind: 'config', key, rev });

function webPlan(files: { path: string; template: string }[], extra: Partial<Plan> = {}): Plan {
  return v.parse(PlanSchema, {
    node: 'n1',
    module: 'web',
    build: '1',
    archive: ARCHIVE,
    files: files.map((f) => ({ ...f, mode: 'owned', change: 'restart' })),
    placement: { dir: { config: '/etc/web' }, port: { http: 8080 } },
    secrets: [],
    provisions: [],
    provides: [],
    items: [],
    collections: [],
    ...extra,
  });
}

function templatesOf(files: Record<string, string>) {
  const prepared = prepareTemplates(new Map(Object.entries(files).map(([k, t]) => [k, enc.encode(t)])));
  if (!prepared.ok) throw new Error(prepared.reason);
  return prepared.value;
}

/** The node's config and placement sources, as the client wires them, with config values set as the watch sets them. */
function world() {
  const config = new ConfigValues('n1');
  const sources = new Sources([
    placementSource(),
    { name: 'config', lookup: (p, w) => ({ ...config.lookup(p.module, w.name), dependency: configDependency(p.module, w.name) }) },
  ]);
  const set = (key: string, value: string, rev: number) => config.set('web', key, enc.encode(value), { key: `n1.web.${key}`, revision: rev });
  return { sources, set };
}

test(`cutFrom keeps ${MAX_FROM_INPUTS} inputs as they are and lists the rest as {more: N}`, () => {
  const inputs = (n: number) => Array.from({ length: n }, (_, i) => configInput(`n1.web.k${i}`, i + 1));
  assert.equal(cutFrom(inputs(MAX_FROM_INPUTS)), inputs(MAX_FROM_INPUTS));
  assert.equal(cutFrom(inputs(MAX_FROM_INPUTS + 1)), [...inputs(MAX_FROM_INPUTS), { more: 1 }]);
  const cut = cutFrom(inputs(501));
  assert.is(cut.length, MAX_FROM_INPUTS + 1);
  assert.equal(cut.at(-1), { more: 501 - MAX_FROM_INPUTS });
  assert.equal(cutFrom([]), []);
});

test('buildFrom puts the archive first, then each input once per kind and key, in the order read', () => {
  const archive: FromInput = { kind: 'archive', ...ARCHIVE, key: ARCHIVE.ref };
  const a = [configInput('n1.web.a', 3)];
  const b = [configInput('n1.web.b', 4)];
  const dir = [{ kind: 'dir', key: 'n1.web', rev: 9 }];
  const port = [{ kind: 'port', key: 'n1.web', rev: 9 }];
  assert.equal(buildFrom(archive, [b, a, b, dir, port, dir]), [archive, b[0], a[0], dir[0], port[0]]);
  // The archive counts among the 64: 64 other inputs leave room for 63 of them.
  const many = Array.from({ length: MAX_FROM_INPUTS }, (_, i) => [configInput(`n1.web.k${i}`, i + 1)]);
  const from = buildFrom(archive, many);
  assert.is(from[0], archive);
  assert.equal(from.at(-1), { more: 1 });
});

test("a filled file's from names the archive, each config key with its entry's revision and the plan's entry for placement", () => {
  const { sources, set } = world();
  set('host', 'db1', 41);
  set('port', '5432', 7);
  const plan = webPlan([{ path: '/etc/web/web.conf', template: 'web.conf' }]);
  notePlanEntry(plan, { key: 'n1.web', revision: 12 });
  const templates = templatesOf({ 'web.conf': '${config:host}:${config:port} ${config:host} ${dir:config} ${port:http}\n' });
  const filled = fillModule(plan, templates, sources);
  assert.ok(filled.ok);
  assert.equal(filled.value.from.get('/etc/web/web.conf'), [
    { kind: 'archive', key: ARCHIVE.ref, digest: ARCHIVE.digest },
    configInput('n1.web.host', 41),
    configInput('n1.web.port', 7),
    { kind: 'dir', key: 'n1.web', rev: 12 },
    { kind: 'port', key: 'n1.web', rev: 12 },
  ]);
});

test('the fill memo hands the same from while no input changed, and a new one when an entry is written again, even with the same value', () => {
  const { sources, set } = world();
  set('host', 'db1', 41);
  const plan = webPlan([{ path: '/etc/web/web.conf', template: 'web.conf' }]);
  const templates = templatesOf({ 'web.conf': 'host=${config:host}\n' });
  const memo = new FillMemo();
  const first = fillModule(plan, templates, sources, memo);
  const again = fillModule(plan, templates, sources, memo);
  assert.ok(first.ok && again.ok);
  assert.is(again.value.from.get('/etc/web/web.conf'), first.value.from.get('/etc/web/web.conf'), 'nothing built anew');
  assert.is(again.value.files[0], first.value.files[0], 'the content is the memo’s');
  set('host', 'db1', 42);
  const rewritten = fillModule(plan, templates, sources, memo);
  assert.ok(rewritten.ok);
  assert.is(rewritten.value.files[0], first.value.files[0], 'the same bytes: not rendered again');
  assert.equal(rewritten.value.from.get('/etc/web/web.conf')?.[1], configInput('n1.web.host', 42));
});

test("a collector's from lists each contributor's collect key with its revision, in the order filled, the same array until one changes", () => {
  const items = new NodeItems('n1');
  const put = (contributor: string, rev: number) =>
    items.set(`n1.shell=3Azsh.${contributor}`, enc.encode(JSON.stringify({ node: 'n1', collection: 'shell:zsh', contributor, content: 'x' })), rev);
  put('zed', 5);
  put('api', 6);
  const plan = webPlan([], { collections: [{ name: 'shell:zsh', comment: '#' }] });
  const got = assemble(plan, items, { kind: 'collected', name: 'shell:zsh' });
  assert.ok(got.state === 'value');
  assert.equal(got.from, [
    { kind: 'collected', key: 'n1.shell=3Azsh.api', rev: 6 },
    { kind: 'collected', key: 'n1.shell=3Azsh.zed', rev: 5 },
  ]);
  const again = assemble(plan, items, { kind: 'collected', name: 'shell:zsh' });
  assert.is(again.state === 'value' && again.from, got.from);
  put('api', 7);
  const after = assemble(plan, items, { kind: 'collected', name: 'shell:zsh' });
  assert.equal(after.state === 'value' && after.from?.[0], { kind: 'collected', key: 'n1.shell=3Azsh.api', rev: 7 });
});

/** A handoff to a fake engine that answers each file with `action()` (or throws what it returns). */
function handoffWith(action: () => FillResult['action'] | Error, at: () => Date) {
  const engine: EngineClient = {
    fill: async (req: Omit<FillRequest, 'id' | 'op'>) => {
      const a = action();
      if (a instanceof Error) throw a;
      return { id: 1, ok: true, files: req.files.map((f) => ({ path: f.path, action: a })) };
    },
    onKnock: () => {},
    close: () => {},
  };
  return new Handoff(engine, memoryLogger(), at);
}

test('a file keeps the from of the content the engine last confirmed: a fill it has not confirmed leaves the old one', async () => {
  const { sources, set } = world();
  let answer: () => 'written' | 'restored' | Error = () => 'written';
  const handoff = handoffWith(
    () => answer(),
    () => new Date('2026-12-06T10:00:00.000Z'),
  );
  const plan = webPlan([{ path: '/etc/web/web.conf', template: 'web.conf' }]);
  const templates = templatesOf({ 'web.conf': 'host=${config:host}\n' });
  const memo = new FillMemo();
  const round = async (full = false) => {
    const filled = fillModule(plan, templates, sources, memo);
    assert.ok(filled.ok);
    await handoff.send(plan, filled.value.files, full, filled.value.marks, filled.value.from);
    return handoff.results('web', filled.value.files)[0]!;
  };
  set('host', 'db1', 41);
  assert.equal((await round()).from?.[1], configInput('n1.web.host', 41));
  answer = () => new EngineTimeout('/run/fill.sock', 30_000, 'web');
  set('host', 'db2', 43);
  const pending = await round();
  assert.is(pending.action, 'pending');
  assert.equal(pending.from?.[1], configInput('n1.web.host', 41), 'what is on disk came from rev 41');
  answer = () => 'written';
  assert.equal((await round(true)).from?.[1], configInput('n1.web.host', 43));
  // The same value written again: nothing sent, the content on disk is rev 44's too.
  set('host', 'db2', 44);
  const same = await round();
  assert.is(same.action, 'written', 'nothing was sent: the action is the last answer’s');
  assert.equal(same.from?.[1], configInput('n1.web.host', 44));
});

test('each restored answer counts one drift, with the time of the last; other answers keep the count', async () => {
  const { sources, set } = world();
  let now = Date.parse('2026-12-06T10:00:00.000Z');
  let answer: 'written' | 'restored' = 'written';
  const handoff = handoffWith(
    () => answer,
    () => new Date(now),
  );
  const plan = webPlan([{ path: '/etc/web/web.conf', template: 'web.conf' }]);
  const templates = templatesOf({ 'web.conf': 'host=${config:host}\n' });
  set('host', 'db1', 41);
  const knock = async () => {
    const filled = fillModule(plan, templates, sources);
    assert.ok(filled.ok);
    await handoff.send(plan, filled.value.files, true, filled.value.marks, filled.value.from);
    return handoff.results('web', filled.value.files)[0]!;
  };
  assert.is((await knock()).drift, undefined, 'a file never restored has no drift');
  answer = 'restored';
  for (let count = 1; count <= 3; count++) {
    now += 1000;
    assert.equal((await knock()).drift, { count, last: new Date(now).toISOString() });
  }
  answer = 'written';
  now += 1000;
  assert.equal((await knock()).drift, { count: 3, last: '2026-12-06T10:00:03.000Z' });
});

test("fitReport drops trailing files' from before it drops a file, and says so", () => {
  const from = Array.from({ length: MAX_FROM_INPUTS }, (_, i) => configInput(`n1.web.${'k'.repeat(40)}${i}`, i));
  const files = Array.from({ length: 4 }, (_, i) => ({ path: `/etc/web/${i}.conf`, action: 'written', digest: 'sha256:0', from }));
  const report: Report = { node: 'n1', module: 'web', build: '1', state: 'applied', files, waiting: [], at: '2026-12-06T10:00:00.000Z' };
  const size = Buffer.byteLength(JSON.stringify(report));
  const fitted = fitReport(report, size - 1000);
  assert.ok(Buffer.byteLength(JSON.stringify(fitted)) <= size - 1000);
  assert.is(fitted.files.length, 4, 'every file still listed');
  assert.ok(fitted.files[0]!.from, 'the first file keeps its inputs');
  assert.is(fitted.files[3]!.from, undefined);
  assert.match(fitted.reason!, /the inputs \(from\) of \d file\(s\) left out/);
});

test.run();
