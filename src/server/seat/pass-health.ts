// The health of a pass (DESIGN §4, §6): a key that failed said on `provisioner_health` and set in the
// verb's book, a key composed cleared from both, and every key of a held module listed and counted.
import { parseNodeModuleKey } from '../../shared/contract/keys.ts';
import type { Health } from '../../shared/contract/verb.ts';
import { digestOf } from '../../shared/contract/digest.ts';
import { errorText } from '../../shared/base/errors.ts';
import { clip, heldReason, subjectOf, type ComposerHealth } from './health.ts';
import type { HealthBook } from './health-book.ts';
import { isUsable, type ComposerInputs, type KnownComposition } from './inputs.ts';
import type { PassSummary } from './pass-summary.ts';

/** The composer's health lines and its book, as one pass writes them. */
export class PassHealth {
  constructor(
    /** The lines said on `provisioner_health`. */
    readonly lines: ComposerHealth,
    /** The verb's `health` entries. */
    readonly book: HealthBook,
  ) {}

  /** Says a key that failed on `provisioner_health`, and sets its health entry (`reason`, the line's when not given) when the key is in shape. */
  fail(summary: PassSummary, key: string, digest: string, line: Omit<Health, 'passes'>, reason = line.reason): void {
    summary.failed.push(key);
    this.lines.sayOnce(`assignments ${key}`, digest, { ...line, passes: summary.pass });
    const id = parseNodeModuleKey(key);
    if (id.ok) this.book.set(key, { ...id.value, ...(line.build ? { build: line.build } : {}), state: 'failed', reason });
  }

  /** Says a key whose work threw: once per reason, as the bytes that led to it are not to be trusted even for a digest. */
  internalError(summary: PassSummary, key: string, err: unknown): void {
    const reason = `mesh-controller_assignments ${clip(key)}: internal error: ${errorText(err, { name: true })}`;
    this.fail(summary, key, digestOf(reason), { ...subjectOf(key), build: '', reason });
  }

  /** A key whose plan was composed, or whose assignment went: nothing of it is to be said any more. */
  clear(key: string): void {
    this.lines.forget(`assignments ${key}`);
    this.book.clear(key);
  }

  /** Why the seat cannot compose `key`'s plan of `build` (its entry's reason), when it cannot. */
  composeFailure(key: string, build: string): string | undefined {
    const entry = this.book.entry(key);
    return entry?.state === 'failed' && entry.build === build ? entry.reason : undefined;
  }

  /**
   * Lists every key of a module held now (a good assignment, its composition missing, refused or
   * unpublished) and, when the pass came from an input change (`count`), counts a pass for each.
   */
  countHeld(summary: PassSummary, count: boolean, inputs: ComposerInputs): void {
    const heldNow = new Map<string, KnownComposition | undefined>();
    for (const module of inputs.assignedModules()) {
      const c = inputs.composition(module);
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
      for (const key of inputs.keysOf(module)) {
        summary.held.push(key);
        this.book.set(key, { node: inputs.assignment(key)!.node, ...standing });
      }
    }
    summary.held.sort();
    if (count) this.lines.countHeld(heldNow);
  }
}
