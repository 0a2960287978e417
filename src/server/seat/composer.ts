// The composition passes of DESIGN §4: a load gate, then one coalesced pass per input change. A
// pass visits only the keys its changes touch: an assignment change composes its own key, a
// composition change its module's keys; what is unchanged is neither decoded nor composed again.
// The rollouts are asked, never called back: the seat routes what they hear and what they ask.
import { nodeModuleKey, parseNodeModuleKey } from '../../shared/contract/keys.ts';
import type { Logger } from '../../shared/cli/log.ts';
import type { Health } from '../../shared/contract/verb.ts';
import { errorText } from '../../shared/base/errors.ts';
import { ComposerHealth, HELD_PASSES_BEFORE_HEALTH } from './health.ts';
import { HealthBook } from './health-book.ts';
import { ComposerInputs } from './inputs.ts';
import { KeyWrites } from './key-writes.ts';
import { InputReader, type CompositionHeard } from './input-reader.ts';
import { wantedPlan, type CompositionSelector, type KeyPlanContext } from './key-plan.ts';
import { PassHealth } from './pass-health.ts';
import { PassKeys, type InputName, type PassSummary } from './pass-summary.ts';
import { PassWrites } from './pass-writes.ts';
import { DEFAULT_WRITES_IN_FLIGHT, PlanWriter, type PlanStore } from './plan-writer.ts';
import { WriteRetry, type WriteRetryOptions } from './write-retry.ts';

export { HELD_PASSES_BEFORE_HEALTH, type InputName, type PassSummary };

/** Where a pass writes and says things: the plans bucket and the health subject, handed in. */
export type ComposerSink = PlanStore & { health(line: Health): void };

/** How a composer writes, and what it asks and tells of the rollouts. */
export type ComposerOptions = {
  /** Plan writes in flight at most (DEFAULT_WRITES_IN_FLIGHT). */
  writesInFlight?: number;
  /** How writes that failed are tried again (server/seat/write-retry.ts defaults). */
  retry?: WriteRetryOptions;
  /** The clock of the health entries' `since`, in ms (Date.now). */
  now?: () => number;
  /** The rollouts (DESIGN §12) that choose each key's composition; none: every plan from the newest, at once. */
  select?: CompositionSelector;
  /** Hears each module's composition as it changes (the seat hands it to the rollouts). */
  onComposition?: CompositionHeard;
};

/** What the composer knows that the rollouts read: a module's keys, their stored plans and why one cannot be composed. */
export type ComposerView = {
  /** The keys with a good assignment of `module`. */
  keysOf(module: string): Iterable<string>;
  /** Whether `key` has a stored plan. */
  hasStoredPlan(key: string): boolean;
  /** Whether `key` has a good assignment. */
  isAssigned(key: string): boolean;
  /** Why the seat cannot compose `key`'s plan of `build` (the reason its health entry says), when it cannot. */
  composeFailure(key: string, build: string): string | undefined;
};

/** Runs passes over the inputs in memory; never on a timer, only when an input changes after the load gate. */
export class Composer {
  readonly #inputs = new ComposerInputs();
  readonly #keys = new PassKeys();
  readonly #health: PassHealth;
  readonly #reader: InputReader;
  readonly #ctx: KeyPlanContext;
  readonly #writes: KeyWrites;
  readonly #loaded = new Set<InputName>();
  #passes = 0;
  #running: Promise<void> | undefined;
  #asked = false;
  /** An assignment or composition moved since the last pass (a try of failed writes alone moves none). */
  #inputsMoved = false;
  readonly #retry: WriteRetry;
  #closed = false;

  constructor(
    private readonly sink: ComposerSink,
    private readonly log: Logger,
    private readonly onPass: (summary: PassSummary) => void = () => {},
    options: ComposerOptions = {},
  ) {
    this.#health = new PassHealth(new ComposerHealth((line) => this.sink.health(line), log), new HealthBook(options.now));
    this.#reader = new InputReader(this.#inputs, this.#keys, this.#health, log, options.onComposition ?? (() => {}));
    this.#ctx = { inputs: this.#inputs, health: this.#health, select: options.select };
    const writer = new PlanWriter(sink, options.writesInFlight ?? DEFAULT_WRITES_IN_FLIGHT, (err) =>
      log.error(`mesh-provisioner_plans: recording a write: ${errorText(err, { name: true })}`),
    );
    this.#writes = new KeyWrites(writer, this.#inputs, this.#keys, log);
    this.#retry = new WriteRetry(() => {
      // A pass asked by an input change meanwhile may have written them already.
      if (this.#keys.waiting) this.#request();
    }, options.retry);
  }

  /** What the rollouts read of this composer. */
  readonly view: ComposerView = {
    keysOf: (module) => this.#inputs.keysOf(module),
    hasStoredPlan: (key) => this.#inputs.storedPlan(key) !== undefined,
    isAssigned: (key) => Boolean(this.#inputs.assignment(key)),
    composeFailure: (key, build) => this.#health.composeFailure(key, build),
  };

  /** Composes every key of `module` again at the next pass (a rollout moved), or only those of `nodes`, asking for one. */
  recompose(module: string, nodes?: Iterable<string>): void {
    const keys = this.#inputs.keysOf(module);
    if (nodes === undefined) for (const key of keys) this.#keys.dirty.add(key);
    else
      for (const node of nodes) {
        const key = nodeModuleKey(node, module);
        if (keys.has(key)) this.#keys.dirty.add(key);
      }
    this.#request();
  }

  /** Records a key's current value (null: deleted) with its revision when known and, past the load gate, asks for a pass. */
  update(input: InputName, key: string, value: Uint8Array | null, revision?: number): void {
    // A plan echoed back is our own write (or an operator's): it is state, not a reason to compose.
    if (input === 'plans') return this.#reader.seePlan(key, value, revision, this.#writes.writing);
    this.#reader.take(input, key, value);
    this.#inputsMoved = true;
    this.#request();
  }

  /** Marks an input's first full read done; the first pass runs once all three are. */
  loaded(input: InputName): void {
    this.#loaded.add(input);
    this.#inputsMoved = true;
    this.#request();
  }

  /** What the verb's `health` answers: every assignment whose plan is held or cannot be composed, as of the last pass. */
  get healthBook(): HealthBook {
    return this.#health.book;
  }

  /** Resolves when no pass is running or asked for. */
  async idle(): Promise<void> {
    while (this.#running) await this.#running;
  }

  /** Asks no pass from now on: a retry of failed writes waiting is dropped (the seat is stopping). */
  close(): void {
    this.#closed = true;
    this.#retry.close();
  }

  #request(): void {
    if (this.#loaded.size < 3 || this.#closed) return;
    this.#asked = true;
    if (this.#running) return;
    this.#running = (async () => {
      // Coalesce: changes that arrive while a pass runs are folded into one more pass.
      await Promise.resolve();
      while (this.#asked) {
        this.#asked = false;
        try {
          await this.#pass();
        } catch (err) {
          // Per-key work is guarded below; this is the last net, so a pass never kills the seat.
          this.log.error(`pass ${this.#passes} ended early: ${errorText(err, { name: true })}`);
        }
      }
    })().finally(() => (this.#running = undefined));
  }

  async #pass(): Promise<void> {
    const summary: PassSummary = { pass: ++this.#passes, composed: [], written: [], retired: [], held: [], failed: [] };
    if (summary.pass === 1) for (const key of this.#inputs.planKeys()) this.#keys.orphans.add(key);
    const moved = this.#inputsMoved;
    this.#inputsMoved = false;
    this.#health.book.beginPass(moved);
    // Assignments first: a new composition's rollout counts the module's nodes (DESIGN §12), which
    // on a seat's first pass are all in the pending values.
    const unread = this.#reader.readAssignments(summary);
    this.#reader.readModules(summary.pass);
    const writes = new PassWrites();
    for (const key of this.#keys.takeDirty()) {
      const wanted = unread.has(key) ? undefined : wantedPlan(this.#ctx, summary, key);
      const room = wanted && this.#writes.write(writes, key, wanted.bytes, wanted.digest);
      if (room) await room;
    }
    for (const key of this.#keys.takeOrphans()) {
      const retired = this.#inputs.storedPlan(key) && !this.#inputs.isAssigned(key) && parseNodeModuleKey(key).ok;
      const room = retired && this.#writes.write(writes, key, null, null);
      if (room) await room;
    }
    this.#health.countHeld(summary, moved, this.#inputs);
    await writes.settled();
    writes.report(summary);
    this.#endPass(summary);
  }

  /** Asks the retry of the pass's failed writes, logs the pass, and tells `onPass`. */
  #endPass(summary: PassSummary): void {
    const failed = this.#writes.takeFailed();
    const wait = this.#retry.afterPass(failed);
    if (wait !== undefined) this.log.warn(`mesh-provisioner_plans: ${failed} write(s) failed; trying again in ${wait} ms`);
    this.log.debug(
      `pass ${summary.pass}: ${summary.composed.length} composed, ${summary.written.length} written, ${summary.retired.length} retired, ${summary.held.length} held, ${summary.failed.length} failed`,
    );
    try {
      this.onPass(summary);
    } catch (err) {
      this.log.error(`pass ${summary.pass}: onPass: ${errorText(err, { name: true })}`);
    }
  }
}
