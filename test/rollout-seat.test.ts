// The seat's progressive rollout (DESIGN §12) against a real nats-server: waves planned by the
// nodes' own reports (the test writes them, as each node's client would), a halt planning every
// node back, and each edge §12 decides. The seat runs in the test's process, asked whether it has
// handled what it was given before a test says something did not happen, its clock moved by the
// test: no test sleeps. A seat upgraded mid-rollout, and the one killed mid-wait, are the bundle.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cleanupBundles } from './helpers/bundle.ts';
import { all, inWaveOrder, startRolloutFleet, type RolloutFleet } from './helpers/rollout-fleet.ts';

let fleet: RolloutFleet;
const nodes = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i + 1}`);

/** Publishes b1 of `module` on `names` and waits until every node holds it. */
async function settle(module: string, names: string[], rollout?: { waves: number[]; halt?: number; wait?: number }): Promise<void> {
  await fleet.publish(module, 'b1', rollout ? { rollout } : {});
  await fleet.assign(module, names);
  await fleet.waitPlans(module, all(names, 'b1'));
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

test('without a rollout a new build reaches every node at once, and no state is written', async () => {
  const names = nodes('plain', 4);
  await settle('plain', names);
  await fleet.publish('plain', 'b2');
  await fleet.waitPlans('plain', all(names, 'b2'));
  assert.is(await fleet.state('plain'), undefined);
});

test('a first build, and a node assigned anew, get their plans at once whatever the rollout', async () => {
  const names = nodes('first', 3);
  await settle('first', names, { waves: [0.1, 1] });
  assert.is(await fleet.state('first'), undefined, 'a first build is no rollout');
});

test('a new build goes out in waves: the first ⌈f·N⌉ nodes by sha256, the next wave when each reports applied, then done', async () => {
  const names = nodes('web', 10);
  await settle('web', names, { waves: [0.2, 0.5, 1], wait: 30 });
  await fleet.publish('web', 'b2', { rollout: { waves: [0.2, 0.5, 1], wait: 30 } });
  const order = inWaveOrder('web', 'b2', names);
  const wave1 = order.slice(0, 2);
  await fleet.waitPlans('web', { ...all(names, 'b1'), ...all(wave1, 'b2') });
  let state = await fleet.waitState('web', (s) => s.state === 'rolling', 'rolling');
  assert.equal([state.build, state.from, state.wave, state.nodes.total, state.nodes.planned], ['b2', 'b1', 1, 10, 2]);
  await fleet.settled();
  for (const n of order.slice(2)) assert.is(await fleet.planBuild('web', n), 'b1', `${n} is not in wave 1 and keeps b1`);
  const entry = (await fleet.verbHealth('web')).find((e) => e.key === 'web');
  assert.equal([entry?.value['state'], entry?.value['wave'], entry?.value['build']], ['rolling', 1, 'b2']);

  for (const n of wave1) await fleet.report('web', n, 'b2', 'applied');
  await fleet.waitPlans('web', { ...all(names, 'b1'), ...all(order.slice(0, 5), 'b2') });
  state = await fleet.waitState('web', (s) => s.wave === 2, 'wave 2');
  for (const n of order.slice(0, 5)) await fleet.report('web', n, 'b2', 'applied');
  await fleet.waitPlans('web', all(names, 'b2'));
  for (const n of order) await fleet.report('web', n, 'b2', 'applied');
  state = await fleet.waitState('web', (s) => s.state === 'done', 'done');
  const done = await fleet.command(['status', order[0]!]);
  assert.is(done.code, 0, `a done rollout leaves its module applied: ${done.stdout}`);
  assert.is(state.nodes.applied, 10);
  assert.ok(!(await fleet.verbHealth('web')).some((e) => e.key === 'web'), 'a done rollout is not in health');
  for (const n of names) assert.equal(history('web', n), ['b1', 'b2'], `${n}: one write each, never back`);
  const said = fleet.health.filter((h) => h.module === 'web').map((h) => h.reason);
  assert.ok(said.some((r) => /wave 1 of 3 planned/.test(r)) && said.some((r) => /wave 3 of 3/.test(r)) && said.some((r) => /done/.test(r)), said.join('\n'));
});

test('status shows a rolling or halted module on each of its nodes, the fleet and a node in detail', async () => {
  const names = nodes('shown', 4);
  await settle('shown', names);
  for (const n of names) await fleet.report('shown', n, 'b1', 'applied');
  await fleet.publish('shown', 'b2', { rollout: { waves: [0.5, 1], wait: 30 } });
  await fleet.waitState('shown', (s) => s.state === 'rolling', 'rolling');
  const table = await fleet.command(['status']);
  const rows = table.stdout.split('\n').filter((l) => /^shown\d/.test(l));
  assert.is(rows.length, 4, table.stdout);
  for (const row of rows) assert.match(row, /shown \(rolling b2, wave 1\)/);
  assert.match(table.stdout, /rollouts not done[^\n]*\n *MODULE +STATE[^\n]*\n(?:.*\n)*shown +rolling +b2 +1 /);
  const order = inWaveOrder('shown', 'b2', names);
  // Every node of the module reports applied (on b1): the module is not, while its rollout is not done.
  const rolling = await fleet.command(['status', order[3]!]);
  assert.is(rolling.code, 1, rolling.stdout);
  await fleet.report('shown', order[0]!, 'b2', 'failed', 'bad');
  await fleet.waitState('shown', (s) => s.state === 'halted', 'halted');
  const detail = await fleet.command(['status', order[3]!]);
  assert.match(detail.stdout, /^  rollout: halted build b2, wave 1$/m);
  assert.is(detail.code, 1, detail.stdout);
  // The node the rollout failed on says so in its detail, with why, as the fleet view's line does.
  const failedOn = await fleet.command(['status', order[0]!, 'shown']);
  assert.match(failedOn.stdout, /^  rollout: halted build b2, wave 1 — this node failed it: failed: bad$/m);
  assert.is(failedOn.code, 1, failedOn.stdout);
  const json = JSON.parse((await fleet.command(['status', '--json'])).stdout) as { nodes: { node: string; rollouts?: string[] }[] };
  assert.equal(json.nodes.find((n) => n.node === order[1])?.rollouts, ['shown (halted b2, wave 1)']);
  const untouched = await fleet.command(['status', 'plain1']);
  assert.not.match(untouched.stdout, /rollout:/);
  // Aborted: every node back on b1 and applied, and still not the newest build; said, and exit 1.
  const abort = await fleet.command(['rollout', 'abort', 'shown']);
  assert.is(abort.code, 0, abort.stderr);
  await fleet.waitState('shown', (s) => s.state === 'aborted', 'aborted');
  for (const n of names) await fleet.report('shown', n, 'b1', 'applied');
  const aborted = await fleet.command(['status', order[3]!]);
  assert.match(aborted.stdout, /^  rollout: aborted build b2, wave 1$/m);
  assert.is(aborted.code, 1, aborted.stdout);
  assert.match((await fleet.command(['status', order[0]!])).stdout, /^  rollout: aborted build b2, wave 1 — this node failed it: failed: bad$/m);
  // Planned back, it counts as its report says (applied on b1), not failed: the rollout's state says why status exits 1.
  const row = (await fleet.command(['status'])).stdout.split('\n').find((l) => l.startsWith(`${order[0]} `));
  assert.match(row ?? '', new RegExp(`^${order[0]} +1 +0 +0 `), row);
  assert.match((await fleet.command(['status'])).stdout, /shown \(aborted b2, wave 1\)/);
  // Until a new build is published (deploy/README.md's upgrade says so): once its nodes apply it, status exits 0.
  await fleet.publish('shown', 'b3');
  await fleet.waitPlans('shown', all(names, 'b3'));
  for (const n of names) await fleet.report('shown', n, 'b3', 'applied');
  const settled = await fleet.command(['status', order[0]!]);
  assert.is(settled.code, 0, settled.stdout);
  assert.not.match(settled.stdout, /rollout:/);
});

/** Kills the seat (the bundle by SIGKILL; one in process is stopped) and waits until it is gone. */
async function killSeat(): Promise<void> {
  fleet.seat.kill();
  await fleet.seat.exited;
}

const FLAG = ['--rollout', '0.5,1//30'];

test('a seat restarted with its composition unchanged starts no rollout and writes no plan', async () => {
  await killSeat();
  await fleet.restartSeat(FLAG);
  const names = nodes('same', 4);
  await settle('same', names);
  await killSeat();
  await fleet.restartSeat(FLAG);
  await fleet.settled();
  assert.is(await fleet.state('same'), undefined);
  for (const n of names) assert.equal(history('same', n), ['b1'], `${n}: written once`);
});

test('a build published while the seat is down rolls out in waves from the stored plans once it is back', async () => {
  const names = nodes('down', 4);
  await settle('down', names);
  await killSeat();
  await fleet.publish('down', 'b3');
  await fleet.restartSeat(FLAG);
  const order = inWaveOrder('down', 'b3', names);
  const state = await fleet.waitState('down', (s) => s.build === 'b3', 'a rollout of b3');
  assert.equal([state.state, state.from, state.wave, state.nodes.total, state.nodes.planned], ['rolling', 'b1', 1, 4, 2]);
  await fleet.waitPlans('down', { ...all(names, 'b1'), ...all(order.slice(0, 2), 'b3') });
  await fleet.settled();
  for (const n of order.slice(2)) assert.is(await fleet.planBuild('down', n), 'b1', `${n} is not in wave 1 and keeps b1`);
  for (const n of order.slice(0, 2)) await fleet.report('down', n, 'b3', 'applied');
  await fleet.waitPlans('down', all(names, 'b3'));
  for (const n of order) await fleet.report('down', n, 'b3', 'applied');
  await fleet.waitState('down', (s) => s.state === 'done', 'done');
  for (const n of names) assert.equal(history('down', n), ['b1', 'b3'], `${n}: one write each, never back`);
});

test('a build published while the seat is down after a done rollout rolls out from the build the nodes hold', async () => {
  const names = nodes('again', 4);
  await settle('again', names);
  await fleet.publish('again', 'b2');
  const order2 = inWaveOrder('again', 'b2', names);
  await fleet.waitState('again', (s) => s.state === 'rolling', 'b2 rolling');
  await fleet.waitPlans('again', all(order2.slice(0, 2), 'b2'));
  for (const n of order2.slice(0, 2)) await fleet.report('again', n, 'b2', 'applied');
  await fleet.waitPlans('again', all(names, 'b2'));
  for (const n of order2) await fleet.report('again', n, 'b2', 'applied');
  await fleet.waitState('again', (s) => s.state === 'done', 'b2 done');
  await killSeat();
  await fleet.publish('again', 'b3');
  await fleet.restartSeat(FLAG);
  const order = inWaveOrder('again', 'b3', names);
  const state = await fleet.waitState('again', (s) => s.build === 'b3', 'a rollout of b3');
  assert.equal([state.state, state.from, state.wave, state.nodes.planned], ['rolling', 'b2', 1, 2]);
  await fleet.waitPlans('again', { ...all(names, 'b2'), ...all(order.slice(0, 2), 'b3') });
  await fleet.settled();
  for (const n of order.slice(2)) assert.is(await fleet.planBuild('again', n), 'b2', `${n} is not in wave 1 and keeps b2`);
});

test('a seat upgraded mid-rollout reads the state an older seat wrote with its member list, and goes on where it was', async () => {
  const names = nodes('legacy', 4);
  const rollout = { waves: [0.5, 1], wait: 30 };
  await settle('legacy', names, rollout);
  await fleet.publish('legacy', 'b2', { rollout });
  const order = inWaveOrder('legacy', 'b2', names);
  await fleet.waitPlans('legacy', all(order.slice(0, 2), 'b2'));
  await killSeat();
  // As the seat of issue 21 stored it: the nodes in wave order, no cuts.
  const { cuts, ...older } = (await fleet.state('legacy'))!;
  await fleet.kv.rollouts.put('legacy', JSON.stringify({ ...older, members: order }));
  // The bundle: the seat an operator upgrades to.
  await fleet.restartSeat(FLAG, 'bundle');
  assert.match(fleet.seat.stderr(), /notice taken up where it was: rollout of legacy build b2 from b1: wave 1 of 2 planned/);
  for (const n of order.slice(0, 2)) await fleet.report('legacy', n, 'b2', 'applied');
  const wave2 = await fleet.waitState('legacy', (s) => s.wave === 2, 'wave 2 after the upgrade');
  assert.equal(wave2.cuts, cuts, 'the cuts its member list gives');
  assert.not.ok('members' in wave2, 'its next write drops the list');
  await fleet.waitPlans('legacy', all(names, 'b2'));
  for (const n of names) assert.equal(history('legacy', n), ['b1', 'b2'], `${n}: never planned backwards`);
});

test("a restarted seat counts a node's wait from its plan's write: the halt comes wait seconds after it, not after the restart", async () => {
  const names = nodes('clock', 4);
  const rollout = { waves: [0.5, 1], wait: 4 };
  await settle('clock', names, rollout);
  // The plans' times on the bus are compared with the clock in process: no test before this one moves it.
  const published = fleet.clock.now();
  await fleet.publish('clock', 'b2', { rollout });
  const wave1 = inWaveOrder('clock', 'b2', names).slice(0, 2);
  await fleet.waitPlans('clock', all(wave1, 'b2'));
  const written = Math.max(...fleet.writes.filter((w) => w.build === 'b2' && w.key.endsWith('.clock')).map((w) => w.at));
  // The bundle killed, then down for most of the wait, then back in process: the deadline is the plan's write + 4 s.
  await killSeat();
  fleet.clock.jump(2500);
  await fleet.restartSeat(FLAG, 'in-process');
  const restarted = fleet.clock.now();
  await fleet.settled();
  // The plans were written after the publish: 50 ms short of the wait since then, no node failed yet.
  fleet.clock.jump(Math.max(0, published + 3950 - fleet.clock.now()));
  await fleet.settled();
  assert.is((await fleet.state('clock'))?.state, 'rolling', `not before the wait: ${fleet.clock.now() - published} ms after the publish`);
  // Past the wait since the write, and well short of it since the restart: halted.
  fleet.clock.jump(Math.max(0, written + 4010 - fleet.clock.now()));
  await fleet.settled();
  const halted = await fleet.state('clock');
  assert.is(
    halted?.state,
    'halted',
    `${fleet.clock.now() - restarted} ms after the restart, ${fleet.clock.now() - written} ms after the write: the clock began again at the restart`,
  );
  assert.match(halted!.failed.map((f) => f.reason).join('\n'), /no applied report of b2 within 4 s/);
  assert.match(fleet.seat.stderr(), /notice taken up where it was: rollout of clock build b2 from b1: wave 1 of 2 planned/);
});

test('decided: a rollout whose last good composition the seat never saw halts with its wave kept on the new build, said so', async () => {
  const names = nodes('blind', 4);
  await settle('blind', names);
  await killSeat();
  await fleet.publish('blind', 'b3');
  await fleet.restartSeat(FLAG, 'in-process');
  const order = inWaveOrder('blind', 'b3', names);
  await fleet.waitState('blind', (s) => s.build === 'b3' && s.state === 'rolling', 'b3 rolling');
  await fleet.waitPlans('blind', { ...all(names, 'b1'), ...all(order.slice(0, 2), 'b3') });
  await fleet.report('blind', order[0]!, 'b3', 'failed', 'bad');
  const halted = await fleet.waitState('blind', (s) => s.state === 'halted', 'halted');
  assert.is(halted.from, 'b1');
  await fleet.settled();
  await fleet.waitPlans('blind', { ...all(names, 'b1'), ...all(order.slice(0, 2), 'b3') });
  for (const n of names) assert.is(history('blind', n).length, order.slice(0, 2).includes(n) ? 2 : 1, `${n}: nothing planned back or on`);
  const said = fleet.health.filter((h) => h.module === 'blind').map((h) => h.reason);
  assert.ok(
    said.some((r) => /halted at wave 1/.test(r) && /publish b1 again/.test(r)),
    said.join('\n'),
  );
  const shown = await fleet.command(['rollout', 'blind']);
  assert.match(shown.stdout, /not planned back: the seat never saw b1's composition; its nodes on b3 keep it until b1 is published again/);
});

test.run();
