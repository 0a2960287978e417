// Coalesces a module's changes (DESIGN §10 --settle): one fill after a burst, never two at once.
import { immediateTimer, refTimer, type Timer } from '../../shared/base/timer.ts';

/**
 * The timers a scheduler uses, handed in so tests can drive time: the settle window's `timer`, and
 * `immediate` for a fill that starts at once (`--settle 0`, a cut burst) once the current turn's I/O
 * is handled — Node clamps `setTimeout(fn, 0)` to 1 ms, a millisecond every change would pay.
 * Without `immediate` a zero delay goes through `timer`.
 */
export type SchedulerTimers = { timer: Timer; immediate?: Timer };

/** The real ones: a referenced timeout (a pending fill keeps the client running) and setImmediate. */
const REAL_TIMERS: SchedulerTimers = { timer: refTimer, immediate: immediateTimer };

/** Runs one module's fill; `full` asks for every file again (start, knock, bus back). */
export type RunModule = (module: string, full: boolean) => Promise<void>;

type Slot = { timer?: { cancel(): void }; running?: Promise<void>; pending: boolean; full: boolean; since?: number };

/** A burst is cut after this many settle windows, so a steady stream of changes still fills. */
export const MAX_SETTLE_WINDOWS = 10;

/** How many modules fill at once: a thousand archives are not all fetched together. */
export const DEFAULT_CONCURRENCY = 32;

/**
 * Per module: a change arms a settle window that each further change re-arms (up to
 * MAX_SETTLE_WINDOWS); changes that arrive while its fill runs are folded into one more fill.
 */
export class Scheduler {
  readonly #slots = new Map<string, Slot>();
  readonly #queue = new Set<string>();
  #active = 0;

  constructor(
    private readonly settleMs: number,
    private readonly run: RunModule,
    private readonly onError: (module: string, err: unknown) => void,
    private readonly timers: SchedulerTimers = REAL_TIMERS,
    private readonly now: () => number = Date.now,
    private readonly concurrency = DEFAULT_CONCURRENCY,
  ) {}

  /** Asks for a fill of `module` after the settle window. */
  schedule(module: string, full = false): void {
    const slot = this.#slots.get(module) ?? this.#slots.set(module, { pending: false, full: false }).get(module)!;
    slot.pending = true;
    slot.full ||= full;
    if (slot.running) return;
    const now = this.now();
    slot.since ??= now;
    this.#clear(slot);
    const cut = this.settleMs === 0 || now - slot.since >= this.settleMs * MAX_SETTLE_WINDOWS;
    const timer = cut ? (this.timers.immediate ?? this.timers.timer) : this.timers.timer;
    slot.timer = timer(() => this.#start(module), cut ? 0 : this.settleMs);
  }

  /** Resolves when no module has a fill pending or running. */
  async idle(): Promise<void> {
    for (;;) {
      const busy = [...this.#slots.values()].filter((s) => s.running || s.pending);
      if (busy.length === 0) return;
      await Promise.all(busy.map((s) => s.running ?? new Promise((r) => setTimeout(r, 5))));
    }
  }

  /** Whether no module has a fill pending or running. */
  quiet(): boolean {
    for (const s of this.#slots.values()) if (s.running || s.pending) return false;
    return true;
  }

  #clear(slot: Slot): void {
    slot.timer?.cancel();
  }

  #start(module: string): void {
    const slot = this.#slots.get(module);
    if (!slot || slot.running || !slot.pending) return;
    slot.timer = undefined;
    if (this.#active >= this.concurrency) {
      this.#queue.add(module);
      return;
    }
    this.#active++;
    slot.since = undefined;
    slot.pending = false;
    const full = slot.full;
    slot.full = false;
    slot.running = this.run(module, full)
      .catch((err) => this.onError(module, err))
      .finally(() => {
        this.#active--;
        slot.running = undefined;
        if (slot.pending) this.#start(module);
        else if (slot.timer === undefined) this.#slots.delete(module);
        const next = this.#queue.values().next();
        if (!next.done) {
          this.#queue.delete(next.value);
          this.#start(next.value);
        }
      });
  }
}
