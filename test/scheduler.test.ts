// The settle/coalesce scheduler (DESIGN §10 --settle), driven by a fake clock: exact sequences, no sleeping.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { MAX_SETTLE_WINDOWS, Scheduler, type SchedulerTimers } from '../src/client/schedule/scheduler.ts';

/** A fake clock: timers fire only when the test advances time. */
function fakeClock() {
  let now = 0;
  let seq = 0;
  const timers = new Map<number, { at: number; fn: () => void }>();
  const api: SchedulerTimers = {
    timer: (fn, ms) => {
      const id = ++seq;
      timers.set(id, { at: now + ms, fn });
      return { cancel: () => void timers.delete(id) };
    },
  };
  return {
    timers: api,
    now: () => now,
    async advance(ms: number) {
      const until = now + ms;
      for (;;) {
        const next = [...timers.entries()].sort((a, b) => a[1].at - b[1].at)[0];
        if (!next || next[1].at > until) break;
        timers.delete(next[0]);
        now = next[1].at;
        next[1].fn();
        await flush();
      }
      now = until;
    },
  };
}

const flush = () => new Promise((r) => setImmediate(r));

function recorder() {
  const runs: string[] = [];
  let release: (() => void) | undefined;
  let hold = false;
  return {
    runs,
    hold() {
      hold = true;
    },
    release() {
      hold = false;
      release?.();
      release = undefined;
    },
    run: async (module: string, full: boolean) => {
      runs.push(`${module}${full ? '!' : ''}`);
      if (hold) await new Promise<void>((r) => (release = r));
    },
  };
}

test('a burst of changes within the settle window gives one run', async () => {
  const clock = fakeClock();
  const r = recorder();
  const s = new Scheduler(20, r.run, () => {}, clock.timers, clock.now);
  for (let i = 0; i < 5; i++) {
    s.schedule('web');
    await clock.advance(5);
  }
  assert.equal(r.runs, []);
  await clock.advance(20);
  assert.equal(r.runs, ['web']);
});

test('a steady stream is cut after the longest settle', async () => {
  const clock = fakeClock();
  const r = recorder();
  const s = new Scheduler(20, r.run, () => {}, clock.timers, clock.now);
  for (let i = 0; i < MAX_SETTLE_WINDOWS * 4; i++) {
    s.schedule('web');
    await clock.advance(10);
  }
  assert.ok(r.runs.length >= 1, 'ran during the stream');
  assert.ok(r.runs.length <= 4, `ran ${r.runs.length} times`);
});

test('changes while a run is in flight fold into exactly one more run', async () => {
  const clock = fakeClock();
  const r = recorder();
  const s = new Scheduler(0, r.run, () => {}, clock.timers, clock.now);
  r.hold();
  s.schedule('web');
  await clock.advance(0);
  assert.equal(r.runs, ['web']);
  s.schedule('web');
  s.schedule('web', true);
  s.schedule('web');
  await clock.advance(100);
  assert.equal(r.runs, ['web'], 'nothing runs beside the one in flight');
  r.release();
  await flush();
  await clock.advance(0);
  assert.equal(r.runs, ['web', 'web!'], 'one more run, full because one of the folded asks was');
});

test('settle 0 runs at once, modules apart from each other', async () => {
  const clock = fakeClock();
  const r = recorder();
  const s = new Scheduler(0, r.run, () => {}, clock.timers, clock.now);
  s.schedule('a');
  s.schedule('b', true);
  await clock.advance(0);
  assert.equal(r.runs.sort(), ['a', 'b!']);
});

test('no more modules run at once than the concurrency allows, and the rest follow', async () => {
  const clock = fakeClock();
  let running = 0;
  let most = 0;
  const done: string[] = [];
  const releases: (() => void)[] = [];
  const s = new Scheduler(
    0,
    async (m) => {
      running++;
      most = Math.max(most, running);
      await new Promise<void>((r) => releases.push(r));
      running--;
      done.push(m);
    },
    () => {},
    clock.timers,
    clock.now,
    2,
  );
  for (const m of ['a', 'b', 'c', 'd', 'e']) s.schedule(m);
  await clock.advance(0);
  assert.is(running, 2);
  while (done.length < 5) {
    releases.shift()?.();
    await flush();
    await clock.advance(0);
  }
  assert.is(most, 2);
  assert.equal(done.sort(), ['a', 'b', 'c', 'd', 'e']);
});

test('a run that throws is reported and does not stop the module', async () => {
  const clock = fakeClock();
  const errors: string[] = [];
  let calls = 0;
  const s = new Scheduler(
    0,
    async () => {
      calls++;
      throw new Error('boom');
    },
    (m, e) => errors.push(`${m}: ${(e as Error).message}`),
    clock.timers,
    clock.now,
  );
  s.schedule('a');
  await clock.advance(0);
  await flush();
  s.schedule('a');
  await clock.advance(0);
  await flush();
  assert.is(calls, 2);
  assert.equal(errors, ['a: boom', 'a: boom']);
});

test('with --settle 0 a change starts on the next turn, not on a clamped 1 ms timer; a burst in one turn is still one fill', async () => {
  const used: string[] = [];
  const queued: (() => void)[] = [];
  const timers: SchedulerTimers = {
    timer: (fn) => {
      used.push('timer');
      const t = setTimeout(fn, 0);
      return { cancel: () => clearTimeout(t) };
    },
    immediate: (fn) => {
      used.push('immediate');
      const i = queued.push(fn) - 1;
      return { cancel: () => void (queued[i] = () => {}) };
    },
  };
  const runs: string[] = [];
  const scheduler = new Scheduler(
    0,
    async (m) => void runs.push(m),
    () => {},
    timers,
  );
  for (let i = 0; i < 5; i++) scheduler.schedule('web');
  assert.equal(runs, [], 'nothing runs within the turn that scheduled it');
  for (const fn of queued.splice(0)) fn();
  await flush();
  assert.equal(runs, ['web']);
  assert.ok(used.length > 0 && used.every((u) => u === 'immediate'), used.join());
});

test.run();
