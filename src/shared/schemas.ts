// valibot schemas for every value of DESIGN §3–§7 and §9; the decoder that turns issues into a reason
// is decode.ts, re-exported here.
import * as v from 'valibot';
import { REQUEST_DIGEST_PATTERN } from './bound-request.ts';
import { encodeToken, NAME_PATTERN, KIND_PATTERN, segmentNameProblem } from './keys.ts';
import { MAX_KEY_BYTES, MAX_TOKEN_BYTES } from './limits.ts';
import { didYouMean } from './nearest.ts';
import { RolloutSchema } from './rollout-schema.ts';
import { strictFields } from './strict-fields.ts';
import { vaultOwnerProblem } from './vault-names.ts';

export { decodeJson, validate, validateEach } from './decode.ts';

/**
 * A name a placeholder can hold (DESIGN §8): no whitespace, `{`, `}` or `$`, not starting with `-`,
 * `=`, `+` or `?`. The fill protocol's secret parts take the same names.
 */
export const PLACEHOLDER_NAME_PATTERN = /^[^\s{}$\-=+?][^\s{}$]*$/;

/** Longest file or secret path a plan may name, in bytes (Linux's PATH_MAX). */
export const MAX_PATH_BYTES = 4096;

/**
 * Says why a name cannot become a key token (DESIGN §3): its UTF-8, or its `=XX` encoding, past
 * MAX_TOKEN_BYTES; nothing when it fits. The raw length is checked first, so no long text is encoded.
 */
export function tokenProblem(text: string): string | undefined {
  if (text === '') return 'is empty';
  const raw = Buffer.byteLength(text);
  if (raw > MAX_TOKEN_BYTES) return `is ${raw} bytes, past the limit of ${MAX_TOKEN_BYTES} bytes`;
  const encoded = encodeToken(text).length;
  if (encoded > MAX_TOKEN_BYTES) return `is ${encoded} bytes as a key token, past the limit of ${MAX_TOKEN_BYTES} bytes`;
  return undefined;
}

/**
 * Says why a path is not absolute and normal: relative, a `.` or `..` segment, `//`, a trailing
 * `/`, a NUL or a line break, or past MAX_PATH_BYTES; nothing when it is.
 */
export function pathProblem(path: string): string | undefined {
  const bytes = Buffer.byteLength(path);
  if (bytes > MAX_PATH_BYTES) return `is ${bytes} bytes, past the limit of ${MAX_PATH_BYTES} bytes`;
  if (/[\0\n\r]/.test(path)) return 'holds a NUL or a line break';
  if (!path.startsWith('/')) return 'is not absolute';
  if (path.includes('//')) return 'holds //';
  if (path.endsWith('/')) return 'ends with /';
  if (path.split('/').some((segment) => segment === '.' || segment === '..')) return 'holds a . or .. segment';
  return undefined;
}

/** Whether a path is absolute and normal, as a plan's file and secret paths must be. */
export function isNormalAbsolutePath(path: string): boolean {
  return pathProblem(path) === undefined;
}

/**
 * Says why a text cannot be a build: empty, or past MAX_TOKEN_BYTES — a name (DESIGN §3), and the
 * archive `publish` stores is named `<module>-<build>.tar.gz` in an object store whose names travel
 * in subjects; nothing when it can.
 */
export function buildProblem(build: string): string | undefined {
  if (build === '') return 'is empty';
  const bytes = Buffer.byteLength(build);
  if (bytes > MAX_TOKEN_BYTES) return `is ${bytes} bytes, past the limit of ${MAX_TOKEN_BYTES} bytes of a name (the archive is <module>-<build>.tar.gz)`;
  return undefined;
}

/** Says why a text cannot be a KV key: past MAX_KEY_BYTES. */
export function keyProblem(text: string): string | undefined {
  const bytes = Buffer.byteLength(text);
  return bytes > MAX_KEY_BYTES ? `is ${bytes} bytes, past the limit of ${MAX_KEY_BYTES} bytes` : undefined;
}

/** A string schema refused with the reason `problem` gives. */
function checked(problem: (text: string) => string | undefined) {
  return v.pipe(
    v.string(),
    v.check(
      (text) => problem(text) === undefined,
      (issue) => problem(issue.input) ?? 'is refused',
    ),
  );
}

const name = v.pipe(v.string(), v.regex(NAME_PATTERN, 'is not a valid name'));
const text = v.pipe(v.string(), v.minLength(1, 'is empty'));
/** A name that becomes a key token (a collection). */
const tokenName = checked(tokenProblem);
/** A secret's name (a module's own, or a provision's credential), a provision or a local: a segment of a vault name (DESIGN §2). */
const segmentName = checked(segmentNameProblem);
/** A plan's path: absolute and normal. */
const absolutePath = checked(pathProblem);
const placementMap = v.record(v.string(), v.union([v.string(), v.number()]));

/** An assignment's placement: each namespace a map name → string or number. */
export const PlacementSchema = v.strictObject({
  dir: v.optional(placementMap),
  access: v.optional(placementMap),
  port: v.optional(placementMap),
  seat: v.optional(placementMap),
  machine: v.optional(placementMap),
});
/** An assignment's placement. */
export type Placement = v.InferOutput<typeof PlacementSchema>;

/** A value of `mesh-controller_assignments`. */
export const AssignmentSchema = v.object({ node: name, module: name, placement: v.optional(PlacementSchema, {}) });
/** A value of `mesh-controller_assignments`. */
export type Assignment = v.InferOutput<typeof AssignmentSchema>;

/** How a file is written. */
export const FILE_MODES = ['owned', 'seed', 'managed'] as const;
/** How a program takes a change of the file. */
export const CHANGES = ['restart', 'reload', 'none'] as const;

/** One of `options`, refused with them all and the nearest to what was written. */
function oneOf<const O extends readonly string[]>(options: O) {
  return v.picklist(options, (issue) => {
    const hint = typeof issue.input === 'string' ? didYouMean(issue.input, options) : undefined;
    return `is ${issue.received}, not one of ${options.join(', ')}${hint === undefined ? '' : `; ${hint}`}`;
  });
}

/** The fields of a composition's file. */
const FILE_ENTRIES = {
  path: text,
  template: text,
  owner: v.optional(v.string()),
  mode: v.optional(oneOf(FILE_MODES), 'owned'),
  change: v.optional(oneOf(CHANGES), 'none'),
  /** Permission bits as octal text, e.g. "0640". */
  fileMode: v.optional(v.pipe(v.string(), v.regex(/^0?[0-7]{3}$/, 'is not an octal mode'))),
  /** The comment leader of a `managed` file's BEGIN/END lines. */
  comment: v.optional(text),
};
/** The fields of a provision a module requires. */
const PROVISION_ENTRIES = {
  provider: name,
  provision: segmentName,
  node: v.optional(name),
  local: v.optional(segmentName),
  /** The secret the consumer's credential is read under. */
  name: v.optional(segmentName),
  values: v.optional(v.record(v.string(), v.unknown())),
};
const PROVIDES_ENTRIES = { provision: segmentName };
const ITEM_ENTRIES = { collection: tokenName, template: text };
const COLLECTION_ENTRIES = { name: tokenName, comment: v.optional(v.string(), '#') };

// A composition's objects refuse a field they do not know (issue 20 item 6), naming the nearest
// known one; a plan's, written by the seat alone, are read as they come, so a newer seat's field
// never fails an older client.

/** A file a module's templates fill. */
export const FileSchema = strictFields(FILE_ENTRIES);

/** A module's own secret. */
export const SecretSchema = strictFields({ name: segmentName, path: v.optional(text) });

/** What a module requires from a provider. */
export const ProvisionSchema = strictFields(PROVISION_ENTRIES);
/** What a module requires from a provider. */
export type Provision = v.InferOutput<typeof ProvisionSchema>;

/** A provision a module serves. */
export const ProvidesSchema = strictFields(PROVIDES_ENTRIES);
/** An item a module contributes to a collection. */
export const ItemSchema = strictFields(ITEM_ENTRIES);
/** A collection a module collects. */
export const CollectionSchema = strictFields(COLLECTION_ENTRIES);

const archive = {
  ref: v.pipe(v.string(), v.regex(/^(obj:\/\/[^/]+\/.+|file:\/\/\/.+|https:\/\/.+)$/, 'is not an obj://, file:/// or https:// reference')),
  digest: v.pipe(v.string(), v.regex(/^sha256:[0-9a-f]{64}$/, 'is not sha256:<64 hex>')),
};

/** A composition's `provisioning`. */
export const ProvisioningSchema = strictFields({
  files: v.optional(v.array(FileSchema), []),
  secrets: v.optional(v.array(SecretSchema), []),
  provisions: v.optional(v.array(ProvisionSchema), []),
  provides: v.optional(v.array(ProvidesSchema), []),
  items: v.optional(v.array(ItemSchema), []),
  collections: v.optional(v.array(CollectionSchema), []),
});

/** The composition's fields besides `archive` and `published`, shared by the bucket's value and `publish`'s file. */
const COMPOSITION_ENTRIES = {
  module: name,
  build: text,
  provisioning: v.optional(ProvisioningSchema, {}),
  /** How a new build reaches the module's nodes (DESIGN §12); absent: the seat's `--rollout`. */
  rollout: v.optional(RolloutSchema),
};

/** A value of `mesh-catalog_modules`: a module's newest composition. */
export const CompositionSchema = strictFields({
  ...COMPOSITION_ENTRIES,
  published: v.boolean(),
  archive: v.optional(strictFields(archive)),
});
/** A value of `mesh-catalog_modules`. */
export type Composition = v.InferOutput<typeof CompositionSchema>;

/**
 * A composition as its author writes it for `publish` (DESIGN §13): no `archive` (publish fills it
 * in), `published` true unless said, `build` absent when `--build` gives it.
 */
export const CompositionFileSchema = strictFields({
  ...COMPOSITION_ENTRIES,
  build: v.optional(checked(buildProblem)),
  published: v.optional(v.boolean(), true),
});
/** A composition file as `publish` reads it. */
export type CompositionFile = v.InferOutput<typeof CompositionFileSchema>;

/** A plan's secret: its name, vault name and, for a file of its own, its path (absolute and normal). */
export const PlanSecretSchema = v.object({ name: segmentName, vault: text, path: v.optional(absolutePath) });
/** A plan's secret. */
export type PlanSecret = v.InferOutput<typeof PlanSecretSchema>;

/** A value of `mesh-provisioner_plans`: every secret's vault name the plan's own (DESIGN §4, §7). */
export const PlanSchema = v.pipe(
  v.object({
    node: name,
    module: name,
    build: text,
    archive: v.object(archive),
    /** The files, each path resolved from the placement: absolute and normal. */
    files: v.array(v.object({ ...FILE_ENTRIES, path: absolutePath })),
    placement: PlacementSchema,
    secrets: v.array(PlanSecretSchema),
    provisions: v.array(v.object({ ...PROVISION_ENTRIES, node: name })),
    provides: v.array(v.object(PROVIDES_ENTRIES)),
    items: v.array(v.object(ITEM_ENTRIES)),
    collections: v.array(v.object(COLLECTION_ENTRIES)),
  }),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const plan = dataset.value;
    plan.secrets.forEach((secret, i) => {
      // Only a plan's own module may be named: a seat that composed another's would hand the engine its secret.
      const problem = vaultOwnerProblem(secret.vault, { module: plan.module, node: plan.node, name: secret.name });
      if (problem === undefined) return;
      addIssue({
        message: `is ${JSON.stringify(secret.vault.slice(0, 300))}, which ${problem}`,
        path: [
          { type: 'object', origin: 'value', input: plan, key: 'secrets', value: plan.secrets },
          { type: 'array', origin: 'value', input: plan.secrets, key: i, value: secret },
          { type: 'object', origin: 'value', input: secret, key: 'vault', value: secret.vault },
        ],
      });
    });
  }),
);
/** A value of `mesh-provisioner_plans`. */
export type Plan = v.InferOutput<typeof PlanSchema>;

/** A value of `mesh-provisioner_needs`. */
export const NeedSchema = v.object({
  node: name,
  module: name,
  kind: v.pipe(v.string(), v.regex(KIND_PATTERN, 'is not a kind')),
  name: v.string(),
  files: v.array(v.string()),
  met: v.boolean(),
});
/** A value of `mesh-provisioner_needs`. */
export type Need = v.InferOutput<typeof NeedSchema>;

/** The states of a report. */
export const REPORT_STATES = ['applied', 'waiting', 'failed', 'removed'] as const;
/** What the engine did with a file. */
export const FILE_ACTIONS = ['written', 'unchanged', 'kept', 'refused'] as const;

/** A value of `mesh-provisioner_applied` and of `prov.applied.<node>.<module>`. */
export const ReportSchema = v.object({
  node: name,
  module: name,
  build: v.string(),
  state: v.picklist(REPORT_STATES),
  files: v.array(v.object({ path: v.string(), action: v.string(), digest: v.string(), reason: v.optional(v.string()) })),
  waiting: v.array(v.object({ kind: v.string(), name: v.string(), files: v.array(v.string()) })),
  reason: v.optional(v.string()),
  at: v.string(),
});
/** A report. */
export type Report = v.InferOutput<typeof ReportSchema>;

/** A value of `mesh-provisioner_collect`. */
export const CollectItemSchema = v.object({ node: name, collection: text, contributor: name, content: v.string() });
/** A value of `mesh-provisioner_collect`. */
export type CollectItem = v.InferOutput<typeof CollectItemSchema>;

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

/** What the verb answers: a seat bucket read, or (`health`) the seat's memory. */
export const VERB_WHATS = ['registry', 'needs', 'applied', 'collect', 'health'] as const;
/** A request of `mesh-provisioner.provisioning`. */
export const VerbRequestSchema = v.strictObject({
  what: v.optional(v.picklist(VERB_WHATS, `must be one of ${VERB_WHATS.join(', ')}`), 'registry'),
  node: v.optional(name),
  module: v.optional(name),
  contributor: v.optional(name),
  collection: v.optional(tokenName),
  limit: v.optional(v.pipe(v.number(), v.integer('is not an integer'), v.minValue(1, 'must be at least 1'))),
  after: v.optional(checked(keyProblem)),
});
/** A request of the verb. */
export type VerbRequest = v.InferOutput<typeof VerbRequestSchema>;

/** A reply of the verb. */
export type VerbReply = {
  what: string;
  entries: { key: string; value: unknown }[];
  outOfShape: { key: string; reason: string }[];
  next?: string;
};

/** A line on `provisioner_health`. */
export type Health = { module: string; node?: string; build: string; reason: string; passes: number };
