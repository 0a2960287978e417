// A module's run (src/client/schedule/modules.ts) and the handoff to the engine (client/handoff/handoff.ts), with fakes for
// the engine, the reporter and the archive: a failure names the function, not a whole mesh.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DependencyIndex } from '../src/client/schedule/dependencies.ts';
import { EngineTimeout, EngineUnavailable } from '../src/client/handoff/engine-errors.ts';
import type { EngineClient } from '../src/client/handoff/fill-socket.ts';
import { Handoff } from '../src/client/handoff/handoff.ts';
import { Modules } from '../src/client/schedule/modules.ts';
import type { ReportBody } from '../src/client/report/reporter.ts';
import { ConfigValues, configDependency } from '../src/client/sources/config.ts';
import { Sources } from '../src/client/sources/index.ts';
import { placementSource } from '../src/client/sources/placement.ts';
import { TemplateCache } from '../src/client/fill/templates.ts';
import type { FillReply, FillRequest } from '../src/shared/contract/fill-protocol.ts';
import { memoryLogger } from '../src/shared/cli/log.ts';
import type { NeedEntry } from '../src/client/fill/fill.ts';

const enc = new TextEncoder();
type Answer = (req: Omit<FillRequest, 'id' | 'op'>) => FillReply | Error;

/** A module `web` on node n1 with fakes around it; `answer` plays the engine. */
function harness(templates: Record<string, string>, answer: Answer = written, reportWrite: () => Promise<void> = async () => {}) {
  const requests: Omit<FillRequest, 'id' | 'op'>[] = [];
  const engine: EngineClient = {
    fill: async (req) => {
      requests.push(req);
      const reply = answer(req);
      if (reply instanceof Error) throw reply;
      return reply;
    },
    onKnock: () => {},
    close: () => {},
  };
  const reports: ReportBody[] = [];
  const needs: NeedEntry[][] = [];
  const removed: string[] = [];
  const items: [string, unknown][] = [];
  const config = new ConfigValues('n1');
  // `held`: every config value's read is in flight (sources/keyed.ts), as at a start or for a key named anew.
  const reads = { held: false };
  const sources = new Sources([
    placementSource(),
    {
      name: 'config',
      lookup: (p, w) =>
        reads.held
          ? { state: 'waiting', unread: Promise.resolve(), dependency: configDependency(p.module, w.name) }
          : { ...config.lookup(p.module, w.name), dependency: configDependency(p.module, w.name) },
    },
  ]);
  const index = new DependencyIndex();
  const modules = new Modules({
    node: 'n1',
    templates: new TemplateCache(async () => ({ ok: true, value: new Map(Object.entries(templates).map(([k, v]) => [k, enc.encode(v)])) })),
    sources,
    index,
    handoff: new Handoff(engine, memoryLogger()),
    items: { record: async (m, list) => void items.push([m, list]), removed: async (m) => void items.push([m, 'removed']) },
    reporter: {
      report: async (_m, body) => {
        await reportWrite();
        reports.push(body);
      },
      needs: async (_m, entries) => void needs.push(entries),
      removed: async (m) => void removed.push(m),
    },
  });
  const setConfig = (key: string, value: string | Uint8Array) => config.set('web', key, typeof value === 'string' ? enc.encode(value) : value);
  // A run and the writes it leaves behind, as the tests look at both.
  const run = async (module: string, full: boolean) => {
    await modules.run(module, full);
    await modules.settled();
  };
  return { modules, run, requests, reports, needs, removed, items, index, setConfig, reads, last: () => reports.at(-1)! };
}

function written(req: Omit<FillRequest, 'id' | 'op'>): FillReply {
  return { id: 1, ok: true, files: req.files.map((f) => ({ path: f.path, action: 'written' as const })) };
}

function plan(files: { path: string; template: string }[], extra: Record<string, unknown> = {}, module = 'web'): Uint8Array {
  return enc.encode(
    JSON.stringify({
      node: 'n1',
      module,
      build: 'b1',
      archive: { ref: 'obj://b/web.tar', digest: 'sha256:' + 'a'.repeat(64) },
      files: files.map((f) => ({ ...f, mode: 'owned', change: 'restart' })),
      placement: { dir: { config: '/etc/web' } },
      secrets: [],
      provisions: [],
      provides: [],
      items: [],
      collections: [],
      ...extra,
    }),
  );
}

test('a plan that does not validate, or names another module, fails with the key and the reason', async () => {
  const h = harness({});
  h.modules.setPlan('web', enc.encode('{"node":"n1"'));
  await h.run('web', false);
  assert.match(h.last().reason!, /^mesh-provisioner_plans n1\.web: not JSON/);
  h.modules.setPlan('web', plan([], {}, 'api'));
  await h.run('web', false);
  assert.is(h.last().reason, 'mesh-provisioner_plans n1.web: field "module" is "api" but the key says "web"');
  assert.equal(h.requests, []);
});

test('a filled module is handed once; a run with nothing changed sends nothing; a full run sends every file', async () => {
  const h = harness({ t: 'dir ${dir:config} v ${config:v}\n' });
  h.setConfig('v', '1');
  h.modules.setPlan(
    'web',
    plan([
      { path: '/etc/web/a.conf', template: 't' },
      { path: '/etc/web/b.conf', template: 't' },
    ]),
  );
  await h.run('web', false);
  assert.is(h.last().state, 'applied');
  assert.equal(
    h.requests.map((r) => r.files.map((f) => f.content)),
    [['dir /etc/web v 1\n', 'dir /etc/web v 1\n']],
  );
  await h.run('web', false);
  assert.is(h.requests.length, 1, 'nothing changed, nothing sent');
  await h.run('web', true);
  assert.is(h.requests.length, 2);
  assert.is(h.requests[1]!.files.length, 2);
  assert.equal([...h.index.modulesNaming([configDependency('web', 'v')])], ['web']);
});

test('a full run held for a value not read yet leaves its fullness to the run the read sets off: the engine gets every file', async () => {
  const h = harness({ t: 'v ${config:v}\n' });
  h.setConfig('v', '1');
  h.modules.setPlan('web', plan([{ path: '/etc/web/a.conf', template: 't' }]));
  await h.run('web', false);
  assert.is(h.requests.length, 1);
  h.reads.held = true;
  await h.run('web', true);
  assert.is(h.requests.length, 1, 'held: nothing handed, nothing reported');
  assert.is(h.reports.length, 1);
  h.reads.held = false;
  // The read's answer schedules the module as any change does: not full.
  await h.run('web', false);
  assert.is(h.requests.length, 2, 'the held full run handed every file, though none changed');
  assert.equal(
    h.requests[1]!.files.map((f) => f.content),
    ['v 1\n'],
  );
});

test("a report says what this fill did: a file the request did not carry is `unchanged`, not an earlier fill's `written`", async () => {
  const h = harness({ a: 'a ${config:a}\n', b: 'b ${config:b}\n' });
  h.setConfig('a', '1');
  h.setConfig('b', '1');
  h.modules.setPlan(
    'web',
    plan([
      { path: '/etc/web/a.conf', template: 'a' },
      { path: '/etc/web/b.conf', template: 'b' },
    ]),
  );
  await h.run('web', false);
  assert.equal(
    h.last().files.map((f) => [f.path, f.action]),
    [
      ['/etc/web/a.conf', 'written'],
      ['/etc/web/b.conf', 'written'],
    ],
  );
  h.setConfig('a', '2');
  await h.run('web', false);
  assert.equal(
    h.requests.at(-1)!.files.map((f) => f.path),
    ['/etc/web/a.conf'],
  );
  assert.equal(
    h.last().files.map((f) => [f.path, f.action]),
    [
      ['/etc/web/a.conf', 'written'],
      ['/etc/web/b.conf', 'unchanged'],
    ],
  );
});

test('a value that waits keeps its file back and the report says which; the index knows it for the refill', async () => {
  const h = harness({ a: 'a', b: '${config:later}' });
  h.modules.setPlan(
    'web',
    plan([
      { path: '/a', template: 'a' },
      { path: '/b', template: 'b' },
    ]),
  );
  await h.run('web', false);
  assert.equal(h.last().waiting, [{ kind: 'config', name: 'later', files: ['/b'] }]);
  assert.is(h.last().state, 'waiting');
  assert.equal(
    h.requests[0]!.files.map((f) => f.path),
    ['/a'],
  );
  assert.equal([...h.index.modulesNaming([configDependency('web', 'later')])], ['web']);
  h.setConfig('later', 'now');
  await h.run('web', false);
  assert.is(h.last().state, 'applied');
  assert.equal(
    h.requests[1]!.files.map((f) => f.path),
    ['/b'],
    'only the file that changed',
  );
});

test('a failed fill still records what the module names, so fixing the value fills it again', async () => {
  const h = harness({ t: '${config:bin}' });
  h.setConfig('bin', new Uint8Array([0xc3, 0x28]));
  h.modules.setPlan('web', plan([{ path: '/t', template: 't' }]));
  await h.run('web', false);
  assert.is(h.last().state, 'failed');
  assert.match(h.last().reason!, /config:bin\}: mesh-config_resolved n1\.web\.bin: value is not UTF-8$/);
  assert.equal([...h.index.modulesNaming([configDependency('web', 'bin')])], ['web']);
  h.setConfig('bin', 'fixed');
  await h.run('web', false);
  assert.is(h.last().state, 'applied');
});

test('the engine refusing, not confirming, or not reachable: waiting with the reason', async () => {
  const refusing = harness({ t: 'x' }, (req) => ({
    id: 1,
    ok: true,
    files: req.files.map((f) => ({ path: f.path, action: 'refused' as const, reason: 'not declared' })),
  }));
  refusing.modules.setPlan('web', plan([{ path: '/t', template: 't' }]));
  await refusing.run('web', false);
  assert.is(refusing.last().reason, 'engine refused /t (not declared); waiting for a knock (the engine starting, or its socket touched)');

  let silent = true;
  const timing = harness({ t: 'x' }, (req) => (silent ? new EngineTimeout('/s', 30_000, req.module) : written(req)));
  timing.modules.setPlan('web', plan([{ path: '/t', template: 't' }]));
  await timing.run('web', false);
  assert.is(timing.last().state, 'waiting');
  assert.match(timing.last().reason!, /did not answer the fill of web within 30000 ms; waiting for a knock \(the engine starting, or its socket touched\)$/);
  assert.equal(
    timing.last().files.map((f) => f.action),
    ['pending'],
  );
  silent = false;
  await timing.run('web', false);
  assert.is(timing.last().state, 'applied', 'what was not confirmed goes again');

  // The engine away: the file is not on disk, so the module is not applied (a report that stayed
  // `applied` showed the file before the change as current).
  let away = true;
  const gone = harness({ t: 'x' }, (req) => (away ? new EngineUnavailable('no socket') : written(req)));
  gone.modules.setPlan('web', plan([{ path: '/t', template: 't' }]));
  await gone.run('web', false);
  assert.is(gone.last().state, 'waiting');
  assert.is(gone.last().reason, 'engine not reachable (no socket); waiting for a knock (the engine starting, or its socket touched)');
  assert.equal(
    gone.last().files.map((f) => f.action),
    ['pending'],
  );
  away = false;
  await gone.run('web', false);
  assert.is(gone.last().state, 'applied', 'the knock sends it again');

  const erring = harness({ t: 'x' }, () => ({ id: 1, ok: false, error: 'disk full' }));
  erring.modules.setPlan('web', plan([{ path: '/t', template: 't' }]));
  await erring.run('web', false);
  assert.equal(erring.last(), { build: 'b1', state: 'failed', files: [], waiting: [], reason: 'engine: disk full' });
});

test('a reply that leaves a file out: the module waits naming it, the confirmed file stands, and the next run sends the file left out', async () => {
  let leaveOut: string | undefined = '/b';
  const h = harness({ t: 'x' }, (req) => ({
    id: 1,
    ok: true,
    files: req.files.filter((f) => f.path !== leaveOut).map((f) => ({ path: f.path, action: 'written' as const })),
  }));
  h.modules.setPlan(
    'web',
    plan([
      { path: '/a', template: 't' },
      { path: '/b', template: 't' },
    ]),
  );
  await h.run('web', false);
  assert.is(h.last().state, 'waiting');
  assert.is(h.last().reason, 'engine did not confirm /b; waiting for a knock (the engine starting, or its socket touched)');
  assert.equal(
    h.last().files.map((f) => [f.path, f.action]),
    [
      ['/a', 'written'],
      ['/b', 'pending'],
    ],
  );
  leaveOut = undefined;
  await h.run('web', false);
  assert.equal(
    h.requests.map((r) => r.files.map((f) => f.path)),
    [['/a', '/b'], ['/b']],
    'only the file left out goes again',
  );
  assert.is(h.last().state, 'applied');
});

test('a deleted plan removes the module: reported removed, forgotten by the index', async () => {
  const h = harness({ t: '${config:v}' });
  h.setConfig('v', '1');
  h.modules.setPlan('web', plan([{ path: '/t', template: 't' }]));
  await h.run('web', false);
  assert.ok(h.modules.setPlan('web', null));
  await h.run('web', false);
  assert.equal(h.removed, ['web']);
  assert.equal(h.modules.names(), []);
  assert.equal([...h.index.modulesNaming([configDependency('web', 'v')])], []);
  assert.not.ok(h.modules.setPlan('web', null), 'an unknown module needs no run');
});

test('a run ends when the engine answered; its report is written after, and only the latest waits behind a slow write', async () => {
  let release!: () => void;
  let gate = new Promise<void>((r) => (release = r));
  const h = harness({ t: 'v=${config:v}' }, written, () => gate);
  h.setConfig('v', '1');
  h.modules.setPlan('web', plan([{ path: '/t', template: 't' }]));
  const ended = await Promise.race([h.modules.run('web', false).then(() => true), new Promise<false>((r) => setTimeout(() => r(false), 2000))]);
  assert.ok(ended, 'the run ended before its report was written');
  assert.is(h.requests.length, 1, 'the engine has the file');
  assert.equal(h.reports, [], 'while the bus has not taken the report');
  for (const v of ['2', '3', '4']) {
    h.setConfig('v', v);
    await h.modules.run('web', false);
  }
  assert.is(h.requests.length, 4, 'each change reached the engine without waiting for a report');
  const settled = h.modules.settled();
  release();
  gate = Promise.resolve();
  await settled;
  assert.equal(
    h.reports.map((r) => r.files[0]!.digest),
    [h.requests[0]!.files[0]!.digest, h.requests[3]!.files[0]!.digest],
    'the first report, then only the last',
  );

  // A removal is never folded away: the module's last fill, its removal and a new plan's fill all land, in order.
  let hold!: () => void;
  gate = new Promise<void>((r) => (hold = r));
  await h.modules.run('web', true);
  h.modules.setPlan('web', null);
  await h.modules.run('web', false);
  h.modules.setPlan('web', plan([{ path: '/t', template: 't' }]));
  await h.modules.run('web', false);
  hold();
  await h.modules.settled();
  assert.equal(h.removed, ['web']);
  assert.is(h.reports.at(-1)!.state, 'applied');
});

test.run();
