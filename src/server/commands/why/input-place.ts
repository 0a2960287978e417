// Where an input of a file's `from` (DESIGN §14) is kept on the bus: the bucket its kind reads, a
// vault name (no revision on the bus), or the module's archive. `key` holds no bucket, so a bound
// input's bucket is found through the provision of the plan that names it.
import { COLLECT, CONFIG, PLANS } from '../../../shared/contract/buckets.ts';
import { boundBucket, boundKey } from '../../../shared/contract/keys.ts';
import { isPlacementKind } from '../../../shared/contract/registry.ts';

/** The kinds read from `mesh-provisioner_collect`, each contributor's key an input. */
export const COLLECTION_KINDS: readonly string[] = ['collected', 'shell', 'environment', 'contribution'];
/** The kinds the vault answers: their inputs are vault names, without a revision. */
export const VAULT_KINDS: readonly string[] = ['secret', 'consumers'];
/** The kind of a file's archive input. */
export const ARCHIVE_KIND = 'archive';

/** The provisions of a plan, as far as finding a bound key's provider needs. */
export type ProvisionsOf = { node: string; module: string; provisions: readonly { provider: string; provision: string; local?: string }[] };

/** Where an input lives: a key of a bucket, a vault name, the archive, or nowhere this plan says. */
export type InputPlace =
  | { at: 'bucket'; bucket: string }
  | { at: 'vault' }
  | { at: 'archive' }
  /** A bound key no provision of the plan makes, or a kind no bucket keeps: `why` says so. */
  | { at: 'unknown'; reason: string };

/** Where `kind`'s input `key` lives; a bound key's bucket is its provider's, read from `plan` (absent: unknown). */
export function placeOf(kind: string, key: string, plan: ProvisionsOf | undefined): InputPlace {
  if (kind === ARCHIVE_KIND) return { at: 'archive' };
  if (VAULT_KINDS.includes(kind)) return { at: 'vault' };
  if (kind === 'config') return { at: 'bucket', bucket: CONFIG };
  if (isPlacementKind(kind)) return { at: 'bucket', bucket: PLANS };
  if (COLLECTION_KINDS.includes(kind)) return { at: 'bucket', bucket: COLLECT };
  if (kind !== 'bound') return { at: 'unknown', reason: `no bucket keeps a value of kind ${kind}` };
  const provider = plan?.provisions.find((p) => boundKey(plan.node, plan.module, p.provision, p.local) === key)?.provider;
  if (provider !== undefined) return { at: 'bucket', bucket: boundBucket(provider) };
  return { at: 'unknown', reason: plan ? 'no provision of the plan binds this key any more' : 'the module has no plan: its provider is not known' };
}

/** Whether an input of `kind` is kept under `bucket`, for a trace that names the bucket (a bound input: any `<provider>_bound`). */
export function kindReadsBucket(kind: string, bucket: string): boolean {
  if (kind === 'bound') return bucket.endsWith('_bound');
  const place = placeOf(kind, '', undefined);
  return place.at === 'bucket' && place.bucket === bucket;
}
