// The composer's input reading (DESIGN §4): the assignments and compositions changed since the last
// pass, taken whole by the next one, each decoded once, its bad values said, the keys it touches
// marked to compose; and the stored plans seen on the bus, our writes' echoes told from a move.
import type { Composition } from '../../shared/contract/composition.ts';
import { digestOf } from '../../shared/contract/digest.ts';
import { errorText } from '../../shared/base/errors.ts';
import type { Logger } from '../../shared/cli/log.ts';
import { clip, subjectOf } from './health.ts';
import { isUsable, readAssignment, readModule, type ComposerInputs } from './inputs.ts';
import type { PassHealth } from './pass-health.ts';
import type { PassKeys, PassSummary } from './pass-summary.ts';

/** Hears a module's composition as plans are composed from it: the composition, or undefined when it is gone or not usable. */
export type CompositionHeard = (module: string, composition: Composition | undefined) => void;

/** Keeps the values not read yet, and reads them into the composer's inputs at each pass. */
export class InputReader {
  /** Values not read yet (null: deleted), taken whole by the next pass. */
  #pendingAssignments = new Map<string, Uint8Array | null>();
  #pendingModules = new Map<string, Uint8Array | null>();

  constructor(
    private readonly inputs: ComposerInputs,
    private readonly keys: PassKeys,
    private readonly health: PassHealth,
    private readonly log: Logger,
    private readonly heard: CompositionHeard,
  ) {}

  /** Keeps a key's current value (null: deleted) for the next pass. */
  take(input: 'assignments' | 'modules', key: string, value: Uint8Array | null): void {
    (input === 'assignments' ? this.#pendingAssignments : this.#pendingModules).set(key, value);
  }

  /**
   * Reads the assignments changed since the last pass, each marked to compose; one key's exception
   * is said with the key and the pass goes on. Returns the keys whose read threw (not composed).
   */
  readAssignments(summary: PassSummary): Set<string> {
    const pending = this.#pendingAssignments;
    this.#pendingAssignments = new Map();
    const unread = new Set<string>();
    // In key order, as they are composed: the modules are indexed, and so said, in that order.
    for (const key of [...pending.keys()].sort()) {
      const value = pending.get(key)!;
      // Each value is let go once read, so the raw bucket is not held through a long pass.
      pending.delete(key);
      this.keys.dirty.add(key);
      try {
        this.#readKey(summary, key, value);
      } catch (err) {
        // Nothing is lost on bad input: a stored plan of this key stays until the assignment is good or gone.
        this.inputs.keepAssignment(key, null);
        this.health.internalError(summary, key, err);
        unread.add(key);
      }
    }
    return unread;
  }

  /** Reads the compositions changed since the last pass, says the refused ones, and marks their modules' keys to compose. */
  readModules(pass: number): void {
    const pending = this.#pendingModules;
    this.#pendingModules = new Map();
    for (const [key, bytes] of pending) {
      const read = bytes === null ? undefined : readModule(key, bytes);
      if (read?.refused === undefined) this.health.lines.forget(`modules ${key}`);
      else
        this.health.lines.sayOnce(`modules ${key}`, read.digest, {
          module: clip(key),
          build: '',
          reason: `mesh-catalog_modules ${clip(key)}: ${read.refused}; its plans cannot be composed (stored plans are kept)`,
          passes: pass,
        });
      // A key out of shape is said, never kept: no assignment can name it.
      if (read && !read.known) continue;
      const known = read?.known ?? null;
      if (!this.inputs.setComposition(key, known)) continue;
      const usable = known ?? undefined;
      this.heard(key, isUsable(usable) ? usable.parsed.value : undefined);
      for (const k of this.inputs.keysOf(key)) this.keys.dirty.add(k);
    }
  }

  /**
   * Records a stored plan seen on the bus (`writing`: the digest of our write of it in flight, null a
   * delete); one that moved under us (not our write's echo) is put right at the next pass.
   */
  seePlan(key: string, value: Uint8Array | null, revision: number | undefined, writing: ReadonlyMap<string, string | null>): void {
    let digest: string | null = null;
    try {
      if (value) digest = digestOf(value);
    } catch (err) {
      this.log.error(`mesh-provisioner_plans ${clip(key)}: unreadable: ${errorText(err, { name: true })}`);
      digest = '';
    }
    if (!this.inputs.recordPlan(key, digest, revision)) return;
    if (writing.has(key) && writing.get(key) === digest) return;
    // It asks for no pass of its own: the next pass puts it right, as every pass always has.
    if (this.inputs.isAssigned(key)) this.keys.dirty.add(key);
    else this.keys.orphans.add(key);
  }

  /** Decodes and keeps one assignment (a refused one kept as refused, so its stored plan stays), or forgets a deleted one. */
  #readKey(summary: PassSummary, key: string, bytes: Uint8Array | null): void {
    if (bytes === null) {
      this.inputs.dropAssignment(key);
      this.health.clear(key);
      this.keys.orphans.add(key);
      return;
    }
    const read = readAssignment(key, bytes);
    this.inputs.keepAssignment(key, read.ok ? read.value : null);
    if (!read.ok)
      this.health.fail(
        summary,
        key,
        digestOf(bytes),
        { ...subjectOf(key), build: '', reason: `mesh-controller_assignments ${clip(key)}: ${read.reason}` },
        `assignment does not validate: ${read.reason}`,
      );
  }
}
