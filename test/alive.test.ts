// The alive tick (DESIGN §14) on a fake clock: what it publishes and when, when it pings the engine
// (only when no fill was sent or answered in the period), how `since` moves, and that nothing is
// published once stopped; and the hub's cut said once when it begins and once when it ends.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startAlive } from '../src/client/alive/alive.ts';
import { EngineWatch } from '../src/client/alive/engine-state.ts';
import type { HubReach } from '../src/client/alive/hub.ts';
import type { EngineProof } from '../src/client/handoff/fill-socket.ts';
import { memoryLogger } from '../src/shared/cli/log.ts';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Alive } from '../src/shared/contract/alive.ts';
import { fakeClock, flush } from './helpers/clock.ts';

const T0 = Date.parse('2026-12-06T10:00:00.000Z');

/** An engine client whose pings are answered by `answer` (a promise the test may hold), counting them. */
function engine(answer: () => Promise<EngineProof>) {
  let hear: (p: 'up' | 'down' | 'sent') => void = () => {};
  const e = {
    pings: 0,
    ping: () => (e.pings++, answer()),
    onProof: (fn: typeof hear) => void (hear = fn),
    hear: (p: 'up' | 'down' | 'sent') => hear(p),
  };
  return e;
}

function rig(answer: () => Promise<EngineProof>, probe?: () => Promise<HubReach>, heardFromHub: () => number | undefined = () => undefined) {
  const clock = fakeClock();
  const now = () => T0 + clock.now();
  const e = engine(answer);
  const watch = new EngineWatch(e, now);
  const sent: { subject: string; alive: Alive }[] = [];
  const log = memoryLogger();
  // The tick publishes on it alone: the hub's probe and its word are handed in.
  const nc = { publish: (subject: string, data: string) => void sent.push({ subject, alive: JSON.parse(data) as Alive }) } as unknown as NatsConnection;
  const tick = startAlive({
    nc,
    node: 'n1',
    version: '9.9.9',
    everyMs: 30_000,
    engine: watch,
    modules: () => 3,
    log,
    timer: clock.timer,
    now,
    probe: probe ?? (async () => ({ reached: true })),
    heardFromHub,
  });
  return { clock, e, sent, tick, log };
}

test('at start it pings and says the engine up since the start, then every period; a fill sent or answered in the period spares the ping', async () => {
  const r = rig(async () => 'up');
  await flush();
  assert.is(r.e.pings, 1);
  assert.equal(r.sent, [
    {
      subject: 'prov.alive.n1',
      alive: {
        node: 'n1',
        version: '9.9.9',
        every: 30,
        engine: { state: 'up', since: '2026-12-06T10:00:00.000Z' },
        modules: 3,
        at: '2026-12-06T10:00:00.000Z',
      },
    },
  ]);
  await r.clock.advance(10_000);
  r.e.hear('sent');
  await r.clock.advance(20_000);
  assert.is(r.sent.length, 2);
  assert.is(r.e.pings, 1, 'a fill was sent in the period: no ping');
  assert.is(r.sent[1]!.alive.at, '2026-12-06T10:00:30.000Z');
  await r.clock.advance(30_000);
  assert.is(r.e.pings, 2, 'nothing in the period: a ping');
  r.tick.stop();
});

test('an idle engine is pinged every period: the answer to one ping is no word for the next period', async () => {
  const r = rig(async () => 'up');
  await flush();
  await r.clock.advance(90_000);
  assert.is(r.sent.length, 4);
  assert.is(r.e.pings, 4);
  r.tick.stop();
});

test('a fill given up proves the engine down: the next message says down since then, and up since the change back', async () => {
  const r = rig(async () => 'up');
  await flush();
  await r.clock.advance(12_000);
  r.e.hear('down');
  await r.clock.advance(18_000);
  assert.equal(r.sent[1]!.alive.engine, { state: 'down', since: '2026-12-06T10:00:12.000Z' });
  await r.clock.advance(5_000);
  r.e.hear('up');
  await r.clock.advance(25_000);
  assert.equal(r.sent[2]!.alive.engine, { state: 'up', since: '2026-12-06T10:00:35.000Z' });
  await r.clock.advance(30_000);
  assert.equal(r.sent[3]!.alive.engine, { state: 'up', since: '2026-12-06T10:00:35.000Z' }, 'no change: since stays');
  r.tick.stop();
});

test('a ping unanswered after half a period lets the message go with what is known; its timeout shows in the next', async () => {
  let answer!: (p: EngineProof) => void;
  const r = rig(() => new Promise<EngineProof>((resolve) => (answer = resolve)));
  await flush();
  assert.is(r.sent.length, 0);
  await r.clock.advance(15_000);
  assert.equal(r.sent[0]!.alive.engine.state, 'down', 'nothing proved yet');
  await r.clock.advance(5_000);
  answer('up');
  await flush();
  await r.clock.advance(10_000);
  assert.is(r.e.pings, 1, 'the ping answered in the period spares the next');
  assert.equal(r.sent[1]!.alive.engine, { state: 'up', since: '2026-12-06T10:00:00.000Z' });
  r.tick.stop();
});

test('stopped while its ping waits, it publishes nothing, and arms no further tick', async () => {
  let answer!: (p: EngineProof) => void;
  const r = rig(() => new Promise<EngineProof>((resolve) => (answer = resolve)));
  await flush();
  r.tick.stop();
  answer('up');
  await r.clock.advance(120_000);
  assert.is(r.sent.length, 0);
  assert.equal(r.clock.pending(), []);
});

test('a hub out of reach is said once at warning when it begins and once at info when it ends', async () => {
  const finds: HubReach[] = [
    { reached: false, why: '$JS.API.INFO found no responders behind 127.0.0.1:4222' },
    { reached: false, why: 'again' },
    { reached: undefined },
    { reached: true },
    { reached: true },
  ];
  const r = rig(
    async () => 'up',
    async () => finds.shift() ?? { reached: true },
  );
  await flush();
  await r.clock.advance(120_000);
  assert.equal(
    r.log.lines.map((l) => l.replace(/^\S+ /, '')),
    [
      "warning cannot reach the hub: $JS.API.INFO found no responders behind 127.0.0.1:4222; the mesh's buckets cannot be read or written from here until it answers",
      'info the hub is in reach again: its JetStream answers',
    ],
  );
  assert.is(r.sent.length, 5, 'the alive message goes on through the cut');
  r.tick.stop();
});

test("the hub is probed only in a period when the connection's watches heard nothing from JetStream (an idle watch's heartbeat is word enough)", async () => {
  let probes = 0;
  let heard: number | undefined = T0 - 1;
  const r = rig(
    async () => 'up',
    async () => (probes++, { reached: true }),
    () => heard,
  );
  await flush();
  assert.is(probes, 0, 'at start the watches have just heard');
  await r.clock.advance(30_000);
  assert.is(probes, 1, 'nothing heard in the period: probed');
  heard = T0 + 45_000;
  await r.clock.advance(30_000);
  assert.is(probes, 1, 'a heartbeat in the period: not probed');
  await r.clock.advance(30_000);
  assert.is(probes, 2);
  r.tick.stop();
});

test.run();
