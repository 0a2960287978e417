// What one composition pass did (DESIGN §4), as the pass loop, its reading and its health fill it in.

/** The input a composer is fed: each bucket's current values, as watches deliver them. */
export type InputName = 'assignments' | 'modules' | 'plans';

/**
 * What one pass did, for logs and tests. A pass is one run started by a change of the assignments
 * or the compositions after the load gate (changes arriving meanwhile are folded into the next
 * pass), or by the retry of writes that failed; a held module counts one more pass in a row for
 * each pass an input change started, whichever keys the pass visited.
 */
export type PassSummary = {
  /** The pass's number, from 1. */
  pass: number;
  /** The keys whose plan this pass composed (only those its changes touched). */
  composed: string[];
  /** The keys whose plan it wrote (composed and different from the stored one). */
  written: string[];
  /** The keys whose plan it deleted: their assignment is gone. */
  retired: string[];
  /** Every key of a module held at the end of the pass: its stored plan is kept as it is. */
  held: string[];
  /** The keys it visited whose assignment, plan or write failed (said on provisioner_health). */
  failed: string[];
};

/** The keys the next pass visits: those to compose again, and the stored plans that may have lost their assignment. */
export class PassKeys {
  /** Keys to compose again: their assignment or composition changed, their write failed, or their stored plan moved. */
  dirty = new Set<string>();
  /** Stored plans that may have lost their assignment. */
  orphans = new Set<string>();

  /** The keys to compose, in key order; those marked from now on wait for the next pass. */
  takeDirty(): string[] {
    const keys = [...this.dirty].sort();
    this.dirty = new Set();
    return keys;
  }

  /** The stored plans to check for an assignment, in key order; those marked from now on wait for the next pass. */
  takeOrphans(): string[] {
    const keys = [...this.orphans].sort();
    this.orphans = new Set();
    return keys;
  }

  /** Whether any key waits for a pass. */
  get waiting(): boolean {
    return this.dirty.size + this.orphans.size > 0;
  }
}
