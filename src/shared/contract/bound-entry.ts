// A value of `<provider>_bound` (DESIGN §3): what a provider served a consumer, or why it refused.
import * as v from 'valibot';
import { REQUEST_DIGEST_PATTERN } from './bound-request.ts';

/**
 * The value of a served bound entry that its provider changes each time it sets the consumer's
 * credential in its service (a random marker, never derived from the credential): a consumer's
 * file naming that credential is filled again when it changes, so it never holds a credential
 * before its provider has set it (DESIGN §7 point 9). An entry without it is served as one whose
 * provider never says so.
 */
export const CREDENTIAL_SET = 'credential-set';

/** The request a bound entry answers (DESIGN §3, bound-request.ts): absent in another provider's entry. */
const answersFor = v.optional(v.pipe(v.string('is not a string'), v.regex(REQUEST_DIGEST_PATTERN, 'is not sha256:<64 hex>')));

/** What a provider served a consumer (DESIGN §3): `{as, user, values, for?}`, every value a string or a number, no other field. */
const ServedEntrySchema = v.strictObject(
  {
    as: v.string('is not a string'),
    user: v.string('is not a string'),
    values: v.record(v.string(), v.union([v.string(), v.number()], 'is neither a string nor a number'), 'is not an object'),
    for: answersFor,
  },
  'is not a field of a served entry (as, user, values, for)',
);
/** Why a provider refused a consumer (DESIGN §3): `{refused, for?}`. */
const RefusedEntrySchema = v.strictObject({ refused: v.string('is not a string'), for: answersFor }, 'is not allowed beside "refused"');

/**
 * A value of `<provider>_bound`: exactly one of the two shapes, told apart by `refused` — an entry
 * holding `refused` and served fields is neither, never used as served. Each issue names its field.
 */
export const BoundEntrySchema = v.pipe(
  v.custom<Record<string, unknown>>((x) => typeof x === 'object' && x !== null && !Array.isArray(x), 'is not a JSON object'),
  v.rawTransform(({ dataset, addIssue, NEVER }) => {
    const served = !Object.hasOwn(dataset.value, 'refused');
    // A record schema takes a list for an object of its indexes.
    if (served && Array.isArray(dataset.value['values'])) {
      addIssue({ message: 'is not an object', path: [valuesPath(dataset.value)] });
      return NEVER;
    }
    const result = v.safeParse(served ? ServedEntrySchema : RefusedEntrySchema, dataset.value);
    if (result.success) return result.output;
    for (const issue of result.issues) {
      addIssue({
        message: issue.received === 'undefined' ? 'is missing' : issue.message,
        ...(issue.path ? { path: issue.path as [v.IssuePathItem, ...v.IssuePathItem[]] } : {}),
      });
    }
    return NEVER;
  }),
);

/** The path item of an entry's `values`, for an issue found before the schema runs. */
function valuesPath(entry: Record<string, unknown>): v.ObjectPathItem {
  return { type: 'object', origin: 'value', input: entry, key: 'values', value: entry['values'] };
}

/** A value of `<provider>_bound`. */
export type BoundEntry = v.InferOutput<typeof BoundEntrySchema>;
