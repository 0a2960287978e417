// What the verb's `health` answers (DESIGN §6): an entry per assignment whose plan the seat holds or
// cannot compose, kept in the seat's memory as passes go. Keys are `<node>.<module>`; a rollout's
// entries (keyed `<module>`, §12) will sit in the same key order beside them.
import { compareKeys } from '../../shared/contract/keys.ts';

/** Why a plan is not composed: `held` (composition missing or unpublished) or `failed` (it cannot be composed). */
export type HealthState = 'held' | 'failed';

/** One entry of the verb's `health`. */
export type HealthEntry = {
  /** The assignment's node. */
  node: string;
  /** The assignment's module. */
  module: string;
  /** The build of the composition, when one is known. */
  build?: string;
  /** Held or failed. */
  state: HealthState;
  /** Why, naming the field or path when the composition or a name is at fault. */
  reason: string;
  /** ISO time this state and reason began. */
  since: string;
  /** The passes this state and reason have lasted, counting the one they began in. */
  passes: number;
};

/** What a key is set to; the book keeps `since` and `passes`. */
export type HealthStanding = Omit<HealthEntry, 'since' | 'passes'>;

/** Longest reason an entry keeps, in characters: a composition with thousands of bad names is said, not repeated whole in every reply. */
export const MAX_REASON_CHARS = 1024;

/** A standing with when it began: the time, and the count of counted passes then. */
type Kept = HealthStanding & { sinceMs: number; began: number };

/** The entries, by key, and the count of passes that moved an input (the ones an entry lasts). */
export class HealthBook {
  readonly #kept = new Map<string, Kept>();
  #sorted: readonly string[] | undefined;
  #counted = 0;

  /** `now` is the clock, in ms (injected so tests need not wait). */
  constructor(private readonly now: () => number = Date.now) {}

  /** Starts a pass; one that counts (an input moved, not a retry of writes) is one more pass for every entry still there. */
  beginPass(counts: boolean): void {
    if (counts) this.#counted++;
  }

  /** Sets a key's standing; `since` and `passes` start again when its state or reason changes, and last otherwise. */
  set(key: string, standing: HealthStanding): void {
    const reason = clipReason(standing.reason);
    const known = this.#kept.get(key);
    if (!known) this.#sorted = undefined;
    const lasts = known !== undefined && known.state === standing.state && known.reason === reason;
    // A held module's keys are set again every pass: one that stands as it stood costs nothing.
    if (lasts && known.build === standing.build) return;
    this.#kept.set(key, { ...standing, reason, sinceMs: lasts ? known.sinceMs : this.now(), began: lasts ? known.began : this.#counted });
  }

  /** Drops a key's entry: its plan was composed, or its assignment went. */
  clear(key: string): void {
    if (this.#kept.delete(key)) this.#sorted = undefined;
  }

  /** Every key with an entry, in key order (sorted once per change of the set of keys). */
  keys(): readonly string[] {
    return (this.#sorted ??= [...this.#kept.keys()].sort(compareKeys));
  }

  /** A key's entry as the verb answers it, or undefined when it has none. */
  entry(key: string): HealthEntry | undefined {
    const kept = this.#kept.get(key);
    if (!kept) return undefined;
    const { sinceMs, began, build, ...rest } = kept;
    return {
      node: rest.node,
      module: rest.module,
      ...(build === undefined ? {} : { build }),
      state: rest.state,
      reason: rest.reason,
      since: new Date(sinceMs).toISOString(),
      passes: this.#counted - began + 1,
    };
  }
}

function clipReason(reason: string): string {
  return reason.length <= MAX_REASON_CHARS ? reason : `${reason.slice(0, MAX_REASON_CHARS)}… (${reason.length - MAX_REASON_CHARS} more characters)`;
}
