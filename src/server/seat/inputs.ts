// The composer's inputs in memory (DESIGN §4): each assignment decoded and validated once and
// indexed by module, each composition decoded once, each stored plan kept as a digest only (never
// its bytes), so a change costs what it touches and the bucket is never held twice.
import { keyDisagreement, parseModuleKey, parseNodeModuleKey } from '../../shared/contract/keys.ts';
import type { Parsed } from '../../shared/base/result.ts';
import { AssignmentSchema, type Assignment } from '../../shared/contract/assignment.ts';
import { CompositionSchema, type Composition } from '../../shared/contract/composition.ts';
import { decodeJson } from '../../shared/contract/decode.ts';
import { digestOf } from '../../shared/contract/digest.ts';
import { errorText } from '../../shared/base/errors.ts';

/** A composition as decoded (or the reason it is refused), with the digest of its bytes. */
export type KnownComposition = { parsed: Parsed<Composition>; digest: string };

/** A stored plan: the digest of its bytes and, when the bus said it, its revision. */
export type StoredPlan = { digest: string; revision: number | undefined };

/** An assignment value read: the assignment, or the reason it is refused. */
export type ReadAssignment = Parsed<Assignment>;

/**
 * Decodes an assignment under its key: the key's shape, the value's schema and their agreement.
 * Throws only on what no decoder guards against (the caller's per-key guard catches it).
 */
export function readAssignment(key: string, bytes: Uint8Array): ReadAssignment {
  const id = parseNodeModuleKey(key);
  const decoded = decodeJson(AssignmentSchema, bytes);
  if (!id.ok) return { ok: false, reason: `key out of shape: ${id.reason}` };
  if (!decoded.ok) return decoded;
  const disagreement = keyDisagreement(id.value, decoded.value);
  return disagreement === undefined ? decoded : { ok: false, reason: disagreement };
}

/** A composition value as read under its key: what to keep (none for a key out of shape), the reason it is refused, and its digest. */
export type ReadModule = { known: KnownComposition | undefined; refused: string | undefined; digest: string };

/**
 * Decodes a composition under its key (its `module` must be the key). Never throws: what reading
 * throws is a reason too, so one bad value never stops a pass.
 */
export function readModule(key: string, bytes: Uint8Array): ReadModule {
  const id = parseModuleKey(key);
  let parsed: Parsed<Composition>;
  let digest: string;
  try {
    parsed = decodeJson(CompositionSchema, bytes);
    if (parsed.ok && parsed.value.module !== key) parsed = { ok: false, reason: `field "module" names ${parsed.value.module}` };
    digest = digestOf(bytes);
  } catch (err) {
    parsed = { ok: false, reason: `internal error: ${errorText(err, { name: true })}` };
    digest = digestOf(parsed.reason);
  }
  const refused = !id.ok ? `key out of shape: ${id.reason}` : !parsed.ok ? parsed.reason : undefined;
  return { known: id.ok ? { parsed, digest } : undefined, refused, digest };
}

/** Whether a composition is one plans are composed from: valid and published. */
export function isUsable(c: KnownComposition | undefined): c is { parsed: { ok: true; value: Composition }; digest: string } {
  return c !== undefined && c.parsed.ok && c.parsed.value.published;
}

/** What the composer knows of its three inputs. */
export class ComposerInputs {
  /** Every assignment key in shape: its assignment, or null while its value is refused. */
  readonly #assignments = new Map<string, Assignment | null>();
  readonly #byModule = new Map<string, Set<string>>();
  readonly #compositions = new Map<string, KnownComposition>();
  readonly #plans = new Map<string, StoredPlan>();

  /** The assignment of `key`; null when its value is refused, undefined when there is none. */
  assignment(key: string): Assignment | null | undefined {
    return this.#assignments.get(key);
  }

  /** Whether `key` is an assignment key in shape with a value (good or refused): its stored plan is not retired. */
  isAssigned(key: string): boolean {
    return this.#assignments.has(key);
  }

  /** Keeps `key`'s assignment (null: refused, so its stored plan stays); a key out of shape is not kept. */
  keepAssignment(key: string, value: Assignment | null): void {
    if (!parseNodeModuleKey(key).ok) return this.dropAssignment(key);
    this.#unindex(key);
    this.#assignments.set(key, value);
    if (!value) return;
    let keys = this.#byModule.get(value.module);
    if (!keys) this.#byModule.set(value.module, (keys = new Set()));
    keys.add(key);
  }

  /** Forgets `key`'s assignment. */
  dropAssignment(key: string): void {
    this.#unindex(key);
    this.#assignments.delete(key);
  }

  /** The keys with a good assignment of `module`. */
  keysOf(module: string): ReadonlySet<string> {
    return this.#byModule.get(module) ?? new Set();
  }

  /** Every module with at least one good assignment. */
  assignedModules(): Iterable<string> {
    return this.#byModule.keys();
  }

  /** The composition of `module` as last read. */
  composition(module: string): KnownComposition | undefined {
    return this.#compositions.get(module);
  }

  /** Keeps a composition as read (null: deleted); says whether what plans are composed from changed. */
  setComposition(module: string, known: KnownComposition | null): boolean {
    if (known === null) return this.#compositions.delete(module);
    const changed = this.#compositions.get(module)?.digest !== known.digest;
    this.#compositions.set(module, known);
    return changed;
  }

  /** The stored plan of `key`, as last seen or written. */
  storedPlan(key: string): StoredPlan | undefined {
    return this.#plans.get(key);
  }

  /**
   * Records a plan seen on the bus or written (null: deleted). A revision older than the one known
   * is an echo overtaken by a later write and is ignored; says whether the record changed.
   */
  recordPlan(key: string, digest: string | null, revision: number | undefined): boolean {
    const known = this.#plans.get(key);
    if (known && revision !== undefined && known.revision !== undefined && revision <= known.revision) return false;
    if (digest === null) return this.#plans.delete(key);
    if (known?.digest === digest) {
      known.revision = revision ?? known.revision;
      return false;
    }
    this.#plans.set(key, { digest, revision });
    return true;
  }

  /** Every stored plan key. */
  planKeys(): Iterable<string> {
    return this.#plans.keys();
  }

  #unindex(key: string): void {
    const module = this.#assignments.get(key)?.module;
    if (module === undefined) return;
    const keys = this.#byModule.get(module);
    keys?.delete(key);
    if (keys?.size === 0) this.#byModule.delete(module);
  }
}
