// A clock for tests of what waits through a Timer (src/shared/base/timer.ts): time moves only when the
// test advances it, so a test asserts the exact waits and their order without sleeping.
import type { Timer } from '../../src/shared/base/timer.ts';

/** Lets every promise callback and immediate queued so far run. */
export const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A fake clock: a Timer whose waits run only when `advance` reaches them, and the time it says now. */
export function fakeClock() {
  let now = 0;
  let seq = 0;
  const waits = new Map<number, { at: number; fn: () => void }>();
  const timer: Timer = (fn, ms) => {
    const id = ++seq;
    waits.set(id, { at: now + ms, fn });
    return { cancel: () => void waits.delete(id) };
  };
  return {
    timer,
    now: () => now,
    /** The waits still armed, as ms from now, in the order they were asked. */
    pending: () => [...waits.values()].map((w) => w.at - now),
    /** Moves time `ms` on, running each wait that comes due in turn and what it set off. */
    async advance(ms: number): Promise<void> {
      const until = now + ms;
      for (;;) {
        const next = [...waits.entries()].sort((a, b) => a[1].at - b[1].at)[0];
        if (!next || next[1].at > until) break;
        waits.delete(next[0]);
        now = next[1].at;
        next[1].fn();
        await flush();
      }
      now = until;
      await flush();
    },
  };
}

/** A clock at real pace that a test also moves on at once (`jump`): its Timer's waits fire in real time, or when a jump brings them due. */
export type JumpClock = { now(): number; timer: Timer; jump(ms: number): void };

/**
 * A clock for a program on a real bus: time runs as the wall clock's plus the jumps made so far, so
 * a wave's `wait` passes at a jump, not in a sleep, and a bus's timestamps stay comparable with it.
 */
export function jumpClock(): JumpClock {
  let skew = 0;
  const now = () => Date.now() + skew;
  const waits = new Set<{ at: number; fire(): void; arm(): void }>();
  const timer: Timer = (fn, ms) => {
    let t: NodeJS.Timeout | undefined;
    const wait = {
      at: now() + ms,
      fire: () => {
        clearTimeout(t);
        if (waits.delete(wait)) fn();
      },
      // Unref'd as the real timer is: a wait never holds the test open.
      arm: () => {
        clearTimeout(t);
        t = setTimeout(wait.fire, Math.max(0, wait.at - now()));
        t.unref();
      },
    };
    waits.add(wait);
    wait.arm();
    return { cancel: () => (clearTimeout(t), void waits.delete(wait)) };
  };
  return {
    now,
    timer,
    jump(ms) {
      skew += ms;
      for (const wait of [...waits].sort((a, b) => a.at - b.at)) {
        if (wait.at <= now()) wait.fire();
        else wait.arm();
      }
    },
  };
}
