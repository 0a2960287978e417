// How a watch's consumer is made again on a busy bus and while the bus fails over (src/shared/bus/watch/remake.ts),
// against a fake of nats.js's private consumer API (src/shared/bus/watch/internals.ts) whose creates the
// test answers, refuses or leaves unanswered, on a fake clock: exact times, no sleeping.
import { test } from 'uvu';
import { errors } from '@nats-io/transport-node';
import * as assert from 'uvu/assert';
import { JetStreamApiError, type ConsumerConfig, type ConsumerInfo, type ConsumerMessages } from '@nats-io/jetstream';
import { orderedConsumer } from '../src/shared/bus/watch/internals.ts';
import { REMAKE_AGAIN_MS, REMAKE_GIVE_UP_MS, REMAKE_TIMEOUT_MS } from '../src/shared/bus/watch/give-up.ts';
import { BusPace, LOOK_REUSE_MS, PACE_MEMORY_MS, REMAKE_UNSETTLED_MS, REPLICA_SILENT_MS, type StreamCluster } from '../src/shared/bus/watch/pace.ts';
import { hastenRemakes, REMAKE_ANSWER_MS } from '../src/shared/bus/watch/remake.ts';
import { fakeClock, flush } from './helpers/clock.ts';

/** The private consumer API as nats.js's reset calls it (`this.timeout` its request timeout). */
type ConsumerApi = {
  timeout: number;
  add(stream: string, config: ConsumerConfig): Promise<ConsumerInfo>;
  delete(stream: string, name: string): Promise<boolean>;
};

type Create = {
  name: string;
  deliver: string;
  timeout: number;
  at: number;
  made(): void;
  lost(): void;
  refused(why: string): void;
  refusedWith(apiError: { code: number; err_code: number; description: string }): void;
};

/**
 * An ordered consumer's private parts whose creates wait for the test; deletes recorded. `internals`
 * is the object nats.js's reset goes through, `consumer` what the watch holds of it.
 */
function fakeApi(clock = fakeClock()) {
  const creates: Create[] = [];
  const deleted: string[] = [];
  const api = {
    timeout: 5000,
    add(this: ConsumerApi, _stream: string, config: ConsumerConfig) {
      const timeout = this.timeout;
      return new Promise<ConsumerInfo>((resolve, reject) => {
        creates.push({
          name: config.name!,
          deliver: config.deliver_subject!,
          timeout,
          at: clock.now(),
          made: () => resolve({ name: config.name!, config } as unknown as ConsumerInfo),
          lost: () => reject(new errors.TimeoutError()),
          refused: (why) => reject(new Error(why)),
          refusedWith: (apiError) => reject(new JetStreamApiError(apiError)),
        });
      });
    },
    async delete(_stream: string, name: string) {
      deleted.push(name);
      return true;
    },
  };
  const resets: number[] = [];
  const internals = {
    reset: () => void resets.push(clock.now()),
    getConsumerOpts: () => ({}),
    cursor: { stream_seq: 0, deliver_seq: 0 },
    consumer: { api: api as unknown as ConsumerApi },
    monitor: null,
  };
  const consumer = orderedConsumer(internals as unknown as ConsumerMessages);
  return { clock, creates, deleted, resets, internals, consumer };
}

const config = (serial: number): ConsumerConfig => ({ name: `oc_${serial}`, deliver_subject: `_INBOX.d.${serial}` }) as ConsumerConfig;

test('on a calm cluster an unanswered create is given up after 1.5 s and the consumer reset under a new name; after that each create waits 0.25 s', async () => {
  const f = fakeApi();
  const lines: string[] = [];
  const refusals: Error[] = [];
  const remakes = hastenRemakes(f.consumer, 'watch w', { debug: (l) => lines.push(l) }, f.clock, (err) => refusals.push(err));
  let settled = false;
  void f.internals.consumer.api.add('KV_x', config(2)).finally(() => (settled = true));
  assert.ok(remakes.busy(), 'a re-make in flight');
  await f.clock.advance(REMAKE_GIVE_UP_MS - 1);
  assert.equal(f.resets, [], 'not given up before its bound');
  await f.clock.advance(1);
  assert.equal(f.resets, [REMAKE_GIVE_UP_MS], 'given up and reset at once: placed on a dead server, the same name would never be answered');
  for (let serial = 3; serial <= 5; serial++) {
    void f.internals.consumer.api.add('KV_x', config(serial)).finally(() => (settled = true));
    await f.clock.advance(REMAKE_TIMEOUT_MS + REMAKE_AGAIN_MS);
  }
  assert.equal(
    f.creates.map((c) => [c.name, c.deliver, c.at, c.timeout]),
    [2, 3, 4, 5].map((n, i) => [
      `oc_${n}`,
      `_INBOX.d.${n}`,
      i === 0 ? 0 : REMAKE_GIVE_UP_MS + (i - 1) * (REMAKE_TIMEOUT_MS + REMAKE_AGAIN_MS),
      REMAKE_ANSWER_MS,
    ]),
    'one ask a name, each listened to for 10 s',
  );
  assert.equal(
    f.resets.map((at, i) => (i === 0 ? at : at - f.creates[i]!.at)),
    [REMAKE_GIVE_UP_MS, REMAKE_TIMEOUT_MS + REMAKE_AGAIN_MS, REMAKE_TIMEOUT_MS + REMAKE_AGAIN_MS, REMAKE_TIMEOUT_MS + REMAKE_AGAIN_MS],
    'after the first give-up each create waits 0.25 s, and the reset of the second give-up in a row on 50 ms more',
  );
  assert.not.ok(settled, 'a re-make given up never settles: nats.js neither takes it nor backs off');
  assert.equal(refusals, [], 'a give-up is no refusal');
  assert.match(lines[0]!, `a create of its consumer went unanswered for ${REMAKE_GIVE_UP_MS} ms; making its consumer under a new name`);
  // Made at last: the next re-make is calm again.
  const made = f.internals.consumer.api.add('KV_x', config(6));
  f.creates.at(-1)!.made();
  assert.is((await made).name, 'oc_6');
  assert.match(lines.at(-1)!, `its consumer made after 4 creates given up, the first ${3 * (REMAKE_TIMEOUT_MS + REMAKE_AGAIN_MS)} ms before`);
  assert.is(lines.length, 5, 'one line a give-up, and one once made');
  void f.internals.consumer.api.add('KV_x', config(7));
  const resets = f.resets.length;
  await f.clock.advance(REMAKE_GIVE_UP_MS - 1);
  assert.is(f.resets.length, resets, 'calm again once made');
});

test('a given-up create answered late is a consumer nobody holds, deleted where the grants allow, and its answer sets the pace: no create is given up sooner than twice the median answer', async () => {
  const f = fakeApi();
  const pace = new BusPace(f.clock.now);
  hastenRemakes(f.consumer, 'watch w', undefined, f.clock, undefined, pace);
  void f.internals.consumer.api.add('KV_x', config(2));
  await f.clock.advance(REMAKE_GIVE_UP_MS);
  // The second, asked before the pace was known, is given up at its 0.25 s (and reset 50 ms later).
  void f.internals.consumer.api.add('KV_x', config(3));
  await f.clock.advance(REMAKE_TIMEOUT_MS + REMAKE_AGAIN_MS);
  const late = REMAKE_GIVE_UP_MS + REMAKE_TIMEOUT_MS + REMAKE_AGAIN_MS;
  assert.equal(f.resets, [REMAKE_GIVE_UP_MS, late]);
  // A busy bus: the first create is answered 1.8 s after it was asked; the third waits twice that.
  f.creates[0]!.made();
  await flush();
  assert.equal(f.deleted, ['oc_2']);
  assert.is(pace.giveUpAfter(REMAKE_TIMEOUT_MS, REMAKE_ANSWER_MS), 2 * late);
  const third = f.internals.consumer.api.add('KV_x', config(4));
  await f.clock.advance(2 * late - 1);
  assert.is(f.resets.length, 2, 'not given up before twice the median answer');
  f.creates[2]!.made();
  assert.is((await third).name, 'oc_4');
});

test('within 20 s of a cluster change an unanswered create is given up after 0.25 s and the consumer reset again (a new name, a new subject) at once, then 50 ms later', async () => {
  const f = fakeApi();
  const remakes = hastenRemakes(f.consumer, 'watch w', undefined, f.clock);
  remakes.clusterChanged();
  let settled = false;
  for (let serial = 2; serial <= 6; serial++) {
    void f.internals.consumer.api.add('KV_x', config(serial)).finally(() => (settled = true));
    await f.clock.advance(REMAKE_TIMEOUT_MS + (serial === 2 ? 0 : REMAKE_AGAIN_MS));
  }
  assert.equal(
    f.creates.map((c) => [c.name, c.timeout]),
    [2, 3, 4, 5, 6].map((n) => [`oc_${n}`, REMAKE_ANSWER_MS]),
    'one ask a reset: no hedge on the watch’s subject',
  );
  assert.equal(
    f.resets.map((at, i) => at - f.creates[i]!.at),
    [REMAKE_TIMEOUT_MS, ...Array(4).fill(REMAKE_TIMEOUT_MS + REMAKE_AGAIN_MS)],
    'each give-up resets again: at once, then 50 ms later',
  );
  assert.not.ok(settled);
});

test('a bus answering late after a cluster change: a give-up whose answer may still come does not halve the next wait, one older than the bus answers does', async () => {
  const f = fakeApi();
  const pace = new BusPace(f.clock.now);
  const remakes = hastenRemakes(f.consumer, 'watch w', undefined, f.clock, undefined, pace);
  remakes.clusterChanged();
  void f.internals.consumer.api.add('KV_x', config(2));
  await f.clock.advance(REMAKE_TIMEOUT_MS); // the first given up at 250 ms, reset at once
  void f.internals.consumer.api.add('KV_x', config(3));
  await f.clock.advance(150);
  f.creates[0]!.made(); // answered 400 ms after it was asked: the bus answers late, not never
  await flush();
  await f.clock.advance(REMAKE_TIMEOUT_MS - 150 + REMAKE_AGAIN_MS); // the second given up at 500 ms, reset 50 ms later
  assert.equal(f.resets, [REMAKE_TIMEOUT_MS, 2 * REMAKE_TIMEOUT_MS + REMAKE_AGAIN_MS]);
  // The second's give-up is 50 ms old, its answer not yet due (the bus answers in 400 ms): the
  // third waits twice that answer, where halving it would give up a live create answered at 500 ms.
  void f.internals.consumer.api.add('KV_x', config(4));
  await f.clock.advance(2 * 400 - 1);
  assert.is(f.resets.length, 2, 'not given up before twice the answer');
  await f.clock.advance(1 + REMAKE_AGAIN_MS);
  assert.is(f.resets.length, 3, 'given up at twice the answer (reset 50 ms later)');
  // Nothing answered since the second's give-up, now older than the bus's answer: the fourth waits half.
  void f.internals.consumer.api.add('KV_x', config(5));
  await f.clock.advance(400 - 1);
  assert.is(f.resets.length, 3, 'not given up before half');
  await f.clock.advance(1 + REMAKE_AGAIN_MS);
  assert.is(f.resets.length, 4, 'given up at half: a give-up past the answer says a dead server');
});

test('a stream read that shows a replica silent, behind or offline makes every watch on the connection give creates up after 0.25 s for 20 s', async () => {
  const f = fakeApi();
  const pace = new BusPace(f.clock.now);
  hastenRemakes(f.consumer, 'watch w', undefined, f.clock, undefined, pace);
  const replica = (r: Partial<{ current: boolean; offline: boolean; activeMs: number }>) => ({
    current: r.current ?? true,
    offline: r.offline,
    active: (r.activeMs ?? 300) * 1e6,
  });
  pace.sawStream({ replicas: [replica({}), replica({ activeMs: 900 })] });
  assert.not.ok(pace.unsettled(), 'replicas heard within the last second: calm');
  for (const gone of [{ activeMs: REPLICA_SILENT_MS + 1 }, { current: false }, { offline: true }]) {
    const p = new BusPace(f.clock.now);
    p.sawStream({ replicas: [replica({}), replica(gone)] });
    assert.ok(p.unsettled(), JSON.stringify(gone));
  }
  pace.sawStream({ replicas: [replica({}), replica({ current: false })] });
  void f.internals.consumer.api.add('KV_x', config(2));
  await f.clock.advance(REMAKE_TIMEOUT_MS);
  assert.equal(f.resets, [REMAKE_TIMEOUT_MS]);
  await f.clock.advance(REMAKE_UNSETTLED_MS);
  assert.not.ok(pace.unsettled(), 'calm 20 s later');
});

test('a re-make given up and answered before its replacement was sent is the consumer: no reset', async () => {
  const f = fakeApi();
  const remakes = hastenRemakes(f.consumer, 'watch w', undefined, f.clock);
  const made = f.internals.consumer.api.add('KV_x', config(2));
  remakes.clusterChanged(); // given up: its replacement goes on the next turn of the clock
  f.creates[0]!.made();
  assert.is((await made).name, 'oc_2');
  await f.clock.advance(REMAKE_TIMEOUT_MS);
  assert.equal(f.resets, [], 'no reset');
  assert.equal(f.deleted, []);
});

test('a cluster change during a re-make gives it up at once; 20 s later re-makes are calm again', async () => {
  const f = fakeApi();
  const remakes = hastenRemakes(f.consumer, 'watch w', undefined, f.clock);
  void f.internals.consumer.api.add('KV_x', config(2));
  await f.clock.advance(500);
  remakes.clusterChanged();
  await f.clock.advance(1);
  assert.equal(f.resets, [500], 'reset at once');
  const next = f.internals.consumer.api.add('KV_x', config(3));
  f.creates[1]!.made();
  assert.is((await next).name, 'oc_3');
  f.creates[0]!.made();
  await flush();
  assert.equal(f.deleted, ['oc_2'], 'the ask given up and made late is a consumer nobody holds: deleted where the grants allow');
  await f.clock.advance(REMAKE_UNSETTLED_MS);
  void f.internals.consumer.api.add('KV_x', config(4));
  await f.clock.advance(REMAKE_GIVE_UP_MS - 1);
  assert.equal(f.resets, [500], 'calm again: not given up before 1.5 s');
});

test('a create answered at once asks nothing more, calm or after a cluster change', async () => {
  for (const changed of [false, true]) {
    const f = fakeApi();
    const remakes = hastenRemakes(f.consumer, 'watch w', undefined, f.clock);
    if (changed) remakes.clusterChanged();
    const made = f.internals.consumer.api.add('KV_x', config(2));
    f.creates[0]!.made();
    assert.is((await made).name, 'oc_2');
    await f.clock.advance(REMAKE_GIVE_UP_MS);
    assert.is(f.creates.length, 1);
  }
});

test('a create answered that JetStream is choosing a leader (503) is no refusal: given up and asked again under a new name', async () => {
  const f = fakeApi();
  const refusals: Error[] = [];
  hastenRemakes(f.consumer, 'watch w', undefined, f.clock, (err) => refusals.push(err));
  void f.internals.consumer.api.add('KV_x', config(2));
  f.creates[0]!.refusedWith({ code: 503, err_code: 10008, description: 'JetStream system temporarily unavailable' });
  await flush();
  await f.clock.advance(1);
  assert.equal(refusals, []);
  assert.equal(f.resets, [0]);
});

test('an answered refusal goes to nats.js at once, which waits before its next reset', async () => {
  const f = fakeApi();
  hastenRemakes(f.consumer, 'watch w', undefined, f.clock);
  const made = f.internals.consumer.api.add('KV_x', config(2));
  f.creates[0]!.refused('stream not found');
  await made.then(
    () => assert.unreachable('made'),
    (err: Error) => assert.is(err.message, 'stream not found'),
  );
  await f.clock.advance(REMAKE_GIVE_UP_MS);
  assert.is(f.creates.length, 1);
});

test('a re-make replaced by a later reset never settles, sends nothing more, and its consumer is deleted if made', async () => {
  const f = fakeApi();
  hastenRemakes(f.consumer, 'watch w', undefined, f.clock);
  let settled = false;
  void f.internals.consumer.api.add('KV_x', config(2)).finally(() => (settled = true));
  const newer = f.internals.consumer.api.add('KV_x', config(3));
  f.creates[0]!.made();
  f.creates[1]!.made();
  assert.is((await newer).name, 'oc_3');
  await f.clock.advance(REMAKE_GIVE_UP_MS);
  assert.not.ok(settled);
  assert.equal(f.deleted, ['oc_2']);
  assert.equal(
    f.creates.map((c) => c.name),
    ['oc_2', 'oc_3'],
  );
});

test('while another watch on the connection waits unanswered too and nothing was answered since, a create waits on: until one is answered, 1.5 s at most', async () => {
  const clock = fakeClock();
  const pace = new BusPace(clock.now);
  const [a, b, c] = [fakeApi(clock), fakeApi(clock), fakeApi(clock)];
  for (const f of [a, b, c]) hastenRemakes(f.consumer, 'watch', undefined, clock, undefined, pace).clusterChanged();
  for (const f of [a, b, c]) void f.internals.consumer.api.add('KV_x', config(2));
  await clock.advance(REMAKE_TIMEOUT_MS);
  assert.equal(
    [a, b, c].map((f) => f.resets.length),
    [0, 0, 0],
    'a burst: three creates wait, none given up at 0.25 s',
  );
  // The bus answers a's 0.4 s after the asks.
  await clock.advance(150);
  a.creates[0]!.made();
  await flush();
  await clock.advance(REMAKE_TIMEOUT_MS);
  // b's and c's second look is at 0.5 s: a was answered since they were asked.
  assert.equal(
    [a, b, c].map((f) => f.resets),
    [[], [2 * REMAKE_TIMEOUT_MS], [2 * REMAKE_TIMEOUT_MS]],
  );
  // Nothing answered at all: the wait ends at 1.5 s.
  const clock2 = fakeClock();
  const pace2 = new BusPace(clock2.now);
  const [d, e] = [fakeApi(clock2), fakeApi(clock2)];
  for (const f of [d, e]) hastenRemakes(f.consumer, 'watch', undefined, clock2, undefined, pace2).clusterChanged();
  for (const f of [d, e]) void f.internals.consumer.api.add('KV_x', config(2));
  await clock2.advance(REMAKE_GIVE_UP_MS);
  assert.equal(
    [d, e].map((f) => f.resets),
    [[REMAKE_GIVE_UP_MS], [REMAKE_GIVE_UP_MS]],
  );
});

test('while the connection is down nothing is given up, not even a create unanswered past 10 s: the reconnect makes the consumer again', async () => {
  const f = fakeApi();
  const remakes = hastenRemakes(f.consumer, 'watch w', undefined, f.clock);
  remakes.clusterChanged();
  void f.internals.consumer.api.add('KV_x', config(2));
  remakes.disconnected(true);
  await f.clock.advance(REMAKE_ANSWER_MS);
  f.creates[0]!.lost();
  await f.clock.advance(REMAKE_GIVE_UP_MS);
  assert.equal(f.resets, []);
  remakes.disconnected(false);
  void f.internals.consumer.api.add('KV_x', config(3));
  await f.clock.advance(REMAKE_TIMEOUT_MS);
  assert.equal(f.resets, [REMAKE_ANSWER_MS + REMAKE_GIVE_UP_MS + REMAKE_TIMEOUT_MS], 'back up: given up as before');
});

test('the pace forgets answers after 5 s, and those from before a cluster change', async () => {
  const clock = fakeClock();
  const pace = new BusPace(clock.now);
  pace.answered(900);
  assert.is(pace.giveUpAfter(REMAKE_TIMEOUT_MS, REMAKE_ANSWER_MS), 1800);
  pace.unsettle();
  assert.is(pace.giveUpAfter(REMAKE_TIMEOUT_MS, REMAKE_ANSWER_MS), REMAKE_TIMEOUT_MS, 'a fleet’s start says nothing of its failover');
  pace.answered(400);
  pace.sawStream({ replicas: [{ current: false, active: 4000e6 }] });
  assert.is(
    pace.giveUpAfter(REMAKE_TIMEOUT_MS, REMAKE_ANSWER_MS),
    800,
    'a stream read showing the server gone is no new change: what the answers taught is kept',
  );
  await clock.advance(PACE_MEMORY_MS + 1);
  assert.is(pace.giveUpAfter(REMAKE_TIMEOUT_MS, REMAKE_ANSWER_MS), REMAKE_TIMEOUT_MS);
});

/** A connection's look at its streams' replicas, answered by the test: each look recorded with its stream, time and wait. */
function fakeLooks(clock: ReturnType<typeof fakeClock>) {
  const looks: { stream: string; at: number; ms: number; answer(cluster: StreamCluster | undefined): void; fail(): void; refuse(): void }[] = [];
  const read = (stream: string, ms: number) =>
    new Promise<StreamCluster | undefined>((resolve, reject) => {
      looks.push({
        stream,
        at: clock.now(),
        ms,
        answer: resolve,
        fail: () => reject(new errors.TimeoutError()),
        refuse: () => reject(new Error('no responders')),
      });
    });
  return { looks, pace: new BusPace(clock.now, read) };
}

const whole: StreamCluster = {
  replicas: [
    { current: true, active: 200e6 },
    { current: true, active: 600e6 },
  ],
};

test('on a calm cluster a create unanswered 1.5 s has its stream looked at once: every replica current and heard from, it waits 1.5 s more and, answered meanwhile, is made without a reset', async () => {
  const clock = fakeClock();
  const { looks, pace } = fakeLooks(clock);
  const [a, b, c] = [fakeApi(clock), fakeApi(clock), fakeApi(clock)];
  for (const f of [a, b, c]) hastenRemakes(f.consumer, 'watch', undefined, clock, undefined, pace);
  const made = [a, b, c].map((f, i) => f.internals.consumer.api.add(i < 2 ? 'KV_x' : 'KV_y', config(2)));
  await clock.advance(REMAKE_GIVE_UP_MS);
  assert.equal(
    looks.map((l) => [l.stream, l.at]),
    [
      ['KV_x', REMAKE_GIVE_UP_MS],
      ['KV_y', REMAKE_GIVE_UP_MS],
    ],
    'one look a stream for the watches of the connection (a and b watch KV_x)',
  );
  for (const l of looks) l.answer(whole);
  await flush();
  await clock.advance(REMAKE_GIVE_UP_MS - 1);
  assert.equal(
    [a, b, c].map((f) => f.resets),
    [[], [], []],
    'a whole stream: its late creates wait 1.5 s more',
  );
  assert.is(looks.length, 2, 'no look more: a server gone meanwhile is said by its peers (the cluster changed)');
  for (const f of [a, b, c]) f.creates[0]!.made();
  assert.equal(
    (await Promise.all(made)).map((i) => i.name),
    ['oc_2', 'oc_2', 'oc_2'],
  );
  assert.equal(
    [a, b, c].map((f) => [f.creates.length, f.resets.length, f.deleted.length]),
    [
      [1, 0, 0],
      [1, 0, 0],
      [1, 0, 0],
    ],
    'one create each, answered 3 s late, and no consumer nobody holds',
  );
});

test("a look that finds a replica gone, or is refused, gives the create up at once; the next creates are given up after 0.25 s without a look (the cluster unsettled, or the stream not the login's to read)", async () => {
  for (const look of ['gone', 'refused'] as const) {
    const clock = fakeClock();
    const { looks, pace } = fakeLooks(clock);
    const f = fakeApi(clock);
    const lines: string[] = [];
    hastenRemakes(f.consumer, 'watch w', { debug: (l) => lines.push(l) }, clock, undefined, pace);
    void f.internals.consumer.api.add('KV_x', config(2));
    await clock.advance(REMAKE_GIVE_UP_MS);
    await clock.advance(100);
    if (look === 'gone')
      looks[0]!.answer({
        replicas: [
          { current: true, active: 1e6 },
          { current: false, active: (REPLICA_SILENT_MS + 1) * 1e6 },
        ],
      });
    else looks[0]!.refuse();
    await flush();
    await clock.advance(0);
    assert.equal(f.resets, [REMAKE_GIVE_UP_MS + 100], look);
    assert.match(lines[0]!, 'stream KV_x has a replica gone, or its look was refused');
    assert.is(pace.unsettled(), look === 'gone', 'a replica seen gone unsettles the connection; a refused look does not');
    void f.internals.consumer.api.add('KV_x', config(3));
    await clock.advance(REMAKE_TIMEOUT_MS + LOOK_REUSE_MS);
    assert.is(looks.length, 1, `${look}: no look once one was given up`);
    assert.is(f.resets.length, 2, `${look}: the next create given up after 0.25 s`);
  }
});

test('a look left unanswered says a slow bus, not a server gone: the create waits as for a whole stream', async () => {
  const clock = fakeClock();
  const { looks, pace } = fakeLooks(clock);
  const f = fakeApi(clock);
  hastenRemakes(f.consumer, 'watch w', undefined, clock, undefined, pace);
  void f.internals.consumer.api.add('KV_x', config(2));
  await clock.advance(REMAKE_GIVE_UP_MS);
  await clock.advance(1000);
  looks[0]!.fail();
  await flush();
  await clock.advance(REMAKE_GIVE_UP_MS - 1);
  assert.equal(f.resets, [], 'not given up while it waits');
  await clock.advance(1);
  assert.equal(f.resets, [2 * REMAKE_GIVE_UP_MS + 1000], 'given up 1.5 s after the look ended');
  assert.is(looks.length, 1);
  assert.not.ok(pace.unsettled());
});

test('a stream of one server whose look it answered, or any stream of a bus whose stream info named no cluster, has its create wait for its answer: not given up at 3 s, given up by its own timeout at 10 s, at once if the cluster changes', async () => {
  for (const kind of ['R1 in a cluster', 'no cluster'] as const) {
    const clock = fakeClock();
    const { looks, pace } = fakeLooks(clock);
    const [f, g, h] = [fakeApi(clock), fakeApi(clock), fakeApi(clock)];
    const remakes = [f, g, h].map((x) => hastenRemakes(x.consumer, 'watch w', undefined, clock, undefined, pace));
    // A bus in no cluster is known from the bucket check's stream info at the start: nothing is looked at.
    if (kind === 'no cluster') pace.sawStream(undefined, 'KV_plans');
    const made = f.internals.consumer.api.add('KV_x', config(2));
    void g.internals.consumer.api.add('KV_x', config(2));
    void h.internals.consumer.api.add('KV_x', config(2));
    await clock.advance(REMAKE_GIVE_UP_MS);
    if (kind === 'R1 in a cluster') looks[0]!.answer({});
    await flush();
    await clock.advance(3 * REMAKE_GIVE_UP_MS);
    assert.equal(
      [f, g, h].map((x) => x.resets),
      [[], [], []],
      `${kind}: its server answered, the create waits on`,
    );
    f.creates[0]!.made();
    assert.is((await made).name, 'oc_2', `${kind}: answered 6 s late, made without a reset`);
    remakes[1]!.clusterChanged();
    await clock.advance(0);
    assert.equal(g.resets, [clock.now()], `${kind}: the cluster changed: given up at once`);
    await clock.advance(REMAKE_ANSWER_MS - clock.now() - 1);
    assert.equal(h.resets, [], `${kind}: not given up before its own timeout`);
    h.creates[0]!.lost();
    await flush();
    await clock.advance(0);
    assert.equal(h.resets, [REMAKE_ANSWER_MS - 1], `${kind}: its request timed out: given up`);
    assert.is(looks.length, kind === 'no cluster' ? 0 : 1, `${kind}: one look for the connection's watches of the stream, none on a bus in no cluster`);
  }
});

/** A watch of KV_config (not this login's to read) on a connection that read `read` (each stream's cluster), its create asked 1.5 s ago. */
async function standInCreate(clock: ReturnType<typeof fakeClock>, read: [string, StreamCluster][]) {
  const { looks, pace } = fakeLooks(clock);
  for (const [stream, cluster] of read) pace.sawStream(cluster, stream);
  pace.refusedRead('KV_config');
  const f = fakeApi(clock);
  hastenRemakes(f.consumer, 'watch w', undefined, clock, undefined, pace);
  void f.internals.consumer.api.add('KV_config', config(2));
  await clock.advance(REMAKE_GIVE_UP_MS);
  return { looks, pace, f };
}

test('a stand-in stream of one server says nothing of the stream it stands for on a cluster: that create waits as for a whole stream', async () => {
  const clock = fakeClock();
  const { looks, f } = await standInCreate(clock, [['KV_plans', {}]]);
  assert.equal(
    looks.map((l) => l.stream),
    ['KV_plans'],
  );
  looks[0]!.answer({});
  await flush();
  await clock.advance(REMAKE_GIVE_UP_MS);
  assert.equal(f.resets, [2 * REMAKE_GIVE_UP_MS], 'given up 1.5 s after its look: the stand-in is no proof of its own server');
});

test('a create whose stream looks whole is still given up: 1.5 s after its look, twice that for each create given up in a row, 10 s at most; after a cluster change creates are given up at 0.25 s without a look', async () => {
  const clock = fakeClock();
  const { looks, pace } = fakeLooks(clock);
  const f = fakeApi(clock);
  hastenRemakes(f.consumer, 'watch w', undefined, clock, undefined, pace);
  const waited: number[] = [];
  for (let round = 0; round < 4; round++) {
    const asked = clock.now();
    void f.internals.consumer.api.add('KV_x', config(2 + round));
    while (f.resets.length === round) {
      await clock.advance(50);
      for (const l of looks) l.answer(whole);
      await flush();
    }
    waited.push(f.resets[round]! - asked);
  }
  assert.equal(
    waited,
    [
      2 * REMAKE_GIVE_UP_MS,
      REMAKE_TIMEOUT_MS + 2 * REMAKE_GIVE_UP_MS + REMAKE_AGAIN_MS,
      REMAKE_TIMEOUT_MS + 4 * REMAKE_GIVE_UP_MS + REMAKE_AGAIN_MS,
      REMAKE_TIMEOUT_MS + REMAKE_ANSWER_MS + REMAKE_AGAIN_MS,
    ],
    'a look each, then 1.5, 3, 6 s and 10 s: a bus that answers seconds late is not asked again and again',
  );
  assert.is(looks.length, 4);
  for (const c of f.creates) c.made();
  await flush();
  const g = fakeApi(clock);
  const remakes = hastenRemakes(g.consumer, 'watch v', undefined, clock, undefined, pace);
  remakes.clusterChanged();
  void g.internals.consumer.api.add('KV_x', config(2));
  const at = clock.now();
  await clock.advance(REMAKE_TIMEOUT_MS);
  assert.equal(g.resets, [at + REMAKE_TIMEOUT_MS]);
  assert.is(looks.length, 4, 'no look while the cluster fails over');
});

test('a stream this login may not read is judged by the stream the connection read last; with none read, its create is given up at 1.5 s without a look', async () => {
  const clock = fakeClock();
  const { looks, pace } = fakeLooks(clock);
  pace.refusedRead('KV_config');
  const f = fakeApi(clock);
  hastenRemakes(f.consumer, 'watch w', undefined, clock, undefined, pace);
  void f.internals.consumer.api.add('KV_config', config(2));
  await clock.advance(REMAKE_GIVE_UP_MS);
  await flush();
  await clock.advance(0);
  assert.equal(looks, [], 'nothing asked of a stream not granted, nor of one never read');
  assert.equal(f.resets, [REMAKE_GIVE_UP_MS]);
  const {
    looks: looks2,
    pace: pace2,
    f: g,
  } = await standInCreate(clock, [
    ['KV_registry', whole],
    ['KV_plans', whole],
  ]);
  assert.equal(
    looks2.map((l) => l.stream),
    ['KV_plans'],
    'the stream read last stands for it',
  );
  looks2[0]!.answer(whole);
  await flush();
  await clock.advance(REMAKE_GIVE_UP_MS - 1);
  assert.equal(g.resets, [], 'its servers all there: the create waits on');
  // Read after all (its grant came): looked at itself from then on.
  pace2.sawStream(whole, 'KV_config');
  pace2.sawStream(whole, 'KV_plans');
  await clock.advance(LOOK_REUSE_MS);
  void pace2.look('KV_config');
  assert.equal(looks2.at(-1)!.stream, 'KV_config');
});

test('a stopped watch sends no more creates', async () => {
  const f = fakeApi();
  const remakes = hastenRemakes(f.consumer, 'watch w', undefined, f.clock);
  void f.internals.consumer.api.add('KV_x', config(2));
  remakes.stop();
  await f.clock.advance(REMAKE_GIVE_UP_MS * 2);
  assert.is(f.creates.length, 1);
  assert.not.ok(remakes.busy());
});

test.run();
