// The nodes' reports as the metrics count them: each module's state on each node and the restores
// its files' `drift.count` say, kept per key from the seat's watch of mesh-provisioner_applied.
import { decodeJson } from '../../shared/contract/decode.ts';
import { MAX_PLAN_BYTES } from '../../shared/contract/limits.ts';
import { REPORT_STATES, ReportSchema } from '../../shared/contract/report.ts';

/** A report's state (`applied`, `waiting`, `failed`, `removed`). */
export type ReportState = (typeof REPORT_STATES)[number];

/** What one key's latest report counts for: its state and its files' restores; `outOfShape` when it does not validate. */
type Counted = { state: ReportState | 'outOfShape'; restores: number };

/** Counts of the latest report of every key, kept up to date one report at a time. */
export class ReportTally {
  readonly #byKey = new Map<string, Counted>();
  readonly #states = new Map<Counted['state'], number>();
  #restores = 0;

  /** A report seen under `key` (null: deleted): the counts drop what the key said before and add what it says now. */
  see(key: string, value: Uint8Array | null): void {
    const before = this.#byKey.get(key);
    if (before) this.#add(before, -1);
    if (!value) return void this.#byKey.delete(key);
    const now = countOf(value);
    this.#byKey.set(key, now);
    this.#add(now, 1);
  }

  /** How many keys' latest report is in `state`. */
  inState(state: ReportState): number {
    return this.#states.get(state) ?? 0;
  }

  /** How many keys' latest report does not validate. */
  outOfShape(): number {
    return this.#states.get('outOfShape') ?? 0;
  }

  /** The sum of every latest report's files' `drift.count`. */
  restores(): number {
    return this.#restores;
  }

  #add(counted: Counted, sign: 1 | -1): void {
    this.#states.set(counted.state, (this.#states.get(counted.state) ?? 0) + sign);
    this.#restores += sign * counted.restores;
  }
}

/** A report's bytes as the tally counts them: validated as every value from the bus is (DESIGN §3). */
function countOf(value: Uint8Array): Counted {
  const report = decodeJson(ReportSchema, value, { maxBytes: MAX_PLAN_BYTES });
  if (!report.ok) return { state: 'outOfShape', restores: 0 };
  let restores = 0;
  for (const file of report.value.files) restores += file.drift?.count ?? 0;
  return { state: report.value.state, restores };
}
