// Placement values (`dir`, `access`, `port`, `seat`, `machine`): carried in the plan itself, so a
// change of them is a change of the plan, which fills the module again; no watch of their own.
import type { Plan } from '../../shared/contract/plan.ts';
import { isPlacementKind } from '../../shared/contract/registry.ts';
import type { Found, Source, Wanted } from './source.ts';
import { placementValue } from '../../module/plan-names.ts';

/** The source of the placement kinds. */
export function placementSource(): Source {
  return {
    name: 'placement',
    lookup(plan: Plan, wanted: Wanted): Found {
      const dependency = `placement:${plan.module}:${wanted.kind}:${wanted.name}`;
      if (!isPlacementKind(wanted.kind)) return { state: 'failed', reason: `"${wanted.kind}" is not a placement kind`, dependency };
      const value = placementValue(plan, wanted.kind, wanted.name);
      return value === undefined ? { state: 'waiting', dependency } : { state: 'value', text: String(value), dependency };
    },
  };
}
