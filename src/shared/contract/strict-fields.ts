// An object schema that refuses every field it does not know (issue 20 item 6: a typo such as
// `"mdoe": "seed"` must not vanish), each named by its path with the nearest known field.
import * as v from 'valibot';
import { didYouMean } from '../base/nearest.ts';

/**
 * valibot's `strictObject` says only the first unknown key of an object and its words are valibot's;
 * this schema says every unknown key, with "did you mean", and a missing field as `is missing`,
 * beside every problem of the known fields. Its output is what `v.object(entries)` gives.
 */
export function strictFields<const E extends v.ObjectEntries>(entries: E) {
  const known = v.object(entries);
  const names = Object.keys(entries);
  return v.pipe(
    v.custom<Record<string, unknown>>((x) => typeof x === 'object' && x !== null && !Array.isArray(x), 'is not an object'),
    v.rawTransform(({ dataset, addIssue, NEVER }) => {
      const input = dataset.value;
      let unknown = false;
      for (const key of Object.keys(input)) {
        if (Object.hasOwn(entries, key)) continue;
        unknown = true;
        addIssue({ message: unknownFieldMessage(key, names), path: [{ type: 'object', origin: 'key', input, key, value: input[key] }] });
      }
      const result = v.safeParse(known, input);
      if (result.success && !unknown) return result.output;
      for (const issue of result.issues ?? [])
        addIssue({ message: isMissing(issue) ? 'is missing' : issue.message, ...(issue.path ? { path: issue.path } : {}) });
      return NEVER;
    }),
  );
}

/** What is said of a field no entry names: the nearest known name, or, when none is near, every known one. */
export function unknownFieldMessage(key: string, known: readonly string[]): string {
  const hint = didYouMean(key, known);
  return hint === undefined ? `is an unknown field (the fields here: ${known.join(', ')})` : `is an unknown field; ${hint}`;
}

/** Whether an issue of `v.object` is a required field that is absent. */
function isMissing(issue: v.BaseIssue<unknown>): boolean {
  return issue.kind === 'schema' && issue.type === 'object' && issue.received === 'undefined' && issue.path?.at(-1)?.origin === 'key';
}
