// The verb's `health` (DESIGN §6) over both of the seat's books: the assignments' entries, keyed
// `<node>.<module>`, each rollout that is not done, keyed `<module>`, and each node silent or with its
// engine down, keyed `<node>`, in one key order; and the verb's `alive` (DESIGN §14).
import { compareKeys } from '../../shared/contract/keys.ts';
import type { HealthSource } from '../verb/health.ts';
import type { RolloutDirector } from './rollout/director.ts';
import type { LivenessMemory } from './liveness/memory.ts';

/** The assignments' health and the rollouts' together, keys merged in key order. */
export function withRollouts(book: HealthSource, director: Pick<RolloutDirector, 'healthKeys' | 'healthEntry'>): HealthSource {
  return {
    keys: () => merge(book.keys(), director.healthKeys()),
    entry: (key) => book.entry(key) ?? director.healthEntry(key),
  };
}

/**
 * The health so far and each node's own (silent, its engine down: keyed `<node>`, DESIGN §14). A
 * node named as a module whose rollout has an entry shows the node's: while it is silent, status
 * exits 1 all the same, and `rollout` reads the rollouts on its own verb.
 */
export function withNodes(health: HealthSource, memory: Pick<LivenessMemory, 'healthKeys' | 'healthEntry'>): HealthSource {
  return {
    keys: () => merge(health.keys(), memory.healthKeys()),
    entry: (key) => memory.healthEntry(key) ?? health.entry(key),
  };
}

/** The verb's `alive`: each node with a plan, its last word and its health, keyed `<node>`. */
export function aliveSource(memory: Pick<LivenessMemory, 'plannedKeys' | 'aliveEntry'>): HealthSource {
  return { keys: () => memory.plannedKeys(), entry: (key) => memory.aliveEntry(key) };
}

/** Two key lists in key order as one, each key once. */
function merge(a: readonly string[], b: readonly string[]): readonly string[] {
  if (b.length === 0) return a;
  if (a.length === 0) return b;
  const merged: string[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    const order = j >= b.length ? -1 : i >= a.length ? 1 : compareKeys(a[i]!, b[j]!);
    if (order <= 0) merged.push(a[i++]!);
    else merged.push(b[j++]!);
    if (order === 0) j++;
  }
  return merged;
}
