// The edges of a progressive rollout DESIGN §12 decides, and the two it leaves open (decided in
// docs/decisions.md), against a real nats-server; the test writes each node's reports as its client
// would. The seat runs in the test's process, so a test moves its clock past a wave's `wait` and asks
// it whether it has handled what it was given before saying something did not happen: no test sleeps.
// The last two run the seat's bundle, killed mid-wave and started again with a flag.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cleanupBundles } from './helpers/bundle.ts';
import { all, inWaveOrder, startRolloutFleet, type RolloutFleet, type RolloutSpec } from './helpers/rollout-fleet.ts';
import { waitFor } from './helpers/wait.ts';
import { nodeHash } from '../src/shared/contract/waves.ts';

let fleet: RolloutFleet;
const nodes = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i + 1}`);

/** Publishes b1 of `module` on `names` and waits until every node holds it. */
async function settle(module: string, names: string[], rollout?: RolloutSpec): Promise<void> {
  await fleet.publish(module, 'b1', rollout ? { rollout } : {});
  await fleet.assign(module, names);
  await fleet.waitPlans(module, all(names, 'b1'));
}

/** Publishes `build` with `rollout` and waits for its first wave: the nodes in wave order and the state. */
async function rollOut(module: string, names: string[], build: string, rollout: RolloutSpec, first: number) {
  await fleet.publish(module, build, { rollout });
  const order = inWaveOrder(module, build, names);
  await fleet.waitState(module, (s) => s.build === build && s.state === 'rolling', `${build} rolling`);
  await fleet.waitPlans(module, all(order.slice(0, first), build));
  return order;
}

/** The builds a node's plan was written with, in order (null: deleted). */
const history = (module: string, node: string) => fleet.writes.filter((w) => w.key === `${node}.${module}`).map((w) => w.build);

test.before(async () => {
  fleet = await startRolloutFleet([], 'in-process');
});

test.after(async () => {
  await fleet.close();
  cleanupBundles();
});

test('a waiting report is not a failure, but the wait clock runs; a node that never reports fails after wait', async () => {
  const names = nodes('clock', 4);
  await settle('clock', names);
  const published = fleet.clock.now();
  const order = await rollOut('clock', names, 'b2', { waves: [0.5, 1], halt: 2, wait: 2 }, 2);
  const written = Math.max(...fleet.writes.filter((w) => w.key.endsWith('.clock') && w.build === 'b2').map((w) => w.at));
  await fleet.report('clock', order[0]!, 'b2', 'waiting');
  await fleet.settled();
  // The wave was planned after the publish: 50 ms short of wait since then, the report seen, nothing has failed.
  fleet.clock.jump(Math.max(0, published + 1950 - fleet.clock.now()));
  await fleet.settled();
  const held = await fleet.state('clock');
  assert.equal([held?.state, held?.nodes.failed], ['rolling', 0], `a waiting report fails nothing within wait: ${JSON.stringify(held)}`);
  // Past wait since its plans were written: both nodes of the wave fail, the waiting one too.
  fleet.clock.jump(Math.max(0, written + 2010 - fleet.clock.now()));
  const halted = await fleet.waitState('clock', (s) => s.state === 'halted', 'halted after wait');
  assert.ok(Date.parse(halted.since) >= published + 1950, `halted ${Date.parse(halted.since) - published} ms after the publish`);
  assert.equal(
    halted.failed.map((f) => f.reason).sort(),
    ['no applied report of b2 within 2 s (its report: waiting)', 'no applied report of b2 within 2 s (no report since the rollout began)'].sort(),
  );
  await fleet.waitPlans('clock', all(names, 'b1'));
});

test('halt is a budget: failed nodes below it keep the new build, said at warning; the rollout goes on and ends done with failures, which status shows', async () => {
  const names = nodes('budget', 4);
  await settle('budget', names);
  for (const n of names) await fleet.report('budget', n, 'b1', 'applied');
  const order = await rollOut('budget', names, 'b2', { waves: [0.5, 1], halt: 3, wait: 2 }, 2);
  await fleet.report('budget', order[0]!, 'b2', 'failed', 'bad');
  await fleet.report('budget', order[1]!, 'b2', 'applied');
  // Each node of wave 1 applied or failed, fewer than halt: the next wave, the failed node kept on b2.
  await fleet.waitState('budget', (s) => s.wave === 2, 'wave 2 past a failed node');
  await fleet.waitPlans('budget', all(names, 'b2'));
  await fleet.report('budget', order[2]!, 'b2', 'applied');
  // order[3] never reports b2 (its last report: applied on b1): failed after wait, and the rollout is done.
  await fleet.settled();
  fleet.clock.jump(2010);
  const done = await fleet.waitState('budget', (s) => s.state === 'done', 'done with failures');
  assert.equal([done.nodes.failed, done.nodes.applied, done.failed.map((f) => f.node)], [2, 2, [order[0], order[3]]]);
  // Its b1 report was written just before the rollout began: seen by it, or not yet.
  assert.match(done.failed[1]!.reason, /^no applied report of b2 within 2 s \((no report since the rollout began|no report of b2; its last: applied on b1)\)$/);
  for (const n of names) assert.equal(history('budget', n), ['b1', 'b2'], `${n}: one write, never back`);
  const said = fleet.health.filter((h) => h.module === 'budget' && /failed node/.test(h.reason)).map((h) => h.reason);
  assert.match(said[0]!, new RegExp(`1 failed node\\(s\\) \\(${order[0]}: failed: bad\\), fewer than halt 3: the rollout goes on and they keep b2`));
  assert.match(said.at(-1)!, /done with failures, 4 node\(s\) on b2, 2 failed node\(s\)/);
  const log = fleet.seat.stderr();
  assert.match(log, /warning rollout of budget build b2 from b1: wave \d of 2 planned .*1 failed node\(s\)/, 'a failure below halt is a warning');
  assert.match(log, /warning rollout of budget build b2 from b1: done with failures/);
  // status shows both failed (order[3] reports applied, on b1) and exits 1; a node that applied b2 is fine.
  const fleetView = await fleet.command(['status']);
  assert.is(fleetView.code, 1, fleetView.stdout);
  assert.match(fleetView.stdout, new RegExp(`${order[3]} +0 +0 +1 .*budget \\(done b2, wave 2, failed\\)`));
  assert.match(fleetView.stdout, /, or done with failed nodes \(each keeps the new build, or its plan where the seat cannot compose the new one\):/);
  const detail = await fleet.command(['status', order[3]!]);
  assert.is(detail.code, 1, detail.stdout);
  assert.match(detail.stdout, /rollout: done build b2, wave 2; this node failed: no applied report of b2 within 2 s/);
  assert.is((await fleet.command(['status', order[1]!])).code, 0, 'a node that applied b2');
  // Put right, each node reports b2 applied: the rollout's failures are behind it, and status exits 0.
  for (const n of [order[0]!, order[3]!]) await fleet.report('budget', n, 'b2', 'applied');
  await waitFor('no health entry', async () => !(await fleet.verbHealth('budget')).some((e) => e.key === 'budget'));
  assert.not.match((await fleet.command(['status'])).stdout, /budget \(/);
  const fixed = await fleet.command(['status', order[3]!]);
  assert.is(fixed.code, 0, fixed.stdout);
  // …and `rollout` says the same: the state is written again with each moved out of `failed`, counted applied.
  const recovered = await fleet.waitState('budget', (s) => s.nodes.failed === 0, 'failed no more');
  assert.equal([recovered.state, recovered.nodes.applied, recovered.failed], ['done', 4, []]);
  const shown = await fleet.command(['rollout', 'budget']);
  assert.match(shown.stdout, /^budget {2}done {2}build b2 from b1 .*nodes: 4 planned of 4, 4 applied, 0 failed/m);
  assert.not.match(shown.stdout, /failed budget/);
  assert.match(fleet.seat.stderr(), /notice .*reported b2 applied, failed no more: rollout of budget build b2 from b1: done, 4 node\(s\) on b2\n/);
});

test('a wave node that cannot be composed, below halt, keeps its older plan and is said so; status shows it failed under the done rollout until it is put right and applies', async () => {
  const names = nodes('keeps', 4);
  const [lacking, ...others] = names as [string, ...string[]];
  await fleet.publish('keeps', 'b1');
  // b2 writes under ${dir:state}, which only `lacking`'s placement lacks.
  await fleet.assign('keeps', others, { state: '/var/keeps' });
  await fleet.assign('keeps', [lacking]);
  await fleet.waitPlans('keeps', all(names, 'b1'));
  for (const n of names) await fleet.report('keeps', n, 'b1', 'applied');
  await fleet.publish('keeps', 'b2', { rollout: { waves: [0.5, 1], halt: 2, wait: 30 }, dirName: 'state' });
  const order = inWaveOrder('keeps', 'b2', names);
  for (const wave of [order.slice(0, 2), order.slice(2)]) {
    const composed = wave.filter((n) => n !== lacking);
    await fleet.waitPlans('keeps', all(composed, 'b2'));
    for (const n of composed) await fleet.report('keeps', n, 'b2', 'applied');
  }
  const done = await fleet.waitState('keeps', (s) => s.state === 'done', 'done with failures');
  assert.equal([done.nodes, done.failed.map((f) => f.node)], [{ total: 4, planned: 4, applied: 3, failed: 1 }, [lacking]]);
  assert.is(await fleet.planBuild('keeps', lacking), 'b1', 'never planned b2');
  const said = fleet.health.filter((h) => h.module === 'keeps' && /done with failures/.test(h.reason)).at(-1)!.reason;
  assert.match(
    said,
    new RegExp(
      `: done with failures, 3 of 4 node\\(s\\) on b2, 1 failed node\\(s\\) \\(${lacking} keeps its plan of b1: cannot compose b2: file keeps\\.conf: .*\\) \\(fewer than halt 2\\): fix them`,
    ),
  );
  assert.not.match(said, /keep b2/);
  // status: the node failed (and the seat cannot compose it), the rollout's section under the table, exit 1.
  const view = await fleet.command(['status']);
  assert.is(view.code, 1, view.stdout);
  assert.match(view.stdout, /done with failed nodes \(each keeps the new build, or its plan where the seat cannot compose the new one\):$/m);
  assert.match(view.stdout, /^keeps +done +b2 +2 +rollout of keeps build b2 from b1: done with failures, 3 of 4 node\(s\) on b2/m);
  assert.match(view.stdout, new RegExp(`^${lacking} +0 +0 +1 +0 +1 .*keeps \\(done b2, wave 2, failed\\)`, 'm'));
  const detail = await fleet.command(['status', lacking, 'keeps']);
  assert.is(detail.code, 1, detail.stdout);
  assert.match(detail.stdout, /^  rollout: done build b2, wave 2; this node failed: cannot compose b2: /m);
  // Put right: composed with b2 (the entry says so), then applied: failed no more, in the state and in status.
  await fleet.assign('keeps', [lacking], { state: '/var/keeps' });
  await fleet.waitPlans('keeps', { [lacking]: 'b2' });
  const entry = (await fleet.verbHealth('keeps')).find((e) => e.key === 'keeps')?.value as { failed?: { reason: string }[] } | undefined;
  assert.match(entry?.failed?.[0]?.reason ?? '', /; composed since, planned b2, no applied report of it yet$/);
  await fleet.report('keeps', lacking, 'b2', 'applied');
  const fixed = await fleet.waitState('keeps', (s) => s.nodes.failed === 0, 'failed no more');
  assert.equal(fixed.nodes, { total: 4, planned: 4, applied: 4, failed: 0 });
  const after = await fleet.command(['status', lacking]);
  assert.is(after.code, 0, after.stdout);
});

test('a wave node whose plan of the new build cannot be composed fails at once with the seat’s reason, not after wait', async () => {
  const names = nodes('nodir', 4);
  await settle('nodir', names);
  const started = Date.now();
  // b2 writes under ${dir:state}, which no node's placement names.
  await fleet.publish('nodir', 'b2', { rollout: { waves: [0.5, 1], halt: 2, wait: 30 }, dirName: 'state' });
  const halted = await fleet.waitState('nodir', (s) => s.state === 'halted', 'halted by the nodes it cannot plan');
  assert.ok(Date.now() - started < 5000, `halted after ${Date.now() - started} ms, not the wait of 30 s`);
  const order = inWaveOrder('nodir', 'b2', names);
  assert.equal(halted.failed, [
    { node: order[0], reason: `cannot compose b2: file nodir.conf: path "\${dir:state}/nodir.conf": \${dir:state} is not in the assignment's placement` },
    { node: order[1], reason: `cannot compose b2: file nodir.conf: path "\${dir:state}/nodir.conf": \${dir:state} is not in the assignment's placement` },
  ]);
  await fleet.waitPlans('nodir', all(names, 'b1'));
});

test('a failed report halts: every node on the new build is planned back, one write each, and nothing else moves', async () => {
  const names = nodes('halt', 8);
  await settle('halt', names);
  const order = await rollOut('halt', names, 'b2', { waves: [0.25, 1], wait: 30 }, 2);
  await fleet.report('halt', order[1]!, 'b2', 'applied');
  await fleet.report('halt', order[0]!, 'b2', 'failed', 'template halt.conf: ${confg:port} of an unknown kind');
  const halted = await fleet.waitState('halt', (s) => s.state === 'halted', 'halted');
  assert.equal(halted.failed, [{ node: order[0], reason: 'failed: template halt.conf: ${confg:port} of an unknown kind' }]);
  // A failure of the new build reported after the halt is recorded too; nothing moves for it.
  await fleet.report('halt', order[1]!, 'b2', 'failed', 'late');
  const late = await fleet.waitState('halt', (s) => s.failed.length === 2, 'the late failure recorded');
  assert.equal([late.state, late.nodes.failed, late.failed[1]], ['halted', 2, { node: order[1], reason: 'failed: late' }]);
  await fleet.waitPlans('halt', all(names, 'b1'));
  await fleet.settled();
  for (const n of order.slice(0, 2)) assert.equal(history('halt', n), ['b1', 'b2', 'b1'], `${n}: one rollback write`);
  for (const n of order.slice(2)) assert.equal(history('halt', n), ['b1'], `${n}: never written during the halt`);
  const entry = (await fleet.verbHealth('halt')).find((e) => e.key === 'halt');
  assert.is(entry?.value['state'], 'halted');
  assert.match(String(entry?.value['reason']), /halted at wave 1 by 2 failed node\(s\) \(.*; .*: failed: late\)/);
  assert.ok(fleet.health.some((h) => h.module === 'halt' && /halted/.test(h.reason)));
  // An operator watches `journalctl -p warning`: the halt and its rollback are there.
  assert.match(fleet.seat.stderr(), /warning rollout of halt build b2 from b1: halted at wave 1 by 1 failed node\(s\) .*; planned back to b1;/);
  assert.not.match(fleet.seat.stderr(), /info rollout of halt build b2 from b1: halted/);

  // resume: the failed nodes get the build again with the next wave, the count starts again.
  const resumed = await fleet.command(['rollout', 'resume', 'halt']);
  assert.is(resumed.code, 0, resumed.stderr);
  assert.match(resumed.stdout, /rollout of halt: resumed/);
  const rolling = await fleet.waitState('halt', (s) => s.state === 'rolling', 'rolling again');
  assert.equal([rolling.wave, rolling.failed, rolling.nodes.failed], [2, [], 0]);
  await fleet.waitPlans('halt', all(names, 'b2'));
  for (const n of names) await fleet.report('halt', n, 'b2', 'applied');
  await fleet.waitState('halt', (s) => s.state === 'done', 'done');
  for (const op of ['resume', 'abort']) {
    const refused = await fleet.command(['rollout', op, 'halt']);
    assert.is(refused.code, 1, `${op} of a done rollout`);
    assert.match(refused.stderr, new RegExp(`is done: nothing to ${op}`));
  }
  const shown = await fleet.command(['rollout', 'halt', '--json']);
  assert.is(shown.code, 0, shown.stderr);
  const json = JSON.parse(shown.stdout) as { rollouts: { state: string; build: string; from: string }[] };
  assert.equal([json.rollouts[0]?.state, json.rollouts[0]?.build, json.rollouts[0]?.from], ['done', 'b2', 'b1']);
});

test('abort plans every node on the new build back to the last good build; a second abort is refused', async () => {
  const names = nodes('abort', 6);
  await settle('abort', names);
  const order = await rollOut('abort', names, 'b2', { waves: [0.5, 1], wait: 30 }, 3);
  const aborted = await fleet.command(['rollout', 'abort', 'abort']);
  assert.is(aborted.code, 0, aborted.stderr);
  await fleet.waitState('abort', (s) => s.state === 'aborted', 'aborted');
  await fleet.waitPlans('abort', all(names, 'b1'));
  for (const n of order.slice(0, 3)) assert.equal(history('abort', n), ['b1', 'b2', 'b1']);
  const again = await fleet.command(['rollout', 'abort', 'abort']);
  assert.is(again.code, 1);
  assert.match(again.stderr, /is aborted: only a rolling or halted rollout is aborted/);
  const table = await fleet.command(['rollout']);
  assert.match(table.stdout, /abort {2}aborted {2}build b2 from b1 {2}wave 1\/2/);
});

test('a build re-published with other content is a new rollout, from the same build name', async () => {
  const names = nodes('again', 4);
  await settle('again', names);
  const before = await fleet.planDigest('again', names[0]!);
  // Every node has applied the old content: those reports are of the same build name.
  for (const n of names) await fleet.report('again', n, 'b1', 'applied');
  await fleet.publish('again', 'b1', { content: 'b1, fixed', rollout: { waves: [0.5, 1], wait: 30 } });
  const state = await fleet.waitState('again', (s) => s.state === 'rolling', 'rolling');
  assert.equal([state.build, state.from, state.nodes.total], ['b1', 'b1', 4]);
  const order = inWaveOrder('again', 'b1', names);
  await fleet.settled();
  const digests = await Promise.all(order.map((n) => fleet.planDigest('again', n)));
  assert.ok(digests.slice(0, 2).every((d) => d !== before) && digests.slice(2).every((d) => d === before), JSON.stringify(digests));
  // The old content's applied reports do not count for the new one: the wave, judged with them, waits for new reports.
  assert.is((await fleet.state('again'))?.wave, 1);
  for (const n of order.slice(0, 2)) await fleet.report('again', n, 'b1', 'applied');
  await fleet.waitState('again', (s) => s.wave === 2, 'wave 2');
});

test('a composition published during a rollout supersedes it from the last good build; nodes on the superseded build count as older', async () => {
  const names = nodes('super', 8);
  await settle('super', names);
  const order2 = await rollOut('super', names, 'b2', { waves: [0.25, 1], wait: 30 }, 2);
  await fleet.publish('super', 'b3', { rollout: { waves: [0.25, 1], wait: 30 } });
  const state = await fleet.waitState('super', (s) => s.build === 'b3', 'b3 rolling');
  assert.equal([state.state, state.from, state.nodes.total, state.previous?.build], ['rolling', 'b1', 8, 'b1']);
  const order3 = inWaveOrder('super', 'b3', names);
  await fleet.waitPlans('super', all(order3.slice(0, 2), 'b3'));
  await fleet.settled();
  for (const n of order3.slice(2)) {
    const want = order2.slice(0, 2).includes(n) ? 'b2' : 'b1';
    assert.is(await fleet.planBuild('super', n), want, `${n} keeps its stored plan until its wave`);
  }
  assert.ok(fleet.health.some((h) => h.module === 'super' && /b2 from b1: superseded/.test(h.reason)));
});

test('a composition published during a halt supersedes it from the last good build', async () => {
  const names = nodes('hsup', 4);
  await settle('hsup', names);
  const order = await rollOut('hsup', names, 'b2', { waves: [0.5, 1], wait: 30 }, 2);
  await fleet.report('hsup', order[0]!, 'b2', 'failed', 'bad');
  await fleet.waitState('hsup', (s) => s.state === 'halted', 'halted');
  await fleet.waitPlans('hsup', all(names, 'b1'));
  await fleet.publish('hsup', 'b3', { rollout: { waves: [0.5, 1], wait: 30 } });
  const state = await fleet.waitState('hsup', (s) => s.build === 'b3', 'b3 rolling');
  assert.equal([state.state, state.from, state.failed], ['rolling', 'b1', []]);
  await fleet.waitPlans('hsup', all(inWaveOrder('hsup', 'b3', names).slice(0, 2), 'b3'));
});

test('a node assigned during a rollout gets the newest build at once, uncounted; during a halt, the last good build, and it joins the wave its hash falls in', async () => {
  const names = nodes('late', 4);
  await settle('late', names);
  const rollout = { waves: [0.25, 0.5, 1], wait: 30 };
  const order = await rollOut('late', names, 'b2', rollout, 1);
  await fleet.assign('late', ['late-new']);
  await fleet.waitPlans('late', { 'late-new': 'b2' });
  assert.equal(history('late', 'late-new'), ['b2']);
  assert.is((await fleet.state('late'))?.nodes.total, 4, 'not counted');
  await fleet.report('late', order[0]!, 'b2', 'failed', 'bad');
  const halted = await fleet.waitState('late', (s) => s.state === 'halted', 'halted');
  assert.not.ok('members' in halted, 'the state keeps wave cuts, not a member list');
  assert.is(halted.cuts.length, 3);
  const joined = nodes('late-h', 8);
  await fleet.assign('late', joined);
  await fleet.waitPlans('late', { ...all(joined, 'b1'), 'late-new': 'b1' });
  for (const n of joined) assert.equal(history('late', n), ['b1']);
  // Resumed at wave 2: a node assigned during the halt is in it when its hash is at most the wave's cut.
  const resumed = await fleet.command(['rollout', 'resume', 'late']);
  assert.is(resumed.code, 0, resumed.stderr);
  const cut = halted.cuts[1]!;
  const inWave2 = [...joined, 'late-new'].filter((n) => nodeHash('late', 'b2', n) <= cut);
  assert.ok(inWave2.length > 0 && inWave2.length < joined.length + 1, `${inWave2.length} of them in wave 2`);
  const want = Object.fromEntries([...joined, 'late-new'].map((n) => [n, inWave2.includes(n) ? 'b2' : 'b1']));
  await fleet.waitPlans('late', { ...want, ...all(order.slice(0, 2), 'b2'), ...all(order.slice(2), 'b1') });
  await fleet.settled();
  for (const n of joined) assert.equal(history('late', n), inWave2.includes(n) ? ['b1', 'b2'] : ['b1'], `${n}: planned with its wave only`);
});

test('decided: a wave node unassigned mid-wave leaves the rollout; the wave goes on without it, N and the waves unchanged', async () => {
  const names = nodes('gone', 4);
  await settle('gone', names);
  const order = await rollOut('gone', names, 'b2', { waves: [0.5, 1], wait: 30 }, 2);
  await fleet.unassign('gone', order[0]!);
  await fleet.waitPlans('gone', { [order[0]!]: undefined as unknown as string });
  await fleet.report('gone', order[1]!, 'b2', 'applied');
  const state = await fleet.waitState('gone', (s) => s.wave === 2, 'wave 2 without the unassigned node');
  assert.is(state.nodes.total, 4);
  await fleet.waitPlans('gone', all(order.slice(1), 'b2'));
  for (const n of order.slice(1)) await fleet.report('gone', n, 'b2', 'applied');
  await fleet.waitState('gone', (s) => s.state === 'done', 'done');
});

test('decided: a rollback whose old plan no longer composes keeps the node on its plan, failed in health with the reason', async () => {
  const names = nodes('stuck', 2);
  await fleet.publish('stuck', 'b1', { dirName: 'old' });
  await fleet.assign('stuck', names, { old: '/etc/stuck-old' });
  await fleet.waitPlans('stuck', all(names, 'b1'));
  await fleet.publish('stuck', 'b2', { rollout: { waves: [1], wait: 30 } });
  await fleet.waitPlans('stuck', all(names, 'b2'));
  // The placement changes: the old build's ${dir:old} no longer resolves on stuck1.
  await fleet.assign('stuck', ['stuck1']);
  await fleet.settled();
  await fleet.report('stuck', 'stuck1', 'b2', 'failed', 'bad');
  await fleet.waitState('stuck', (s) => s.state === 'halted', 'halted');
  await fleet.waitPlans('stuck', { stuck1: 'b2', stuck2: 'b1' });
  const entry = (await fleet.verbHealth('stuck')).find((e) => e.key === 'stuck1.stuck');
  assert.is(entry?.value['state'], 'failed');
  assert.is(entry?.value['build'], 'b1');
  assert.match(String(entry?.value['reason']), /\$\{dir:old\} is not in the assignment's placement/);
  assert.ok(fleet.health.some((h) => h.node === 'stuck1' && h.build === 'b1' && /dir:old/.test(h.reason)));
});

test('decided: a module held (unpublished) during a rollout pauses it: no clock runs out, and it goes on once published again', async () => {
  const names = nodes('pause', 2);
  await settle('pause', names);
  const order = await rollOut('pause', names, 'b2', { waves: [0.5, 1], wait: 1 }, 1);
  const bytes = (await fleet.kv.modules.get('pause'))!.json<Record<string, unknown>>();
  await fleet.kv.modules.put('pause', JSON.stringify({ ...bytes, published: false }));
  await fleet.settled();
  fleet.clock.jump(2000);
  await fleet.settled();
  assert.is((await fleet.state('pause'))?.state, 'rolling', 'held past wait, nothing failed');
  await fleet.kv.modules.put('pause', JSON.stringify(bytes));
  await fleet.report('pause', order[0]!, 'b2', 'applied');
  await fleet.waitState('pause', (s) => s.wave === 2, 'wave 2 once published again');
});

test('a seat killed mid-wave and started again goes on where it was: the rollout ends done, no node ever planned backwards', async () => {
  // The bundle from here on: killed as a process is (SIGKILL), nothing stopped in order.
  fleet.seat.kill();
  await fleet.seat.exited;
  await fleet.restartSeat([], 'bundle');
  const names = nodes('crash', 10);
  await settle('crash', names);
  const order = await rollOut('crash', names, 'b2', { waves: [0.2, 0.6, 1], wait: 30 }, 2);
  for (const n of order.slice(0, 2)) await fleet.report('crash', n, 'b2', 'applied');
  await fleet.waitState('crash', (s) => s.wave === 2, 'wave 2');
  await fleet.waitPlans('crash', all(order.slice(0, 6), 'b2'));
  for (const n of order.slice(0, 4)) await fleet.report('crash', n, 'b2', 'applied');
  fleet.seat.kill();
  await fleet.seat.exited;
  // Reports written while the seat is down count when it is back.
  await fleet.report('crash', order[4]!, 'b2', 'applied');
  await fleet.restartSeat();
  await fleet.report('crash', order[5]!, 'b2', 'applied');
  await fleet.waitState('crash', (s) => s.wave === 3, 'wave 3 after the restart');
  await fleet.waitPlans('crash', all(names, 'b2'));
  for (const n of order) await fleet.report('crash', n, 'b2', 'applied');
  await fleet.waitState('crash', (s) => s.state === 'done', 'done');
  for (const n of names) assert.equal(history('crash', n), ['b1', 'b2'], `${n} never planned backwards`);
});

test("the seat's --rollout rolls out a composition without its own rollout", async () => {
  fleet.seat.kill();
  await fleet.seat.exited;
  await fleet.restartSeat(['--rollout', '0.5,1//30']);
  const names = nodes('flag', 4);
  await settle('flag', names);
  await fleet.publish('flag', 'b2');
  const state = await fleet.waitState('flag', (s) => s.state === 'rolling', 'rolling');
  assert.equal([state.waves, state.halt, state.wait, state.nodes.planned], [[0.5, 1], 1, 30, 2]);
});

test.run();
