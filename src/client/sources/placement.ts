// Placement values (`dir`, `access`, `port`, `seat`, `machine`): carried in the plan itself, so a
// change of them is a change of the plan, which fills the module again; no watch of their own.
import type { Plan } from '../../shared/contract/plan.ts';
import { isPlacementKind } from '../../shared/contract/registry.ts';
import type { Found, Source, ValueFrom, Wanted } from './source.ts';
import { placementValue } from '../../module/plan-names.ts';

/** The plans entry each plan was read from, and its inputs by kind, made once per plan (DESIGN §14). */
const entries = new WeakMap<Plan, { key: string; revision: number; byKind: Map<string, ValueFrom> }>();

/**
 * Says which `mesh-provisioner_plans` entry `plan` was decoded from (its key and revision), so its
 * placement values name it in a file's `from`. The plan watch calls it for every plan it takes.
 */
export function notePlanEntry(plan: Plan, entry: { key: string; revision: number }): void {
  entries.set(plan, { key: entry.key, revision: entry.revision, byKind: new Map() });
}

/** The `from` of a placement value of `kind` in `plan`: its plan's entry, one array per plan and kind. */
function placementFrom(plan: Plan, kind: string): ValueFrom | undefined {
  const entry = entries.get(plan);
  if (!entry) return undefined;
  let from = entry.byKind.get(kind);
  if (!from) entry.byKind.set(kind, (from = [{ kind, key: entry.key, rev: entry.revision }]));
  return from;
}

/** The source of the placement kinds. */
export function placementSource(): Source {
  return {
    name: 'placement',
    lookup(plan: Plan, wanted: Wanted): Found {
      const dependency = `placement:${plan.module}:${wanted.kind}:${wanted.name}`;
      if (!isPlacementKind(wanted.kind)) return { state: 'failed', reason: `"${wanted.kind}" is not a placement kind`, dependency };
      const value = placementValue(plan, wanted.kind, wanted.name);
      if (value === undefined) return { state: 'waiting', dependency };
      const from = placementFrom(plan, wanted.kind);
      return from ? { state: 'value', text: String(value), from, dependency } : { state: 'value', text: String(value), dependency };
    },
  };
}
