// The plan writes a composition pass asks (DESIGN §4): each listed for the pass's summary, its digest
// kept while in flight so its echo on the bus is known from someone else's change, its end recorded
// in the inputs, or its key marked for the next pass when the bus refused it.
import { errorText } from '../../shared/base/errors.ts';
import type { Logger } from '../../shared/cli/log.ts';
import type { ComposerInputs } from './inputs.ts';
import type { PassKeys } from './pass-summary.ts';
import type { PassWrites } from './pass-writes.ts';
import type { PlanWriter } from './plan-writer.ts';

/** The composer's writes through the plan writer, with the digests in flight and the failures of the running pass. */
export class KeyWrites {
  /** The digest of each write in flight (null: a delete), to know its echo from a change by someone else. */
  readonly writing = new Map<string, string | null>();
  /** Writes of the running pass that failed: their keys wait for the retry. */
  #failed = 0;

  constructor(
    private readonly writer: PlanWriter,
    private readonly inputs: ComposerInputs,
    private readonly keys: PassKeys,
    private readonly log: Logger,
  ) {}

  /**
   * Asks for a put of `bytes` (null: a delete), listed in `writes`, once the writer has room; returns
   * the wait for room, if any. Writes are asked in bursts while it has room, without yielding (no
   * promise when there is room), so each burst leaves in one flush.
   */
  write(writes: PassWrites, key: string, bytes: Uint8Array | null, digest: string | null): Promise<void> | undefined {
    const room = this.writer.room();
    if (room) return room.then(() => this.#ask(writes, key, bytes, digest));
    this.#ask(writes, key, bytes, digest);
    return undefined;
  }

  #ask(writes: PassWrites, key: string, bytes: Uint8Array | null, digest: string | null): void {
    const put = bytes !== null;
    const i = writes.add(key, put);
    this.writing.set(key, digest);
    this.writer.write(key, bytes, (outcome) => {
      // The pass waits for every write it asked: its end is counted whatever else happens here.
      writes.end(i, outcome.ok);
      if (this.writing.get(key) === digest) this.writing.delete(key);
      if (outcome.ok) return void this.inputs.recordPlan(key, digest, outcome.revision);
      // A write the bus refused is tried again by the next pass (an input change's, or the retry's); the others go on.
      // At warning: it is tried again, and a cluster losing a server refuses writes for a moment; one still failing is said on health.
      this.log.warn(`mesh-provisioner_plans ${key}: ${put ? 'put' : 'delete'} failed: ${errorText(outcome.error, { name: true })}; trying again`);
      (put ? this.keys.dirty : this.keys.orphans).add(key);
      this.#failed++;
    });
  }

  /** The writes that failed since the last call (a pass's end), counted from zero again. */
  takeFailed(): number {
    const failed = this.#failed;
    this.#failed = 0;
    return failed;
  }
}
