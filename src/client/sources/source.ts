// What every owner of values (a source) offers the client: which dependency a placeholder is, its
// value for a plan, and the watches that keep those values current (DESIGN §7 point 3).
import type { Plan } from '../../shared/schemas.ts';

/** A placeholder as a source sees it: its kind and name. */
export type Wanted = { kind: string; name: string };

/**
 * What a source knows of one value: its text (with `notes` on what it left out, said in the
 * module's report), that it is not there yet, or that it fails the module.
 */
export type Lookup = { state: 'value'; text: string; notes?: string[] } | { state: 'waiting' } | { state: 'failed'; reason: string };

/**
 * Tells the client which dependencies changed, by the keys `dependency` gives, so that exactly
 * the modules whose last fill named one of them are filled again.
 */
export type OnChange = (dependencies: readonly string[]) => void;

/** One owner of values (config, placement, collections, bound entries, consumers…). */
export type Source = {
  /** The source's name, as the kind table names it. */
  readonly name: string;
  /**
   * The one key a placeholder's value is known by, whatever kind or spelling named it (a
   * collection's full name for `${shell:zsh:normal}` and `${collected:shell:zsh:normal}` alike),
   * prefixed by the source's name so keys of different sources never meet.
   */
  dependency(plan: Plan, wanted: Wanted): string;
  /** The value of the placeholder for the plan's module, as the source holds it now. */
  lookup(plan: Plan, wanted: Wanted): Lookup;
  /** The node's plans changed: start the watches they need and stop those no plan needs any more. */
  plansChanged?(plans: ReadonlyMap<string, Plan>): void;
  /** Resolves once the source's watches delivered what was stored when they began. */
  readonly caughtUp?: Promise<void>;
  /** Stops every watch. */
  stop?(): void;
};
