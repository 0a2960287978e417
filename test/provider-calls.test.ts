// Adapter calls that hang or crawl (issue 18 item 7), against a real nats-server: a call past its
// timeout is given up on with its signal aborted and retried only once it has settled, the other
// consumers are served meanwhile on a bounded number of slots, and stop() returns within its bound.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { CallStopped, CallTimedOut } from '../src/sdk/adapter-calls.ts';
import type { Adapter, Grant } from '../src/sdk/provider-index.ts';
import { consumer, fakeAdapter, startProviderBus, stopProviderBus, world } from './helpers/provider-world.ts';
import { sleep, waitFor } from './helpers/wait.ts';

test.before(async () => {
  await startProviderBus();
});
test.after(stopProviderBus);

/** A promise settled by the test, never by the call's signal (an adapter that ignores it). */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

/** Rejects naming `what` when `p` has not settled within `ms`. */
function within<T>(what: string, p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} did not return within ${ms} ms`)), ms))),
  ]).finally(() => clearTimeout(timer));
}

test('a create that never settles is given up on after its timeout with its signal aborted, while every other consumer is served; it is not called again until it settles', async () => {
  const w = await world();
  const fake = fakeAdapter();
  const stuck = gate();
  const signals: AbortSignal[] = [];
  let released = 0;
  const starts: number[] = [];
  const adapter: Adapter = {
    ...fake.adapter,
    async create(g: Grant, signal: AbortSignal) {
      if (g.consumer.module !== 'stuck') return fake.adapter.create(g, signal);
      starts.push(Date.now());
      signals.push(signal);
      if (starts.length === 1) await stuck.opened.then(() => (released = Date.now()));
      return fake.adapter.create(g, signal);
    },
  };
  const h = w.start(adapter, { callTimeoutMs: 300, retry: { firstMs: 50, maxMs: 100 } });
  try {
    const others = ['a1', 'a2', 'a3', 'a4', 'a5', 'a6'];
    w.write([consumer('n1', 'stuck', null, 'cred-stuck-001'), ...others.map((m) => consumer('n1', m, null, `cred-${m}-0001`))]);
    const begun = Date.now();
    for (const m of others) await waitFor(`${m} served beside the stuck one`, () => w.bound(`n1.${m}.database`), 5000);
    const servedIn = Date.now() - begun;
    assert.ok(servedIn < 2000, `the others took ${servedIn} ms`);
    await waitFor('the stuck call given up on', () =>
      w.log.lines.some((l) => l.includes('n1/stuck: serving failed (try 1): the create of n1/stuck did not settle within 300 ms')),
    );
    assert.ok(signals[0]?.aborted && signals[0].reason instanceof CallTimedOut, 'the signal of the call given up on was not aborted');
    // Absence over time: several retry periods (50–100 ms) pass and a change of the file visits it again.
    w.write([
      consumer('n1', 'stuck', null, 'cred-stuck-001'),
      ...others.map((m) => consumer('n1', m, null, `cred-${m}-0001`)),
      consumer('n1', 'late', null, 'cred-late-0001'),
    ]);
    await waitFor('late served', () => w.bound('n1.late.database'));
    await sleep(400);
    assert.is(starts.length, 1, 'a second create ran beside the one still running');
    assert.is(await w.bound('n1.stuck.database'), null);
    stuck.open();
    assert.ok(await waitFor('stuck served once its call settled', () => w.bound('n1.stuck.database')));
    assert.ok(starts[1]! >= released, 'the retry started before the hung call settled');
  } finally {
    stuck.open();
    await within('stop()', h.stop(), 3000);
    await w.done();
  }
});

test("stop() returns within its bound with calls hanging, each call's signal aborted", async () => {
  const w = await world();
  const signals: AbortSignal[] = [];
  const never: Adapter = {
    create: (_g, signal) => (signals.push(signal), new Promise(() => {})),
    remove: (_as, signal) => (signals.push(signal), new Promise(() => {})),
  };
  const h = w.start(never, { concurrency: 2 });
  w.write([consumer('n1', 'a', null, 'cred-a-000001'), consumer('n1', 'b', null, 'cred-b-000001'), consumer('n1', 'c', null, 'cred-c-000001')]);
  await waitFor('two calls under way', () => signals.length === 2);
  const begun = Date.now();
  await within('stop()', h.stop(), 2000);
  const took = Date.now() - begun;
  assert.ok(took < 1000, `stop() took ${took} ms`);
  assert.ok(
    signals.every((s) => s.aborted && s.reason instanceof CallStopped),
    'a signal was not aborted by stop()',
  );
  assert.is(signals.length, 2, 'a call started after stop()');
  await w.done();
});

test('consumers are served on a bounded number of slots at once, never one consumer twice at once', async () => {
  const w = await world();
  const fake = fakeAdapter();
  let inFlight = 0;
  let most = 0;
  const perConsumer = new Map<string, number>();
  let overlapped = false;
  const slow: Adapter = {
    ...fake.adapter,
    async create(g: Grant, signal: AbortSignal) {
      inFlight += 1;
      perConsumer.set(g.as, (perConsumer.get(g.as) ?? 0) + 1);
      overlapped ||= perConsumer.get(g.as)! > 1;
      most = Math.max(most, inFlight);
      await sleep(100);
      inFlight -= 1;
      perConsumer.set(g.as, perConsumer.get(g.as)! - 1);
      return fake.adapter.create(g, signal);
    },
  };
  const names = Array.from({ length: 10 }, (_, i) => `m${i}`);
  const h = w.start(slow, { concurrency: 3 });
  try {
    w.write(names.map((m) => consumer('n1', m, null, `cred-${m}-00001`)));
    const begun = Date.now();
    for (const m of names) await waitFor(`${m} served`, () => w.bound(`n1.${m}.database`));
    const took = Date.now() - begun;
    await h.reconciled();
    assert.is(most, 3, `at most ${most} creates ran at once`);
    assert.not.ok(overlapped, 'two calls ran at once for one consumer');
    assert.ok(took < 900, `10 creates of 100 ms on 3 slots took ${took} ms`);
  } finally {
    await w.done();
  }
});

test.run();
