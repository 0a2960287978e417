// What every owner of values (a source) offers the client: a placeholder's value for a plan, with
// the dependency key it read, and the watches that keep those values current (DESIGN §7 point 3).
import type { Plan } from '../../shared/contract/plan.ts';
import type { FromInput } from '../../shared/contract/report.ts';

/** A placeholder as a source sees it: its kind and name. */
export type Wanted = { kind: string; name: string };

/**
 * What a source knows of one value: its text (with `notes` on what it left out, said in the
 * module's report, and `from`, the bus entries it was read from), that it is not there yet (with
 * `notes` that help find why: a name's nearest known one, an entry answering an earlier request),
 * or that it fails the module. A value not read yet (its key's get in flight, `unread`: resolved once
 * read) is never reported waited for (DESIGN §7 point 4): the module's report is held until it is,
 * and its read being told fills the module again.
 */
export type Lookup =
  | { state: 'value'; text: string; notes?: string[]; from?: ValueFrom }
  | { state: 'waiting'; notes?: string[]; unread?: Promise<void> }
  | { state: 'failed'; reason: string };

/**
 * The entries a value was read from (DESIGN §14 provenance): each its kind, bus key and revision.
 * A source keeps it with the entry and hands the same array until the entry changes, so a fill
 * whose values did not change builds nothing new from it (fill/from.ts compares it by identity).
 */
export type ValueFrom = readonly FromInput[];

/** A lookup's answer: the value, the wait or the failure, together with the dependency key it read. */
export type Found = Lookup & {
  /**
   * The one key a placeholder's value is known by, whatever kind or spelling named it (a
   * collection's full name for `${shell:zsh:normal}` and `${collected:shell:zsh:normal}` alike),
   * prefixed by the source's name so keys of different sources never meet; a change of it fills
   * the modules that read it again.
   */
  dependency: string;
  /** A second key the answer read (a waiting config key's hint reads the module's other keys): its change fills the module again too. */
  alsoRead?: string;
};

/** Finds a placeholder's value for the plan's module: the node's sources, or a test's table. */
export type ValueLookup = {
  /** The value of the placeholder for the plan's module as held now, with its dependency key. */
  lookup(plan: Plan, wanted: Wanted): Found;
};

/**
 * What a module's fill reads values through: the lookup and, from the node's sources, what a secret
 * reads on the client's side.
 */
export type FillLookup = ValueLookup & {
  /**
   * For a provision's credential, its provider's mark of having set it (credentials.ts); undefined
   * for a module's own secret. Absent (a test's table of values): every secret is the module's own.
   */
  credentialMark?(plan: Plan, name: string): Found | undefined;
};

/**
 * Tells the client which dependencies changed, by the keys lookups carry, so that exactly the
 * modules whose last fill read one of them are filled again.
 */
export type OnChange = (dependencies: readonly string[]) => void;

/** One owner of values (config, placement, collections, bound entries, consumers…). */
export type Source = ValueLookup & {
  /** The source's name, as the kind table names it. */
  readonly name: string;
  /** The node's plans changed: start the watches they need and stop those no plan needs any more. */
  plansChanged?(plans: ReadonlyMap<string, Plan>): void;
  /** Resolves once the source's watches delivered what was stored when they began. */
  readonly caughtUp?: Promise<void>;
  /**
   * Resolves once each of the source's watches has caught up or been answered that its bucket is not
   * there: until then a value it does not hold may be one it has not read yet, never one to report
   * waited for (DESIGN §7 point 4). Absent: `caughtUp` says it.
   */
  settled?(): Promise<void>;
  /** Reads every key of the node the source reads by key, whole, once (a node of many modules at its start). */
  readWhole?(): Promise<void>;
  /** Stops every watch. */
  stop?(): void;
};
