// Drift (DESIGN §14): the engine puts back what it wrote when something else changes it. It
// remembers what it last wrote of each file, watches every `owned` file and `managed` block, and
// knocks for the module within a second of a change; the fill that follows is answered `restored`.
// A `seed` is not watched: once written it is the program's (removal.ts leaves it for the same reason).
import type { Logger } from '../shared/cli/log.ts';
import { errorText } from '../shared/base/errors.ts';
import { LEFT_REASON } from '../shared/contract/fill-protocol.ts';
import { observe, type Held } from './drift-mark.ts';
import { DriftMemory, heldKey, type DriftVerdict } from './drift-memory.ts';
import { DRIFT_POLL_MS, DriftWatches } from './drift-watch.ts';

/** How long after a file's first event its burst is gathered before it is compared: an editor's save is several events. */
export const DRIFT_SETTLE_MS = 50;

/** What the drift watch needs. */
export type DriftOptions = {
  /** Where a change, a file left and a directory that cannot be watched are said. */
  log: Logger;
  /** Knocks for a module whose file changed on disk, so its client sends its files again. */
  knock(module: string): void;
  /** The clock the window of DESIGN §14's five changes is counted on (ms). */
  now?: () => number;
  /** DRIFT_SETTLE_MS unless a test says otherwise. */
  settleMs?: number;
  /** DRIFT_POLL_MS unless a test says otherwise. */
  pollMs?: number;
};

/** The engine's side of drift, as a fill and a removal use it. */
export type Drift = {
  /** Whether the file is left as it is for this content: answered `left` again, not written. */
  isLeft(held: Held): boolean;
  /** The disk differs from what a fill brings: `written` (another content), `restored` (put back) or `left` (stops watching it). */
  judge(held: Held): DriftVerdict;
  /** The disk holds `held` now (written, restored or unchanged): remembered and watched. */
  hold(held: Held): void;
  /** The file is not the engine's any more (a seed now, or about to be removed): no longer remembered or watched. */
  forget(module: string, path: string): void;
  /** Closes every watch; no knock after. */
  close(): void;
};

/** Starts the drift watch: nothing is watched until a fill holds a file. */
export function createDrift(opts: DriftOptions): Drift {
  const { log } = opts;
  const pollMs = opts.pollMs ?? DRIFT_POLL_MS;
  const memory = new DriftMemory(opts.now ?? Date.now);
  const pending = new Set<string>();
  let timer: NodeJS.Timeout | undefined;
  let closed = false;

  // Compared with what the engine last wrote, never timed: its own write holds what it remembers, so it knocks for nothing.
  const check = async () => {
    timer = undefined;
    const keys = [...pending];
    pending.clear();
    const modules = new Set<string>();
    for (const key of keys) {
      const held = memory.watched(key);
      if (!held || (await observe(held)) || memory.watched(key) !== held) continue;
      if (memory.sawDrift(key)) log.notice(`${held.path} of ${held.module} changed on disk by something else: knocking for ${held.module}`);
      modules.add(held.module);
    }
    if (!closed) for (const module of modules) opts.knock(module);
  };
  const watches = new DriftWatches(
    (keys) => {
      for (const key of keys) pending.add(key);
      timer ??= setTimeout(() => void check().catch((err: Error) => log.error(`drift check failed: ${err.message}`)), opts.settleMs ?? DRIFT_SETTLE_MS);
    },
    (dir, err) => log.warn(`cannot watch ${dir} (${errorText(err)}): its files the engine wrote are polled every ${pollMs} ms instead`),
    { pollMs },
  );

  return {
    isLeft: (held) => memory.isLeft(held),
    judge(held) {
      const verdict = memory.judge(held);
      if (verdict === 'left') {
        watches.remove(held.target, heldKey(held.module, held.path));
        log.warn(`${held.path} of ${held.module}: ${LEFT_REASON}`);
      }
      return verdict;
    },
    hold(held) {
      // A request finished after close() would set a watch nobody closes.
      if (closed) return;
      const key = heldKey(held.module, held.path);
      const before = memory.watched(key);
      if (before && before.target !== held.target) watches.remove(before.target, key);
      memory.hold(held);
      watches.add(held.target, key);
    },
    forget(module, path) {
      const before = memory.forget(module, path);
      if (before) watches.remove(before.target, heldKey(module, path));
    },
    close() {
      closed = true;
      clearTimeout(timer);
      watches.close();
    },
  };
}
