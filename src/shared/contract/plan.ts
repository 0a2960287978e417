// A value of `mesh-provisioner_plans` (DESIGN §4, §7): what the seat composed for one node's module.
import * as v from 'valibot';
import { PlacementSchema } from './assignment.ts';
import { ARCHIVE_ENTRIES, COLLECTION_ENTRIES, FILE_ENTRIES, ITEM_ENTRIES, PROVIDES_ENTRIES, PROVISION_ENTRIES } from './composition.ts';
import { nameField as name, textField as text, segmentNameField as segmentName, absolutePathField as absolutePath } from './fields.ts';
import { vaultOwnerProblem } from './vault-names.ts';

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
    archive: v.object(ARCHIVE_ENTRIES),
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
