// What a placeholder's name finds in a plan alone (DESIGN §2, §7 points 6–9): the provision a
// `${bound:…}` names, the collection a `${collected:…}` (or `${shell:…}`…) reads, the placement
// value a `${dir:…}` (or `access`, `port`, `seat`, `machine`) is. The client's sources read their
// values by these rules, and `lint` and `publish` judge a plan by them, so both say the same.
import type { Plan } from '../shared/contract/plan.ts';
import type { Placeholder } from '../shared/contract/placeholders.ts';
import type { PlacementKind } from '../shared/contract/registry.ts';

type Provision = Plan['provisions'][number];

/** A placeholder as a plan's names are looked up by: its kind and name. */
type Named = Pick<Placeholder, 'kind' | 'name'>;

/** The provision a `${bound:…}` name refers to, and the key of its entry asked for. */
export type BoundRef = { provision: Provision; field: string };

/** The name of a binding as placeholders spell it: `<provision>` or `<provision>.<local>`. */
export function bindingName(p: Pick<Provision, 'provision' | 'local'>): string {
  return p.local === undefined ? p.provision : `${p.provision}.${p.local}`;
}

/**
 * Finds the plan's provision a `${bound:<binding>:<field>}` name refers to, matched against the
 * plan's own provisions. A provision or local holds no `.` or `:` (DESIGN §2), so the binding
 * ends at the first `:` after it; the field may hold both.
 */
export function resolveBound(plan: Plan, name: string): BoundRef | { reason: string } {
  for (const provision of plan.provisions) {
    const binding = bindingName(provision);
    if (name.startsWith(binding + ':') && name.length > binding.length + 1) return { provision, field: name.slice(binding.length + 1) };
  }
  return { reason: `the plan has no provision matching "${name}" (wanted <provision>[.<local>]:<key>)` };
}

/** The kinds that read a collection: `collected` names it whole, the others by their own kind. */
export const COLLECTION_KINDS = ['collected', 'shell', 'environment', 'contribution'] as const;

/** The collection a placeholder reads: `${collected:shell:zsh:normal}` and `${shell:zsh:normal}` alike. */
export function collectionOf(wanted: Named): string {
  return wanted.kind === 'collected' ? wanted.name : `${wanted.kind}:${wanted.name}`;
}

/** The plan's declaration of the collection a placeholder reads, or why a collector cannot read it. */
export function declaredCollection(plan: Plan, wanted: Named): Plan['collections'][number] | { reason: string } {
  const collection = collectionOf(wanted);
  const declared = plan.collections.find((c) => c.name === collection);
  return declared ?? { reason: `collection "${collection}" is not in the plan's collections` };
}

/** The plan's placement value of a kind and name; only the plan's own keys: `${dir:__proto__}` names nothing. */
export function placementValue(plan: Plan, kind: PlacementKind, name: string): string | number | undefined {
  const values = plan.placement[kind];
  return values && Object.hasOwn(values, name) ? values[name] : undefined;
}
