// The rollouts as the verb's `health` shows them (DESIGN §6, §12): an entry keyed `<module>` for each
// rollout not done, or done with nodes still failed.
import { compareKeys } from '../../../shared/contract/keys.ts';
import type { RolloutHealth } from '../../../shared/contract/rollout-state.ts';
import type { RolloutContext } from './context.ts';
import { rolloutHealthEntry } from './failed-nodes.ts';

/** The modules whose rollout is not done, or done with nodes still failed, in key order. */
export function rolloutHealthKeys(ctx: RolloutContext): string[] {
  const host = ctx.host();
  if (!host) return [];
  return [...ctx.lives.values()]
    .filter((l) => rolloutHealthEntry(l, host) !== undefined)
    .map((l) => l.state.module)
    .sort(compareKeys);
}

/** The entry of a module's rollout not done, or done with failed nodes (`rolloutHealthEntry`). */
export function rolloutHealth(ctx: RolloutContext, module: string): RolloutHealth | undefined {
  const live = ctx.lives.get(module);
  const host = ctx.host();
  return live && host ? rolloutHealthEntry(live, host) : undefined;
}
