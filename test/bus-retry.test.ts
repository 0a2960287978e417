// Waiting for a bucket (src/shared/base/backoff.ts, src/shared/base/retry.ts, waitForWatch in src/shared/bus/watch/bucket.ts, a daemon's
// bind in src/shared/bus/bind-wait.ts): the waits, the lines and stopping, with the timer and the watch handed in, so no time
// passes and no server runs.
import { test } from 'uvu';
import { errors } from '@nats-io/transport-node';
import * as assert from 'uvu/assert';
import { MAX_WATCH_RETRY_MS, waitForWatch } from '../src/shared/bus/watch/bucket.ts';
import type { Watch } from '../src/shared/bus/watch/types.ts';
import { Backoff, backoffWait } from '../src/shared/base/backoff.ts';
import { FIRST_RETRY_MS, retryWithBackoff } from '../src/shared/base/retry.ts';
import type { Timer } from '../src/shared/base/timer.ts';
import { NatsInternalsError } from '../src/shared/bus/watch/internals.ts';
import { JetStreamApiError } from '@nats-io/jetstream';
import { bindWhenThere } from '../src/shared/bus/bind-wait.ts';
import { BucketMissingError, BucketRefusedError } from '../src/shared/bus/bucket-bind.ts';
import { JETSTREAM_UNAVAILABLE_CODE } from '../src/shared/bus/jetstream-errors.ts';

const NO_RESPONDERS = 'waiting for bucket b (>): no responders: the bucket is missing or not granted to this account';

/** A timer whose waits end at once, recording each wait. */
function instantTimer(): { timer: Timer; waits: number[] } {
  const waits: number[] = [];
  return {
    waits,
    timer: (fn, ms) => {
      waits.push(ms);
      fn();
      return { cancel: () => {} };
    },
  };
}

/** A timer the test ends: `asked` resolves with the wait when the loop starts waiting, `wake()` ends that wait. */
function heldTimer(): { timer: Timer; asked(): Promise<number>; wake(): void } {
  let onAsk: ((ms: number) => void) | undefined;
  let wake = () => {};
  return {
    timer: (fn, ms) => {
      wake = fn;
      onAsk?.(ms);
      return { cancel: () => {} };
    },
    asked: () => new Promise((resolve) => (onAsk = resolve)),
    wake: () => wake(),
  };
}

/** An open that throws each of `errors` in turn, then returns a watch whose caughtUp resolves. */
function openAfter(errors: Error[]): { open(): Promise<Watch>; tries(): number; stops(): number } {
  let tries = 0;
  let stops = 0;
  return {
    open: async () => {
      const err = errors[tries++];
      if (err) throw err;
      return { caughtUp: Promise.resolve(), stop: () => void stops++ };
    },
    tries: () => tries,
    stops: () => stops,
  };
}

function lineLog(): { notice(l: string): void; debug(l: string): void; lines: string[] } {
  const lines: string[] = [];
  return { lines, notice: (l) => void lines.push(`notice ${l}`), debug: (l) => void lines.push(`debug ${l}`) };
}

// What nats.js's JetStream client throws across accounts when nothing is granted: no responders, as a cause.
const noResponders = () => new errors.RequestError('no responders', { cause: new errors.NoRespondersError('$JS.API.CONSUMER.CREATE.KV_b') });

test('the one backoff doubles from its first wait, stays at its longest, and starts over on progress', () => {
  const waits = (b: Backoff, n: number) => Array.from({ length: n }, () => b.failed());
  assert.equal(waits(new Backoff({ firstMs: 250, maxMs: 5000 }), 8), [250, 500, 1000, 2000, 4000, 5000, 5000, 5000]);
  assert.equal(waits(new Backoff({ firstMs: 1000, maxMs: 30_000 }), 7), [1000, 2000, 4000, 8000, 16_000, 30_000, 30_000]);
  const b = new Backoff({ firstMs: 250, maxMs: 30_000 });
  assert.equal(waits(b, 3), [250, 500, 1000]);
  assert.is(b.failures, 3);
  b.reset();
  assert.equal(waits(b, 2), [250, 500]);
  assert.is(backoffWait({ firstMs: 250, maxMs: 30_000 }, 1), 250);
  assert.is(backoffWait({ firstMs: 250, maxMs: 30_000 }, 5000), 30_000, 'a long outage stays at the longest wait');
});

test('the waits between failed tries double from 250 ms and stay at 5000 ms', async () => {
  const { timer, waits } = instantTimer();
  let tries = 0;
  const value = await retryWithBackoff({
    attempt: async () => {
      if (++tries <= 9) throw new Error(`try ${tries}`);
      return 'done';
    },
    onFailure: () => true,
    timer,
    stopped: () => false,
    maxMs: MAX_WATCH_RETRY_MS,
  });
  assert.is(value, 'done');
  assert.is(tries, 10);
  assert.is(FIRST_RETRY_MS, 250);
  assert.is(MAX_WATCH_RETRY_MS, 5000);
  assert.equal(waits, [250, 500, 1000, 2000, 4000, 5000, 5000, 5000, 5000]);
});

test('each failure is heard with the wait that follows it, and a success after none waits not at all', async () => {
  const { timer, waits } = instantTimer();
  const heard: [string, number][] = [];
  let tries = 0;
  await retryWithBackoff({
    attempt: async () => {
      if (++tries <= 3) throw new Error(`try ${tries}`);
    },
    onFailure: (err, ms) => heard.push([(err as Error).message, ms]) > 0,
    timer,
    stopped: () => false,
    maxMs: 400,
  });
  assert.equal(heard, [
    ['try 1', 250],
    ['try 2', 400],
    ['try 3', 400],
  ]);
  assert.is(await retryWithBackoff({ attempt: async () => 7, onFailure: () => true, timer, stopped: () => false, maxMs: 400 }), 7);
  assert.is(waits.length, 3);
});

test('a failure the listener gives up on ends the loop without a wait', async () => {
  const { timer, waits } = instantTimer();
  let tries = 0;
  const value = await retryWithBackoff({
    attempt: async () => {
      tries++;
      throw new Error('closed');
    },
    onFailure: () => false,
    timer,
    stopped: () => false,
    maxMs: 400,
  });
  assert.is(value, undefined);
  assert.is(tries, 1);
  assert.equal(waits, []);
});

test('a loop stopped while it waits tries no more once the wait ends', async () => {
  const held = heldTimer();
  let stopped = false;
  let tries = 0;
  const asked = held.asked();
  const done = retryWithBackoff({
    attempt: async () => {
      tries++;
      throw new Error('missing');
    },
    onFailure: () => true,
    timer: held.timer,
    stopped: () => stopped,
    maxMs: 400,
  });
  assert.is(await asked, 250);
  stopped = true;
  held.wake();
  assert.is(await done, undefined);
  assert.is(tries, 1);
});

test('a missing bucket is said once at notice, its repeats at debug, a new reason at notice again, then that it is there', async () => {
  const { timer, waits } = instantTimer();
  const log = lineLog();
  const quoted = (name: string) => new Error(`consumer "${name}" not found`);
  const opens = openAfter([noResponders(), noResponders(), noResponders(), quoted('a1'), quoted('b2'), noResponders()]);
  const watch = waitForWatch('bucket b (>)', log, { open: opens.open, closed: () => false, timer });
  await watch.caughtUp;
  assert.is(opens.tries(), 7);
  assert.equal(waits, [250, 500, 1000, 2000, 4000, 5000]);
  const other = 'waiting for bucket b (>): consumer "…" not found';
  assert.equal(log.lines, [
    `notice ${NO_RESPONDERS}`,
    `debug ${NO_RESPONDERS} (retrying)`,
    `debug ${NO_RESPONDERS} (retrying)`,
    `notice ${other}`,
    `debug ${other} (retrying)`,
    `notice ${NO_RESPONDERS}`,
    'notice bucket b (>) is there now',
  ]);
});

test('a bucket there at the first try is watched without a line', async () => {
  const { timer, waits } = instantTimer();
  const log = lineLog();
  await waitForWatch('bucket b (>)', log, { open: openAfter([]).open, closed: () => false, timer }).caughtUp;
  assert.equal(log.lines, []);
  assert.equal(waits, []);
});

test('a watch is settled by its first answered refusal (the bucket missing or not granted), never by an ask left unanswered', async () => {
  const settledAt = (w: Watch) => {
    let done = false;
    void w.settled?.then(() => (done = true));
    return () => done;
  };
  const flush = () => new Promise((r) => setImmediate(r));
  // Unanswered twice, then refused: settled only after the refusal, before the bucket is there.
  const held = heldTimer();
  const timedOut = () => new errors.TimeoutError();
  const open = openAfter([timedOut(), timedOut(), noResponders(), noResponders()]);
  const w = waitForWatch('bucket b (>)', lineLog(), { open: open.open, closed: () => false, timer: held.timer });
  const settled = settledAt(w);
  for (let unanswered = 0; unanswered < 2; unanswered++) {
    await held.asked();
    await flush();
    assert.not.ok(settled(), `not settled after ${unanswered + 1} unanswered ask(s)`);
    held.wake();
  }
  await held.asked();
  await flush();
  assert.ok(settled(), 'settled by the refusal');
  held.wake();
  await held.asked();
  held.wake();
  await w.caughtUp;
  assert.is(open.tries(), 5);
  // A watch opened at once is settled when it has caught up.
  const at = waitForWatch('bucket b (>)', lineLog(), { ...openAfter([]), closed: () => false });
  await at.settled;
  await at.caughtUp;
});

test('stop() while waiting for the bucket ends the wait: no more tries, caughtUp resolves', async () => {
  const held = heldTimer();
  const log = lineLog();
  const opens = openAfter([noResponders(), noResponders()]);
  const asked = held.asked();
  const watch = waitForWatch('bucket b (>)', log, { open: opens.open, closed: () => false, timer: held.timer });
  assert.is(await asked, 250);
  watch.stop();
  held.wake();
  await watch.caughtUp;
  assert.is(opens.tries(), 1);
  assert.equal(log.lines, [`notice ${NO_RESPONDERS}`]);
});

test('stop() after the bucket is watched stops the watch; a watch opened after stop() is stopped at once', async () => {
  const { timer } = instantTimer();
  const opens = openAfter([noResponders()]);
  const watch = waitForWatch('bucket b (>)', lineLog(), { open: opens.open, closed: () => false, timer });
  await watch.caughtUp;
  watch.stop();
  assert.is(opens.stops(), 1);

  let stops = 0;
  let release = () => {};
  const inner = { caughtUp: Promise.resolve(), stop: () => void stops++ };
  const late = waitForWatch('bucket b (>)', lineLog(), {
    open: () => new Promise<Watch>((resolve) => (release = () => resolve(inner))),
    closed: () => false,
    timer,
  });
  late.stop();
  release();
  await late.caughtUp;
  assert.is(stops, 1);
});

test('a closed connection ends the wait without a line', async () => {
  const { timer, waits } = instantTimer();
  const log = lineLog();
  const opens = openAfter([noResponders(), noResponders()]);
  await waitForWatch('bucket b (>)', log, { open: opens.open, closed: () => true, timer }).caughtUp;
  assert.is(opens.tries(), 1);
  assert.equal(waits, []);
  assert.equal(log.lines, []);
});

test('a nats.js without the private parts the watch relies on is not waited out: one try, no wait, caughtUp rejects with the error', async () => {
  const { timer, waits } = instantTimer();
  const log = lineLog();
  const changed = new NatsInternalsError('the installed nats.js is not the one the watch was proven on');
  const opens = openAfter([changed, noResponders()]);
  const watch = waitForWatch('bucket b (>)', log, { open: opens.open, closed: () => false, timer });
  await watch.caughtUp.then(
    () => assert.unreachable('caught up'),
    (err: unknown) => assert.is(err, changed),
  );
  assert.is(opens.tries(), 1);
  assert.equal(waits, []);
  assert.equal(log.lines, []);
});

/** A bind that throws each of `errs` in turn (after calling `warn` with `line` each try, when given), then resolves 'bound'. */
function bindAfter(errs: Error[], line?: string): { bind(warn: (l: string) => void): Promise<string>; tries(): number } {
  let tries = 0;
  return {
    bind: async (warn) => {
      if (line) warn(line);
      const err = errs[tries++];
      if (err) throw err;
      return 'bound';
    },
    tries: () => tries,
  };
}

function bindLog(): { warn(l: string): void; notice(l: string): void; debug(l: string): void; lines: string[] } {
  const lines: string[] = [];
  return { lines, warn: (l) => void lines.push(`warn ${l}`), notice: (l) => void lines.push(`notice ${l}`), debug: (l) => void lines.push(`debug ${l}`) };
}

/** JetStream's 503 as nats-server 2.9 answers it while its cluster has no meta leader. */
const unavailable = () => new JetStreamApiError({ code: 503, err_code: JETSTREAM_UNAVAILABLE_CODE, description: 'JetStream system temporarily unavailable' });
const UNAVAILABLE_LINE = "warn the bus's JetStream does not answer (JetStream system temporarily unavailable): waiting for it, trying again";

test("a daemon's bind waits while the bus's JetStream does not answer (503, unanswered, no responders): said once at warning, each try after at debug, its end at notice", async () => {
  const { timer, waits } = instantTimer();
  const log = bindLog();
  const binding = bindAfter([unavailable(), new errors.TimeoutError(), noResponders(), unavailable()]);
  assert.is(await bindWhenThere(binding.bind, log, () => false, timer), 'bound');
  assert.is(binding.tries(), 5);
  assert.equal(waits, [250, 500, 1000, 2000]);
  assert.is(log.lines.length, 5, log.lines.join('\n'));
  assert.is(log.lines[0], UNAVAILABLE_LINE);
  assert.equal(
    log.lines.slice(1, 4).map((l) => l.split(' ')[0]),
    ['debug', 'debug', 'debug'],
  );
  assert.match(log.lines[4]!, /^notice the bus's JetStream answers again, after \d+\.\d s$/);
});

test("a bind's own warning is said once however many tries say it; a missing bucket is waited for at notice", async () => {
  const { timer } = instantTimer();
  const log = bindLog();
  const missing = new BucketMissingError('bucket b is missing and this login may not create it: run `server.js init` with the admin login');
  const binding = bindAfter([missing, unavailable(), missing], 'bucket b: has no bound on consumers');
  assert.is(await bindWhenThere(binding.bind, log, () => false, timer), 'bound');
  const said = log.lines.filter((l) => !l.startsWith('debug '));
  assert.equal(said.slice(0, 3), ['warn bucket b: has no bound on consumers', `notice waiting: ${missing.message}`, UNAVAILABLE_LINE]);
  assert.match(said[3]!, /^notice the bus's JetStream answers again/);
  assert.equal(said.slice(4), ['notice every bucket is there now']);
  assert.is(log.lines.filter((l) => l === 'debug bucket b: has no bound on consumers').length, 3);
});

test('a refused bucket, or JetStream refusing for good (too many replicas), ends the bind at once: thrown, no wait, no line', async () => {
  for (const err of [
    new BucketRefusedError('bucket b (stream KV_b) holds "x.>" besides its own subject $KV.b.>: refused'),
    new JetStreamApiError({ code: 503, err_code: 10023, description: 'insufficient resources' }),
  ]) {
    const { timer, waits } = instantTimer();
    const log = bindLog();
    const binding = bindAfter([err]);
    await bindWhenThere(binding.bind, log, () => false, timer).then(
      () => assert.unreachable('bound'),
      (thrown: unknown) => assert.is(thrown, err),
    );
    assert.is(binding.tries(), 1);
    assert.equal(waits, []);
    assert.equal(log.lines, []);
  }
});

test('a bind stopped while JetStream does not answer resolves undefined, saying no end', async () => {
  const held = heldTimer();
  const log = bindLog();
  let stopped = false;
  const done = bindWhenThere(bindAfter([unavailable(), unavailable()]).bind, log, () => stopped, held.timer);
  await held.asked();
  stopped = true;
  held.wake();
  assert.is(await done, undefined);
  assert.equal(log.lines, [UNAVAILABLE_LINE]);
});

test.run();
