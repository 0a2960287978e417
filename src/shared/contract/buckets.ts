// The names of every bucket of DESIGN §3, in one place, and the list of a mesh's buckets.
import { kvBucket, objBucket, type BucketSpec } from './bucket-spec.ts';
import { boundBucket } from './keys.ts';

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
/** The state of each module's rollout (DESIGN §12). */
export const ROLLOUTS = 'mesh-provisioner_rollouts';
/** The six buckets the seat keeps (and creates, on a bus without isolation). */
export const SEAT_BUCKETS = [REGISTRY_BUCKET, PLANS, NEEDS, APPLIED, COLLECT, ROLLOUTS] as const;
/** The buckets other programs write and the seat and clients read. */
export const INPUT_BUCKETS = [ASSIGNMENTS, MODULES, CONFIG] as const;
/** The default object-store bucket for archives. */
export const DEFAULT_ARCHIVES = 'mesh-catalog_archives';

/** Every bucket of a mesh, as `init` creates them: the seat's six, the inputs, the archives store and each provider's `<provider>_bound`. */
export function meshBuckets(providers: readonly string[], archives: string): BucketSpec[] {
  return [
    ...SEAT_BUCKETS.map(kvBucket),
    ...INPUT_BUCKETS.map(kvBucket),
    objBucket(archives),
    ...[...new Set(providers)].sort().map((p) => kvBucket(boundBucket(p))),
  ];
}
