// The composition passes of DESIGN §4: a load gate, then one coalesced pass per input change. A
// pass visits only the keys its changes touch: an assignment change composes its own key, a
// composition change its module's keys; what is unchanged is neither decoded nor composed again.
import { nodeModuleKey, parseNodeModuleKey } from '../../shared/contract/keys.ts';
import { MAX_PLAN_BYTES } from '../../shared/contract/limits.ts';
import type { Logger } from '../../shared/cli/log.ts';
import type { Composition } from '../../shared/contract/composition.ts';
import type { Health } from '../../shared/contract/verb.ts';
import { composePlan } from './compose.ts';
import { clip, ComposerHealth, HELD_PASSES_BEFORE_HEALTH, heldReason, subjectOf } from './health.ts';
import { HealthBook } from './health-book.ts';
import { ComposerInputs, isUsable, readAssignment, readModule, type KnownComposition } from './inputs.ts';
import { digestOf } from './digest.ts';
import { PassWrites } from './pass-writes.ts';
import { DEFAULT_WRITES_IN_FLIGHT, PlanWriter, type PlanStore } from './plan-writer.ts';
import { WriteRetry, type WriteRetryOptions } from './write-retry.ts';
import { errorText } from '../../shared/base/errors.ts';
import type { RolloutDirector } from './rollout/director.ts';

export { HELD_PASSES_BEFORE_HEALTH };

/** Where a pass writes and says things: the plans bucket and the health subject, handed in. */
export type ComposerSink = PlanStore & { health(line: Health): void };

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

/** How a composer writes. */
export type ComposerOptions = {
  /** Plan writes in flight at most (DEFAULT_WRITES_IN_FLIGHT). */
  writesInFlight?: number;
  /** How writes that failed are tried again (server/seat/write-retry.ts defaults). */
  retry?: WriteRetryOptions;
  /** The clock of the health entries' `since`, in ms (Date.now). */
  now?: () => number;
  /** The rollouts (DESIGN §12) that choose each key's composition; none: every plan from the newest, at once. */
  rollouts?: Pick<RolloutDirector, 'attach' | 'compositionChanged' | 'compositionFor'>;
};

type Wanted = { bytes: Uint8Array; digest: string };

/** Runs passes over the inputs in memory; never on a timer, only when an input changes after the load gate. */
export class Composer {
  readonly #inputs = new ComposerInputs();
  readonly #health: ComposerHealth;
  readonly #book: HealthBook;
  readonly #writer: PlanWriter;
  readonly #loaded = new Set<InputName>();
  /** Values not read yet (null: deleted), taken whole by the next pass. */
  #pendingAssignments = new Map<string, Uint8Array | null>();
  #pendingModules = new Map<string, Uint8Array | null>();
  /** Keys to compose again: their composition changed, their write failed, or their stored plan moved. */
  #dirty = new Set<string>();
  /** Stored plans that may have lost their assignment. */
  #orphans = new Set<string>();
  /** The digest of each write in flight (null: a delete), to know its echo from a change by someone else. */
  readonly #writing = new Map<string, string | null>();
  #passes = 0;
  #running: Promise<void> | undefined;
  #asked = false;
  /** An assignment or composition moved since the last pass (a try of failed writes alone moves none). */
  #inputsMoved = false;
  /** Writes of the running pass that failed: their keys wait for the retry. */
  #writesFailed = 0;
  readonly #retry: WriteRetry;
  readonly #rollouts: ComposerOptions['rollouts'];
  #closed = false;

  constructor(
    private readonly sink: ComposerSink,
    private readonly log: Logger,
    private readonly onPass: (summary: PassSummary) => void = () => {},
    options: ComposerOptions = {},
  ) {
    this.#health = new ComposerHealth((line) => this.sink.health(line), log);
    this.#book = new HealthBook(options.now);
    this.#writer = new PlanWriter(sink, options.writesInFlight ?? DEFAULT_WRITES_IN_FLIGHT, (err) =>
      log.error(`mesh-provisioner_plans: recording a write: ${errorText(err, { name: true })}`),
    );
    this.#retry = new WriteRetry(() => {
      // A pass asked by an input change meanwhile may have written them already.
      if (this.#dirty.size + this.#orphans.size > 0) this.#request();
    }, options.retry);
    this.#rollouts = options.rollouts;
    this.#rollouts?.attach({
      keysOf: (module) => this.#inputs.keysOf(module),
      hasStoredPlan: (key) => this.#inputs.storedPlan(key) !== undefined,
      isAssigned: (key) => Boolean(this.#inputs.assignment(key)),
      composeFailure: (key, build) => {
        const entry = this.#book.entry(key);
        return entry?.state === 'failed' && entry.build === build ? entry.reason : undefined;
      },
      recompose: (module, nodes) => this.recompose(module, nodes),
    });
  }

  /** Composes every key of `module` again at the next pass (a rollout moved), or only those of `nodes`, asking for one. */
  recompose(module: string, nodes?: Iterable<string>): void {
    const keys = this.#inputs.keysOf(module);
    if (nodes === undefined) for (const key of keys) this.#dirty.add(key);
    else
      for (const node of nodes) {
        const key = nodeModuleKey(node, module);
        if (keys.has(key)) this.#dirty.add(key);
      }
    this.#request();
  }

  /** Records a key's current value (null: deleted) with its revision when known and, past the load gate, asks for a pass. */
  update(input: InputName, key: string, value: Uint8Array | null, revision?: number): void {
    // A plan echoed back is our own write (or an operator's): it is state, not a reason to compose.
    if (input === 'plans') return this.#seePlan(key, value, revision);
    (input === 'assignments' ? this.#pendingAssignments : this.#pendingModules).set(key, value);
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
    return this.#book;
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
    if (summary.pass === 1) for (const key of this.#inputs.planKeys()) this.#orphans.add(key);
    const moved = this.#inputsMoved;
    this.#inputsMoved = false;
    this.#book.beginPass(moved);
    // Assignments first: a new composition's rollout counts the module's nodes (DESIGN §12), which
    // on a seat's first pass are all in the pending values.
    const unread = this.#readAssignments(summary);
    this.#readModules(summary.pass);
    const keys = [...this.#dirty].sort();
    this.#dirty = new Set();

    const writes = new PassWrites();
    for (const key of keys) {
      if (unread.has(key)) continue;
      const wanted = this.#composeKey(summary, key);
      if (!wanted) continue;
      // Writes are asked in bursts while the writer has room, without yielding, so each burst leaves in one flush.
      const room = this.#writer.room();
      if (room) await room;
      this.#write(writes, key, wanted.bytes, wanted.digest);
    }
    const orphans = [...this.#orphans].sort();
    this.#orphans = new Set();
    for (const key of orphans) {
      if (!this.#inputs.storedPlan(key) || this.#inputs.isAssigned(key) || !parseNodeModuleKey(key).ok) continue;
      const room = this.#writer.room();
      if (room) await room;
      this.#write(writes, key, null, null);
    }
    this.#countHeld(summary, moved);
    await writes.settled();
    writes.report(summary);
    const failed = this.#writesFailed;
    this.#writesFailed = 0;
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

  /**
   * Reads the assignments changed since the last pass, each marked to compose; one key's exception
   * is said with the key and the pass goes on. Returns the keys whose read threw (not composed).
   */
  #readAssignments(summary: PassSummary): Set<string> {
    const pending = this.#pendingAssignments;
    this.#pendingAssignments = new Map();
    const unread = new Set<string>();
    // In key order, as they are composed: the modules are indexed, and so said, in that order.
    for (const key of [...pending.keys()].sort()) {
      const value = pending.get(key)!;
      // Each value is let go once read, so the raw bucket is not held through a long pass.
      pending.delete(key);
      this.#dirty.add(key);
      try {
        this.#readKey(summary, key, value);
      } catch (err) {
        // Nothing is lost on bad input: a stored plan of this key stays until the assignment is good or gone.
        this.#inputs.keepAssignment(key, null);
        this.#internalError(summary, key, err);
        unread.add(key);
      }
    }
    return unread;
  }

  /** Reads the compositions changed since the last pass, says the refused ones, and marks their modules' keys to compose. */
  #readModules(pass: number): void {
    const pending = this.#pendingModules;
    this.#pendingModules = new Map();
    for (const [key, bytes] of pending) {
      const read = bytes === null ? undefined : readModule(key, bytes);
      if (read?.refused === undefined) this.#health.forget(`modules ${key}`);
      else
        this.#health.sayOnce(`modules ${key}`, read.digest, {
          module: clip(key),
          build: '',
          reason: `mesh-catalog_modules ${clip(key)}: ${read.refused}; its plans cannot be composed (stored plans are kept)`,
          passes: pass,
        });
      // A key out of shape is said, never kept: no assignment can name it.
      if (read && !read.known) continue;
      if (!this.#inputs.setComposition(key, read?.known ?? null)) continue;
      this.#rollouts?.compositionChanged(key, read?.known ?? null);
      for (const k of this.#inputs.keysOf(key)) this.#dirty.add(k);
    }
  }

  /** Composes a key; one key's exception is said with the key and the pass goes on. */
  #composeKey(summary: PassSummary, key: string): Wanted | undefined {
    try {
      return this.#planOf(summary, key);
    } catch (err) {
      this.#internalError(summary, key, err);
      return undefined;
    }
  }

  /** Decodes and keeps one assignment (a refused one kept as refused, so its stored plan stays), or forgets a deleted one. */
  #readKey(summary: PassSummary, key: string, bytes: Uint8Array | null): void {
    if (bytes === null) {
      this.#inputs.dropAssignment(key);
      this.#health.forget(`assignments ${key}`);
      this.#book.clear(key);
      this.#orphans.add(key);
      return;
    }
    const read = readAssignment(key, bytes);
    this.#inputs.keepAssignment(key, read.ok ? read.value : null);
    if (!read.ok)
      this.#fail(
        summary,
        key,
        digestOf(bytes),
        { ...subjectOf(key), build: '', reason: `mesh-controller_assignments ${clip(key)}: ${read.reason}` },
        `assignment does not validate: ${read.reason}`,
      );
  }

  /** The plan of a key when it is to be written: composed, within the limit, and different from the stored one. */
  #planOf(summary: PassSummary, key: string): Wanted | undefined {
    const assignment = this.#inputs.assignment(key);
    const c = assignment ? this.#inputs.composition(assignment.module) : undefined;
    // A held module's keys keep their stored plans; the module is counted and said per pass.
    if (!assignment || !isUsable(c)) return undefined;
    const chosen: Composition | undefined = this.#rollouts
      ? this.#rollouts.compositionFor(key, assignment.node, assignment.module, c.parsed.value)
      : c.parsed.value;
    // A node a rollout has not reached, on a superseded build, keeps its stored plan until its wave.
    if (!chosen) return undefined;
    summary.composed.push(key);
    const plan = composePlan(assignment, chosen);
    // Buffer.from is the same UTF-8 as jsonBytes at less than half the cost, which counts at fleet size.
    const bytes = plan.ok ? Buffer.from(JSON.stringify(plan.value)) : undefined;
    const why = !plan.ok
      ? plan.reason
      : // A plan past the limit is one the bus or the client would refuse: refused here, with its size.
        bytes!.length > MAX_PLAN_BYTES
        ? `${bytes!.length} bytes, past the limit of ${MAX_PLAN_BYTES} bytes`
        : undefined;
    if (why !== undefined || !bytes) {
      const said = digestOf(`${JSON.stringify(assignment)}\n${c.digest}${chosen === c.parsed.value ? '' : `\n${chosen.build}`}`);
      this.#fail(summary, key, said, { module: assignment.module, node: assignment.node, build: chosen.build, reason: `plan ${key}: ${why ?? ''}` }, why ?? '');
      return undefined;
    }
    this.#health.forget(`assignments ${key}`);
    this.#book.clear(key);
    const digest = digestOf(bytes);
    return this.#inputs.storedPlan(key)?.digest === digest ? undefined : { bytes, digest };
  }

  /** Asks the writer for a write, listed in `writes`; its end records the plan, or marks the key for the next pass. */
  #write(writes: PassWrites, key: string, bytes: Uint8Array | null, digest: string | null): void {
    const put = bytes !== null;
    const i = writes.add(key, put);
    this.#writing.set(key, digest);
    this.#writer.write(key, bytes, (outcome) => {
      // The pass waits for every write it asked: its end is counted whatever else happens here.
      writes.end(i, outcome.ok);
      if (this.#writing.get(key) === digest) this.#writing.delete(key);
      if (outcome.ok) return void this.#inputs.recordPlan(key, digest, outcome.revision);
      // A write the bus refused is tried again by the next pass (an input change's, or the retry's); the others go on.
      // At warning: it is tried again, and a cluster losing a server refuses writes for a moment; one still failing is said on health.
      this.log.warn(`mesh-provisioner_plans ${key}: ${put ? 'put' : 'delete'} failed: ${errorText(outcome.error, { name: true })}; trying again`);
      (put ? this.#dirty : this.#orphans).add(key);
      this.#writesFailed++;
    });
  }

  /** Records a stored plan seen on the bus; one that moved under us (not our write's echo) is put right at the next pass. */
  #seePlan(key: string, value: Uint8Array | null, revision: number | undefined): void {
    let digest: string | null = null;
    try {
      if (value) digest = digestOf(value);
    } catch (err) {
      this.log.error(`mesh-provisioner_plans ${clip(key)}: unreadable: ${errorText(err, { name: true })}`);
      digest = '';
    }
    if (!this.#inputs.recordPlan(key, digest, revision)) return;
    if (this.#writing.has(key) && this.#writing.get(key) === digest) return;
    // It asks for no pass of its own: the next pass puts it right, as every pass always has.
    if (this.#inputs.isAssigned(key)) this.#dirty.add(key);
    else this.#orphans.add(key);
  }

  /**
   * Lists every key of a module held now (a good assignment, its composition missing, refused or
   * unpublished) and, when the pass came from an input change (`count`), counts a pass for each.
   */
  #countHeld(summary: PassSummary, count: boolean): void {
    const heldNow = new Map<string, KnownComposition | undefined>();
    for (const module of this.#inputs.assignedModules()) {
      const c = this.#inputs.composition(module);
      if (!isUsable(c)) heldNow.set(module, c);
    }
    for (const [module, c] of heldNow) {
      // Out of shape, a composition cannot be composed: failed. Missing or unpublished, it is waited for: held.
      const standing = {
        module,
        ...(c?.parsed.ok ? { build: c.parsed.value.build } : {}),
        state: c && !c.parsed.ok ? ('failed' as const) : ('held' as const),
        reason: heldReason(c),
      };
      for (const key of this.#inputs.keysOf(module)) {
        summary.held.push(key);
        this.#book.set(key, { node: this.#inputs.assignment(key)!.node, ...standing });
      }
    }
    summary.held.sort();
    if (count) this.#health.countHeld(heldNow);
  }

  #internalError(summary: PassSummary, key: string, err: unknown): void {
    // Said once per reason: the bytes that led to it are not to be trusted even for a digest.
    const reason = `mesh-controller_assignments ${clip(key)}: internal error: ${errorText(err, { name: true })}`;
    this.#fail(summary, key, digestOf(reason), { ...subjectOf(key), build: '', reason });
  }

  /** Says a key that failed on `provisioner_health`, and sets its health entry (`reason`, the line's when not given) when the key is in shape. */
  #fail(summary: PassSummary, key: string, digest: string, line: Omit<Health, 'passes'>, reason = line.reason): void {
    summary.failed.push(key);
    this.#health.sayOnce(`assignments ${key}`, digest, { ...line, passes: summary.pass });
    const id = parseNodeModuleKey(key);
    if (id.ok) this.#book.set(key, { ...id.value, ...(line.build ? { build: line.build } : {}), state: 'failed', reason });
  }
}
