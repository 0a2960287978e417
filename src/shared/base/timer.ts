// The one injected timer (STYLE.md's kubernetes-client anchor): every retry and re-make waits through
// a Timer handed in, so tests run the waits by hand and assert their exact sequence without sleeping.

/** Runs `fn` once after `ms`; the handle cancels it. */
export type Timer = (fn: () => void, ms: number) => { cancel(): void };

/** The real timer, unref'd: the bus connection keeps a running program alive, a stopped one need not wait for this. */
export const unrefTimer: Timer = (fn, ms) => {
  const t = setTimeout(fn, ms);
  t.unref();
  return { cancel: () => clearTimeout(t) };
};

/** Resolves after `ms` on `timer` (a wait in an async loop). */
export function sleepOn(timer: Timer, ms: number): Promise<void> {
  return new Promise((resolve) => void timer(resolve, ms));
}

/** The real timer, kept referenced: a wait that is all a program is doing (a daemon's wait for the bus at start) must keep it running. */
export const refTimer: Timer = (fn, ms) => {
  const t = setTimeout(fn, ms);
  return { cancel: () => clearTimeout(t) };
};

/** Runs `fn` once the current turn's I/O is handled, whatever `ms` says (setImmediate): a wait of zero that Node would clamp to 1 ms. */
export const immediateTimer: Timer = (fn) => {
  const t = setImmediate(fn);
  return { cancel: () => clearImmediate(t) };
};
