// Where a waited value lives (DESIGN §5): the registry names a kind's owner and its bucket or verb;
// the key inside that bucket is built here from the node, the module and the value's name, by the
// shared key builders, so `status` says which key to write rather than only which bucket.
import { boundKey, configKey, nodeModuleKey } from '../../../shared/contract/keys.ts';
import { isPlacementKind } from '../../../shared/contract/registry.ts';

/** Where a kind's values live, as the registry says: its owner and its bucket or verb. */
export type Ownership = { owner: string; where: string };

/** A waited value's owner, bucket or verb, and, where the kind keeps its values under a key, that key and field. */
export type Location = Ownership & { key?: string; field?: string };

/** A registry entry's owner and bucket (or verb), whatever shape the stored value has. */
export function ownershipOf(value: unknown): Ownership {
  const v = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
  const text = (x: unknown) => (typeof x === 'string' ? x : '');
  return { owner: text(v['owner']), where: text(v['bucket']) || text(v['verb']) };
}

/**
 * Where `kind:name`, waited for by `module` on `node`, is read: the registry's owner and bucket
 * (nothing known for a kind the registry lacks) and the key of the value. A bound value's bucket is
 * its provider's, which only the plan names: the registry's `<provider>_bound` is shown as it is.
 */
export function locate(ownership: Ownership | undefined, kind: string, name: string, node: string, module: string): Location {
  if (!ownership) return { owner: '', where: '' };
  return { ...ownership, ...keyOf(kind, name, node, module) };
}

/** The key and field of a value kept in a bucket, by kind; nothing for a kind served by a verb or filled from collections. */
function keyOf(kind: string, name: string, node: string, module: string): { key?: string; field?: string } {
  if (kind === 'config') return { key: configKey(node, module, name) };
  if (isPlacementKind(kind)) return { key: nodeModuleKey(node, module), field: `placement.${kind}.${name}` };
  if (kind !== 'bound') return {};
  const binding = bindingOf(name);
  if (!binding) return {};
  return { key: boundKey(node, module, binding.provision, binding.local), ...(binding.field === undefined ? {} : { field: binding.field }) };
}

/**
 * A waited bound value's name read as `<provision>[.<local>]:<key>`: a provision or local holds no
 * `.` or `:` (DESIGN §2), so the binding ends at the first `:`. Undefined when it is not one.
 */
export function bindingOf(name: string): { provision: string; local?: string; field?: string } | undefined {
  const colon = name.indexOf(':');
  const [provision, local, extra] = (colon < 0 ? name : name.slice(0, colon)).split('.');
  if (!provision || extra !== undefined) return undefined;
  return { provision, ...(local === undefined ? {} : { local }), ...(colon < 0 ? {} : { field: name.slice(colon + 1) }) };
}
