// Waiting for a bucket (src/shared/retry.ts, waitForWatch in src/shared/bus.ts): the waits, the lines and
// stopping, with the sleep and the watch handed in, so no time passes and no server runs.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { MAX_WATCH_RETRY_MS, waitForWatch, type Watch } from '../src/shared/bus.ts';
import { FIRST_RETRY_MS, retryWithBackoff, type Sleep } from '../src/shared/retry.ts';

const NO_RESPONDERS = 'waiting for bucket b (>): no responders: the bucket is missing or not granted to this account';

/** A sleep that resolves at once, recording each wait. */
function instantSleep(): { sleep: Sleep; waits: number[] } {
  const waits: number[] = [];
  return { waits, sleep: async (ms) => void waits.push(ms) };
}

/** A sleep the test ends: `asked` resolves with the wait when the loop starts sleeping, `wake()` ends that sleep. */
function heldSleep(): { sleep: Sleep; asked(): Promise<number>; wake(): void } {
  let onAsk: ((ms: number) => void) | undefined;
  let wake = () => {};
  return {
    sleep: (ms) => new Promise((resolve) => {
      wake = resolve;
      onAsk?.(ms);
    }),
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

const noResponders = () => new Error('jetstream is not enabled');

test('the waits between failed tries double from 250 ms and stay at 5000 ms', async () => {
  const { sleep, waits } = instantSleep();
  let tries = 0;
  const value = await retryWithBackoff({
    attempt: async () => {
      if (++tries <= 9) throw new Error(`try ${tries}`);
      return 'done';
    },
    onFailure: () => true,
    sleep,
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
  const { sleep, waits } = instantSleep();
  const heard: [string, number][] = [];
  let tries = 0;
  await retryWithBackoff({
    attempt: async () => {
      if (++tries <= 3) throw new Error(`try ${tries}`);
    },
    onFailure: (err, ms) => heard.push([(err as Error).message, ms]) > 0,
    sleep,
    stopped: () => false,
    maxMs: 400,
  });
  assert.equal(heard, [['try 1', 250], ['try 2', 400], ['try 3', 400]]);
  assert.is(await retryWithBackoff({ attempt: async () => 7, onFailure: () => true, sleep, stopped: () => false, maxMs: 400 }), 7);
  assert.is(waits.length, 3);
});

test('a failure the listener gives up on ends the loop without a wait', async () => {
  const { sleep, waits } = instantSleep();
  let tries = 0;
  const value = await retryWithBackoff({
    attempt: async () => {
      tries++;
      throw new Error('closed');
    },
    onFailure: () => false,
    sleep,
    stopped: () => false,
    maxMs: 400,
  });
  assert.is(value, undefined);
  assert.is(tries, 1);
  assert.equal(waits, []);
});

test('a loop stopped while it waits tries no more once the wait ends', async () => {
  const held = heldSleep();
  let stopped = false;
  let tries = 0;
  const asked = held.asked();
  const done = retryWithBackoff({
    attempt: async () => {
      tries++;
      throw new Error('missing');
    },
    onFailure: () => true,
    sleep: held.sleep,
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
  const { sleep, waits } = instantSleep();
  const log = lineLog();
  const quoted = (name: string) => new Error(`consumer "${name}" not found`);
  const opens = openAfter([noResponders(), noResponders(), noResponders(), quoted('a1'), quoted('b2'), noResponders()]);
  const watch = waitForWatch('bucket b (>)', log, { open: opens.open, closed: () => false, sleep });
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
  const { sleep, waits } = instantSleep();
  const log = lineLog();
  await waitForWatch('bucket b (>)', log, { open: openAfter([]).open, closed: () => false, sleep }).caughtUp;
  assert.equal(log.lines, []);
  assert.equal(waits, []);
});

test('stop() while waiting for the bucket ends the wait: no more tries, caughtUp resolves', async () => {
  const held = heldSleep();
  const log = lineLog();
  const opens = openAfter([noResponders(), noResponders()]);
  const asked = held.asked();
  const watch = waitForWatch('bucket b (>)', log, { open: opens.open, closed: () => false, sleep: held.sleep });
  assert.is(await asked, 250);
  watch.stop();
  held.wake();
  await watch.caughtUp;
  assert.is(opens.tries(), 1);
  assert.equal(log.lines, [`notice ${NO_RESPONDERS}`]);
});

test('stop() after the bucket is watched stops the watch; a watch opened after stop() is stopped at once', async () => {
  const { sleep } = instantSleep();
  const opens = openAfter([noResponders()]);
  const watch = waitForWatch('bucket b (>)', lineLog(), { open: opens.open, closed: () => false, sleep });
  await watch.caughtUp;
  watch.stop();
  assert.is(opens.stops(), 1);

  let stops = 0;
  let release = () => {};
  const inner = { caughtUp: Promise.resolve(), stop: () => void stops++ };
  const late = waitForWatch('bucket b (>)', lineLog(), {
    open: () => new Promise<Watch>((resolve) => (release = () => resolve(inner))),
    closed: () => false,
    sleep,
  });
  late.stop();
  release();
  await late.caughtUp;
  assert.is(stops, 1);
});

test('a closed connection ends the wait without a line', async () => {
  const { sleep, waits } = instantSleep();
  const log = lineLog();
  const opens = openAfter([noResponders(), noResponders()]);
  await waitForWatch('bucket b (>)', log, { open: opens.open, closed: () => true, sleep }).caughtUp;
  assert.is(opens.tries(), 1);
  assert.equal(waits, []);
  assert.equal(log.lines, []);
});

test.run();
