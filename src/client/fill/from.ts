// A filled file's `from` (DESIGN §14 provenance): the archive its template came from, then each bus
// entry or vault name its values were read from, once each, cut at MAX_FROM_INPUTS with the count of
// the rest. Built from what the sources handed the fill (Lookup's `from`), never afterwards.
import { MAX_FROM_INPUTS, type From, type FromInput } from '../../shared/contract/report.ts';
import type { Plan } from '../../shared/contract/plan.ts';
import type { ValueFrom } from '../sources/source.ts';

/** The archive input of each plan's archive, made once per plan. */
const archives = new WeakMap<Plan['archive'], FromInput>();
/** A secret's input (its vault name, no revision), made once per secret of a plan. */
const secrets = new WeakMap<Plan['secrets'][number], ValueFrom>();
const NONE: ValueFrom = [];

/** The plan's archive as an input: `{kind: "archive", key: <ref>, digest}`. */
export function archiveInput(plan: Plan): FromInput {
  let input = archives.get(plan.archive);
  if (!input) archives.set(plan.archive, (input = { kind: 'archive', key: plan.archive.ref, digest: plan.archive.digest }));
  return input;
}

/** The plan's secret `name` as an input: its vault name, without a revision (the vault keeps none on the bus). */
export function secretFrom(plan: Plan, name: string): ValueFrom {
  const secret = plan.secrets.find((s) => s.name === name);
  if (!secret) return NONE;
  let from = secrets.get(secret);
  if (!from) secrets.set(secret, (from = [{ kind: 'secret', key: secret.vault }]));
  return from;
}

/**
 * A file's `from`: `first` (its archive, when a template made it), then every input of `reads` in
 * order, each (kind, key) once — a value named twice in a file is one input — cut by cutFrom.
 */
export function buildFrom(first: FromInput | undefined, reads: readonly ValueFrom[]): From {
  const seen = new Set<string>();
  const all: FromInput[] = first ? [first] : [];
  for (const from of reads)
    for (const input of from) {
      // A kind has no space (DESIGN §8): the pair is one string without ambiguity.
      const id = `${input.kind} ${input.key}`;
      if (seen.has(id)) continue;
      seen.add(id);
      all.push(input);
    }
  return cutFrom(all);
}

/** At most MAX_FROM_INPUTS inputs, then `{more: N}` counting the rest (DESIGN §14). */
export function cutFrom(inputs: FromInput[]): From {
  if (inputs.length <= MAX_FROM_INPUTS) return inputs;
  return [...inputs.slice(0, MAX_FROM_INPUTS), { more: inputs.length - MAX_FROM_INPUTS }];
}

/** Whether two lists of reads hold the same arrays, in order (sources hand the same array while an entry is unchanged). */
export function sameReads(a: readonly ValueFrom[], b: readonly ValueFrom[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
