// A value of `mesh-provisioner_collect` (DESIGN §3): an item one module contributes to a collection.
import * as v from 'valibot';
import { nameField as name, textField as text } from './fields.ts';

/** A value of `mesh-provisioner_collect`. */
export const CollectItemSchema = v.object({ node: name, collection: text, contributor: name, content: v.string() });
/** A value of `mesh-provisioner_collect`. */
export type CollectItem = v.InferOutput<typeof CollectItemSchema>;
