// A value of `mesh-catalog_modules` and the composition file `publish` reads (DESIGN §5, §12, §13).
import * as v from 'valibot';
import { didYouMean } from '../base/nearest.ts';
import { buildProblem } from './fields.ts';
import { nameField as name, textField as text, tokenNameField as tokenName, segmentNameField as segmentName, checked } from './fields.ts';
import { RolloutSchema } from './rollout-schema.ts';
import { strictFields } from './strict-fields.ts';

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
export const FILE_ENTRIES = {
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
export const PROVISION_ENTRIES = {
  provider: name,
  provision: segmentName,
  node: v.optional(name),
  local: v.optional(segmentName),
  /** The secret the consumer's credential is read under. */
  name: v.optional(segmentName),
  values: v.optional(v.record(v.string(), v.unknown())),
};
/** The fields of a provision a module serves. */
export const PROVIDES_ENTRIES = { provision: segmentName };
/** The fields of an item a module contributes. */
export const ITEM_ENTRIES = { collection: tokenName, template: text };
/** The fields of a collection a module collects. */
export const COLLECTION_ENTRIES = { name: tokenName, comment: v.optional(v.string(), '#') };

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

/** The fields of a composition's `archive`: where the build's archive is, and its digest. */
export const ARCHIVE_ENTRIES = {
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
  archive: v.optional(strictFields(ARCHIVE_ENTRIES)),
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
