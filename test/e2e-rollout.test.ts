// Issue 21 end to end (DESIGN §12): a build whose template has a typo, rolled out in waves 0.1/1 to
// 20 nodes — each its own client and reference engine in this process, writing real files, logged
// in with its own nkey on the generated bus; the seat its bundle — stops at the first wave's 2 nodes
// by their own `failed` reports, and puts those two back on the good build, byte for byte.
import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openKv } from '../src/shared/bus/bus.ts';
import { APPLIED, DEFAULT_ARCHIVES, PLANS, ROLLOUTS } from '../src/shared/contract/buckets.ts';
import { watchKv } from '../src/shared/bus/watch/watch.ts';
import { USERS } from '../src/server/commands/bus-config/users.ts';
import type { Report } from '../src/shared/contract/report.ts';
import type { RolloutState } from '../src/shared/contract/rollout-state.ts';
import { archiveDigest, packTemplates, putArchive } from './helpers/archive.ts';
import { withIsolatedMesh, type IsolatedMesh } from './helpers/isolated-mesh.ts';
import { inWaveOrder } from './helpers/rollout-fleet.ts';
import { waitFor } from './helpers/wait.ts';

const MODULE = 'web';
const NODES = Array.from({ length: 20 }, (_, i) => `node${i + 1}`);
const ROLLOUT = { waves: [0.1, 1], halt: 1, wait: 30 };
/** Each build's one template: build 2 misspells `config`, which no client can fill. */
const TEMPLATES: Record<string, string> = {
  '1': 'listen ${port:http}\nbuild 1\ngreeting ${config:greeting}\n',
  '2': 'listen ${confg:port}\nbuild 2\ngreeting ${config:greeting}\n',
  '3': 'listen ${port:http}\nbuild 3\ngreeting ${config:greeting}\n',
};
/** What a good build writes on every node (placementUnder gives port http 8080), with the config value `greeting`. */
const goodFile = (build: string, greeting = 'hello') => `listen 8080\nbuild ${build}\ngreeting ${greeting}\n`;

/**
 * Publishes a build with the rollout in its composition, as a fleet's catalogue would: straight
 * into the buckets, since `server.js publish` refuses build 2's lint error before it gets there.
 */
async function publish(m: IsolatedMesh, build: string): Promise<void> {
  const tar = await packTemplates({ 'web.conf': TEMPLATES[build]! });
  const ref = await putArchive({ store: m.kv.archives, bucket: DEFAULT_ARCHIVES }, `${MODULE}-${build}.tar`, tar);
  const provisioning = { files: [{ path: '${dir:config}/web.conf', template: 'web.conf', mode: 'owned', change: 'restart' }] };
  const composition = { module: MODULE, build, published: true, archive: { ref, digest: archiveDigest(tar) }, provisioning, rollout: ROLLOUT };
  await m.kv.modules.put(MODULE, JSON.stringify(composition));
}

/** Where a node's engine writes the module's file. */
const fileOf = (m: IsolatedMesh, node: string) => join(m.node(node).root, 'etc', MODULE, 'web.conf');

/** A file's sha256 and mtime: what tells that nothing rewrote it. */
function fingerprint(path: string): { sha256: string; mtimeMs: number } {
  return { sha256: createHash('sha256').update(readFileSync(path)).digest('hex'), mtimeMs: statSync(path).mtimeMs };
}

/** Waits until every node in `nodes` reports `build` applied and its file on disk is that build's. */
async function waitApplied(m: IsolatedMesh, nodes: string[], build: string, greeting = 'hello'): Promise<void> {
  for (const n of nodes) {
    await m.waitReport(n, MODULE, (r) => r.build === build && r.state === 'applied', 20_000);
    await waitFor(`${n}'s file of build ${build}`, () => m.node(n).moduleFile(MODULE) === goodFile(build, greeting));
  }
}

/** The rollout's stored state, and a wait for one `pred` accepts (the error adds what the seat said). */
async function rolloutState(m: IsolatedMesh) {
  const rollouts = await openKv(m.admin, ROLLOUTS);
  const get = async () => {
    const e = await rollouts.get(MODULE);
    return e && e.operation === 'PUT' ? (e.json() as RolloutState) : undefined;
  };
  const wait = (what: string, pred: (s: RolloutState) => boolean, ms = 20_000) =>
    waitFor(what, async () => ((s) => (s && pred(s) ? s : undefined))(await get()), ms).catch((err: Error) => {
      throw new Error(`${err.message}; seat: ${m.seatSaid().slice(-3000)}`);
    });
  return { get, wait };
}

/** What the bus saw from now on: every plan write of the module in order, and every report of `build`. */
async function watchFleet(m: IsolatedMesh, build: string) {
  const writes: { node: string; build: string | null }[] = [];
  const plans = await watchKv(m.admin, PLANS, `*.${MODULE}`, (e) => {
    const plan = e.value ? (JSON.parse(Buffer.from(e.value).toString()) as { build: string }) : undefined;
    writes.push({ node: e.key.split('.')[0]!, build: plan?.build ?? null });
  });
  const reports: Report[] = [];
  const applied = await watchKv(m.admin, APPLIED, `*.${MODULE}`, (e) => {
    const report = e.value ? (JSON.parse(Buffer.from(e.value).toString()) as Report) : undefined;
    if (report?.build === build) reports.push(report);
  });
  await Promise.all([plans.caughtUp, applied.caughtUp]);
  // What was stored before is history: only what comes next is looked at.
  writes.length = 0;
  reports.length = 0;
  const buildsOf = (node: string) => writes.filter((w) => w.node === node).map((w) => w.build);
  const stop = () => {
    plans.stop();
    applied.stop();
  };
  return { writes, reports, buildsOf, stop };
}

/** Build 1, the module's first, reaches all 20 at once (no rollout); the files' fingerprints. */
async function settleBuildOne(m: IsolatedMesh) {
  for (const n of NODES) await m.kv.config.put(`${n}.${MODULE}.greeting`, 'hello');
  await publish(m, '1');
  for (const n of NODES) {
    await m.node(n).startEngine();
    await m.assign(n, MODULE);
  }
  await Promise.all(NODES.map((n) => m.node(n).startClient()));
  await waitApplied(m, NODES, '1');
  return new Map(NODES.map((n) => [n, fingerprint(fileOf(m, n))]));
}

test('a build with ${confg:port} rolled out to 20 nodes in waves 0.1/1 stops at 2, and those 2 files are the good build’s again', () =>
  withIsolatedMesh({ nodes: NODES, seat: 'process' }, async (m) => {
    const state = await rolloutState(m);
    const before = await settleBuildOne(m);
    assert.is(await state.get(), undefined, 'a first build is not rolled out');
    const seen = await watchFleet(m, '2');
    try {
      // Build 2, the typo: the first wave is ⌈0.1·20⌉ = 2 nodes, whose clients report it failed.
      await publish(m, '2');
      const wave = inWaveOrder(MODULE, '2', NODES).slice(0, 2);
      const halted = await state.wait('halted', (s) => s.build === '2' && s.state === 'halted');
      assert.equal([halted.from, halted.wave, halted.nodes.total], ['1', 1, 20]);
      assert.ok(halted.failed.length >= 1, JSON.stringify(halted.failed));
      for (const f of halted.failed) {
        assert.ok(wave.includes(f.node), `${f.node} failed but is not in wave 1`);
        assert.match(f.reason, /^failed: .*\$\{confg:port\}: unknown kind "confg"/);
      }
      // Each report of build 2 is `failed` (a `waiting` one would never halt it before wait).
      assert.ok(seen.reports.length >= 1, 'a report of build 2');
      for (const r of seen.reports) {
        assert.ok(wave.includes(r.node), `${r.node} reported build 2 but is not in wave 1`);
        assert.is(r.state, 'failed', JSON.stringify(r));
      }

      // The two are planned back, one write each, and their clients apply build 1 again.
      await waitApplied(m, wave, '1');
      for (const n of wave) assert.is(readFileSync(fileOf(m, n), 'utf8'), goodFile('1'), `${n}: build 1's bytes`);
      for (const n of NODES) assert.is((await m.kv.plans.get(`${n}.${MODULE}`))?.json<{ build: string }>().build, '1', `${n}'s plan`);
      assert.equal([...new Set(seen.writes.filter((w) => w.build === '2').map((w) => w.node))].sort(), [...wave].sort(), 'the nodes ever planned build 2');
      for (const n of wave) assert.equal(seen.buildsOf(n), ['2', '1'], `${n}'s plan writes`);
      // The 18 others: no plan write, the file as it was (bytes and mtime).
      for (const n of NODES.filter((n) => !wave.includes(n))) {
        assert.equal(seen.buildsOf(n), [], `${n}: no plan write`);
        assert.equal(fingerprint(fileOf(m, n)), before.get(n), `${n}'s file untouched`);
      }

      // The operator reads it, logged in as admin.
      const shown = await m.serverCommand(USERS.admin, ['rollout', MODULE]);
      assert.is(shown.code, 0, shown.stderr);
      assert.match(shown.stdout, /web {2}halted {2}build 2 from 1/);
      assert.match(shown.stdout, new RegExp(`failed (${wave.join('|')}): failed: .*confg`));

      // A config value is no build: during the halt it reaches all 20 at once, and no plan is written.
      const writesBefore = seen.writes.length;
      for (const n of NODES) await m.kv.config.put(`${n}.${MODULE}.greeting`, 'halted but configured');
      for (const n of NODES) await waitFor(`${n}'s file with the new greeting`, () => m.node(n).moduleFile(MODULE) === goodFile('1', 'halted but configured'));
      assert.is(seen.writes.length, writesBefore, 'no plan written for a config change');
      assert.is((await state.get())?.state, 'halted');

      // Build 3, good: a new rollout from the last good build, wave 1 first, then every node.
      seen.writes.length = 0;
      await publish(m, '3');
      const next = await state.wait('build 3 rolling', (s) => s.build === '3');
      assert.equal([next.from, next.failed], ['1', []]);
      await state.wait('build 3 done', (s) => s.build === '3' && s.state === 'done', 30_000);
      await waitApplied(m, NODES, '3', 'halted but configured');
      const first = inWaveOrder(MODULE, '3', NODES).slice(0, 2);
      assert.equal(
        seen.writes
          .slice(0, 2)
          .map((w) => w.node)
          .sort(),
        [...first].sort(),
        'wave 1 of build 3 planned first',
      );
      for (const n of NODES) assert.equal(seen.buildsOf(n), ['3'], `${n}: one write of build 3`);
    } finally {
      seen.stop();
    }
  }));

test.run();
