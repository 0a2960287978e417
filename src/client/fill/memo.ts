// What a module's last fill made of each target, kept so an unchanged one is not made again (DESIGN
// §10: no avoidable work between a change and the engine).
import type { FillFile } from '../../shared/contract/fill-protocol.ts';
import type { From, FromInput } from '../../shared/contract/report.ts';
import type { ValueFrom } from '../sources/source.ts';
import { buildFrom, sameReads } from './from.ts';

/** One item a module contributes: its collection and filled content (DESIGN §7 point 6). */
export type FilledItem = { collection: string; content: string };

/**
 * What a module's last fill rendered, per target: the template and declaration it used, the values
 * it read and what came out; and the `from` it built of the inputs it read. A target whose template,
 * declaration and values are all the same is not rendered or hashed again, and one whose inputs are
 * the same arrays gets the same `from`, nothing built.
 */
export class FillMemo {
  readonly #byLabel = new Map<string, { template: object; decl: object; values: string[]; out: FillFile | FilledItem }>();
  readonly #fromByLabel = new Map<string, { first: FromInput | undefined; reads: ValueFrom[]; from: From }>();
  #prepared: { plan: object; templates: object; value: unknown } | undefined;

  /**
   * What `make` made of a plan and its templates last time, while both are the same objects: which
   * template fills which target and what the plan refuses depend on nothing else, so a change of a
   * value does not work them out again.
   */
  prepared<T>(plan: object, templates: object, make: () => T): T {
    const last = this.#prepared;
    if (last && last.plan === plan && last.templates === templates) return last.value as T;
    const value = make();
    this.#prepared = { plan, templates, value };
    return value;
  }

  /** What the target rendered last time, when nothing it reads has changed since. */
  reuse(label: string, template: object, decl: object, values: readonly string[]): FillFile | FilledItem | undefined {
    const last = this.#byLabel.get(label);
    if (!last || last.template !== template || last.decl !== decl || last.values.length !== values.length) return undefined;
    for (let i = 0; i < values.length; i++) if (last.values[i] !== values[i]) return undefined;
    return last.out;
  }

  /** Keeps what a target rendered. */
  keep(label: string, template: object, decl: object, values: string[], out: FillFile | FilledItem): void {
    this.#byLabel.set(label, { template, decl, values, out });
  }

  /** The target's `from` of `first` and `reads` (fill/from.ts): the one built last time while they are the same. */
  from(label: string, first: FromInput | undefined, reads: ValueFrom[]): From {
    const last = this.#fromByLabel.get(label);
    if (last && last.first === first && sameReads(last.reads, reads)) return last.from;
    const from = buildFrom(first, reads);
    this.#fromByLabel.set(label, { first, reads, from });
    return from;
  }
}
