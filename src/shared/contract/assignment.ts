// A value of `mesh-controller_assignments` (DESIGN §3): a node, a module and its placement.
import * as v from 'valibot';
import { nameField as name, placementMapField as placementMap } from './fields.ts';

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
