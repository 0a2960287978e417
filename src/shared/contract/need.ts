// A value of `mesh-provisioner_needs` (DESIGN §3): what a node's module waits for.
import * as v from 'valibot';
import { nameField as name } from './fields.ts';
import { KIND_PATTERN } from './keys.ts';

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
