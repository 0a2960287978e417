// What the engine last wrote per module and path, and how often something else changed it since
// (DESIGN §14): what tells a restore from a new write, and when a file is left as it is. In memory
// only: the engine's restart starts again, as §14 says.
import { DRIFT_LIMIT, DRIFT_WINDOW_MS } from '../shared/contract/fill-protocol.ts';
import { sameHeld, type Held } from './drift-mark.ts';

/** What a fill does with a file whose disk differs from what it brings. */
export type DriftVerdict = 'written' | 'restored' | 'left';

type Entry = {
  held: Held;
  /** When a fill found it changed by something else, within the window. */
  changes: number[];
  /** Left as it is: not written, not watched, until another content comes. */
  left: boolean;
  /** Seen changed on disk and not put back yet (said once). */
  drifted: boolean;
};

/** The key of a file: a path may hold several modules' `managed` blocks, each the engine's own. */
export function heldKey(module: string, path: string): string {
  return `${module}\n${path}`;
}

/** The engine's memory of what it wrote; `now` is the clock the window is counted on. */
export class DriftMemory {
  readonly #entries = new Map<string, Entry>();

  constructor(private readonly now: () => number) {}

  /** What is held under a key, unless it was left. */
  watched(key: string): Held | undefined {
    const entry = this.#entries.get(key);
    return entry && !entry.left ? entry.held : undefined;
  }

  /** Whether the file was left as it is for this very content (a fill bringing it is answered `left` again). */
  isLeft(held: Held): boolean {
    const entry = this.#entries.get(heldKey(held.module, held.path));
    return entry !== undefined && entry.left && sameHeld(entry.held, held);
  }

  /**
   * The disk differs from what a fill brings. Another content than the last written is a new write.
   * The same content is a change by something else: put back (`restored`), unless it is the
   * DRIFT_LIMIT-th such change within DRIFT_WINDOW_MS, which is `left` — so the reason's count is
   * the changes seen, each of them found by a fill.
   */
  judge(held: Held): DriftVerdict {
    const entry = this.#entries.get(heldKey(held.module, held.path));
    if (!entry || !sameHeld(entry.held, held)) return 'written';
    const now = this.now();
    entry.changes = entry.changes.filter((at) => now - at < DRIFT_WINDOW_MS);
    entry.changes.push(now);
    if (entry.changes.length < DRIFT_LIMIT) return 'restored';
    entry.left = true;
    return 'left';
  }

  /** The disk holds `held` now (written, restored or found unchanged); another content than the last starts the count again. */
  hold(held: Held): void {
    const key = heldKey(held.module, held.path);
    const entry = this.#entries.get(key);
    if (entry && sameHeld(entry.held, held)) {
      entry.drifted = false;
      return;
    }
    this.#entries.set(key, { held, changes: [], left: false, drifted: false });
  }

  /** Notes that the file was seen changed on disk; true the first time until it is held again. */
  sawDrift(key: string): boolean {
    const entry = this.#entries.get(key);
    if (!entry || entry.drifted) return false;
    entry.drifted = true;
    return true;
  }

  /** Drops a file that is not the engine's any more (removed, or a seed now); returns what was held. */
  forget(module: string, path: string): Held | undefined {
    const key = heldKey(module, path);
    const entry = this.#entries.get(key);
    this.#entries.delete(key);
    return entry?.held;
  }
}
