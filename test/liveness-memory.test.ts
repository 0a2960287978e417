// The seat's memory of each node's last word (DESIGN §14), on an injected clock: silence by age with
// the node's own period, the wait after the seat's start, the 5 s after a close, engine down, what
// begins and ends said once, and only nodes with a plan.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { LivenessMemory } from '../src/server/seat/liveness/memory.ts';
import { readEvent } from '../src/server/seat/liveness/events.ts';
import type { Alive } from '../src/shared/contract/alive.ts';

function world() {
  let t = 1_000_000;
  const memory = new LivenessMemory(() => t);
  return { memory, pass: (s: number) => (t += s * 1000), at: () => t };
}

const word = (node: string, every = 30, engine: 'up' | 'down' = 'up'): Alive => ({
  node,
  version: '1.0.0',
  every,
  engine: { state: engine, since: '2026-12-06T10:00:00.000Z' },
  modules: 1,
  at: '2026-12-06T10:00:00.000Z',
});

test('a node never heard is silent only after the default 75 s from the seat start; one heard, after its own two periods + 15 s', () => {
  const { memory, pass } = world();
  memory.plan('n1', 'n1.web', true);
  memory.plan('n2', 'n2.web', true);
  memory.heard(word('n2', 1));
  pass(16);
  assert.is(memory.reasonOf('n1'), undefined);
  assert.is(memory.reasonOf('n2'), undefined);
  pass(1);
  assert.is(memory.reasonOf('n2'), 'no word from its client for 17 s');
  pass(58);
  assert.is(memory.reasonOf('n1'), 'no word from its client for 75 s');
});

test("a node's word judges that node alone; the clock's tick judges the rest", () => {
  const { memory, pass } = world();
  memory.plan('n1', 'n1.web', true);
  memory.plan('n2', 'n2.web', true);
  memory.heard(word('n1', 1));
  memory.heard(word('n2', 1));
  pass(17);
  memory.heard(word('n1', 1));
  assert.equal(memory.changes('n1'), [], 'n1 spoke: nothing began for it');
  assert.equal(memory.changes(), [{ node: 'n2', began: 'no word from its client for 17 s' }], 'n2 was left to the tick, and said once');
  assert.equal(memory.changes('n2'), []);
});

test('what begins and ends is said once each; an end names the reason that ended', () => {
  const { memory, pass } = world();
  memory.plan('n1', 'n1.web', true);
  memory.heard(word('n1', 1));
  assert.equal(memory.changes(), []);
  pass(17);
  assert.equal(memory.changes(), [{ node: 'n1', began: 'no word from its client for 17 s' }]);
  assert.equal(memory.changes(), []);
  assert.equal(memory.healthEntry('n1'), { node: 'n1', reason: 'no word from its client for 17 s' });
  memory.heard(word('n1', 1, 'down'));
  assert.equal(memory.changes(), [{ node: 'n1', began: 'engine down since 2026-12-06T10:00:00.000Z', ended: 'no word from its client for 17 s' }]);
  memory.heard(word('n1', 1));
  assert.equal(memory.changes(), [{ node: 'n1', ended: 'engine down since 2026-12-06T10:00:00.000Z' }]);
  assert.equal(memory.healthKeys(), []);
});

test("a client's connection closed: silent 5 s later, whatever the start wait; a connect or a word before that keeps it", () => {
  const { memory, pass, at } = world();
  memory.plan('n1', 'n1.web', true);
  memory.disconnected('n1', 's/1');
  pass(4.9);
  assert.is(memory.reasonOf('n1'), undefined);
  memory.connected('n1', 's/2');
  pass(1);
  assert.is(memory.reasonOf('n1'), undefined);
  const closed = at();
  memory.disconnected('n1', 's/2');
  pass(5);
  assert.is(memory.reasonOf('n1'), `no word from its client since its connection closed at ${new Date(closed).toISOString()}`);
  memory.heard(word('n1'));
  assert.is(memory.reasonOf('n1'), undefined);
});

test('a close while another connection of the client is open (a --once run beside the daemon) says nothing', () => {
  const { memory, pass } = world();
  memory.plan('n1', 'n1.web', true);
  memory.connected('n1', 's/1');
  memory.connected('n1', 's/2');
  memory.disconnected('n1', 's/2');
  pass(10);
  assert.is(memory.reasonOf('n1'), undefined);
});

test('only nodes with a plan count: a word of a node without one is kept, not shown, and counts once a plan comes', () => {
  const { memory, pass } = world();
  memory.heard(word('n9', 1));
  pass(100);
  assert.is(memory.reasonOf('n9'), undefined);
  assert.equal(memory.plannedKeys(), []);
  assert.is(memory.aliveEntry('n9'), undefined);
  memory.plan('n9', 'n9.web', true);
  assert.is(memory.reasonOf('n9'), 'no word from its client for 17 s');
  assert.equal(memory.aliveEntry('n9')?.version, '1.0.0');
  memory.plan('n9', 'n9.web', false);
  assert.is(memory.reasonOf('n9'), undefined);
  assert.equal(memory.changes(), []);
});

test('counts: speaking, silent, engine down among the nodes with a plan', () => {
  const { memory, pass } = world();
  for (const n of ['a', 'b', 'c']) memory.plan(n, `${n}.web`, true);
  memory.heard(word('a', 30));
  memory.heard(word('b', 30, 'down'));
  memory.heard(word('c', 1));
  pass(20);
  memory.changes();
  assert.equal(memory.counts(), { alive: 1, silent: 1, engineDown: 1 });
});

test("an event counts only when it is the node's client's (its account, its connection's name); a runner's says nothing", () => {
  const event = (acc: string, name: string) => ({ server: { id: 'S1' }, client: { id: 7, acc, user: 'UABC', name } });
  assert.equal(readEvent('$SYS.ACCOUNT.provisioner.n1.DISCONNECT', event('provisioner.n1', 'node-provisioner n1')), {
    ok: true,
    event: { node: 'n1', kind: 'DISCONNECT', connection: 'S1/7' },
  });
  assert.equal(readEvent('$SYS.ACCOUNT.provisioner.n1.DISCONNECT', event('provisioner.n1', 'module web')), { ok: true });
  assert.is(readEvent('$SYS.ACCOUNT.provisioner.n1.CONNECT', event('provisioner.n2', 'node-provisioner n1')).ok, false);
  assert.is(readEvent('$SYS.ACCOUNT.provisioner.n1.CONNECT', { client: 'x' }).ok, false);
});

test.run();
