// A kind whose source this client does not have yet: it fails the module clearly, naming the
// kind, instead of waiting for a value that nothing will ever deliver.
import type { Plan } from '../../shared/schemas.ts';
import type { Source, Wanted } from './source.ts';

/** The source standing in for the owner of `kinds` until it is built. */
export function unbuiltSource(name: string): Source {
  return {
    name,
    dependency: (plan: Plan, wanted: Wanted) => `${name}:${plan.module}:${wanted.kind}:${wanted.name}`,
    lookup: (_plan, wanted) => ({ state: 'failed', reason: `this client does not fill ${wanted.kind} values yet (their source, ${name}, is not built)` }),
  };
}
