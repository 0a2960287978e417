// The names of every bucket and subject of DESIGN §3, in one place.

/** The controller's assignments (input). */
export const ASSIGNMENTS = 'mesh-controller_assignments';
/** The catalogue's compositions (input). */
export const MODULES = 'mesh-catalog_modules';
/** mesh-config's resolved values (input). */
export const CONFIG = 'mesh-config_resolved';
/** Which domain answers which kind. */
export const REGISTRY_BUCKET = 'mesh-provisioner_registry';
/** The seat's plans. */
export const PLANS = 'mesh-provisioner_plans';
/** What each module needs. */
export const NEEDS = 'mesh-provisioner_needs';
/** What is applied where. */
export const APPLIED = 'mesh-provisioner_applied';
/** The items of every collection. */
export const COLLECT = 'mesh-provisioner_collect';
/** The five buckets the seat creates. */
export const SEAT_BUCKETS = [REGISTRY_BUCKET, PLANS, NEEDS, APPLIED, COLLECT] as const;
/** The default object-store bucket for archives. */
export const DEFAULT_ARCHIVES = 'mesh-catalog_archives';
