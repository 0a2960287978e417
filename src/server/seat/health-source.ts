// The verb's `health` (DESIGN §6) over both of the seat's books: the assignments' entries, keyed
// `<node>.<module>`, and each rollout that is not done, keyed `<module>`, in one key order.
import { compareKeys } from '../../shared/contract/keys.ts';
import type { HealthSource } from '../verb/health.ts';
import type { RolloutDirector } from './rollout/director.ts';

/** The assignments' health and the rollouts' together, keys merged in key order. */
export function withRollouts(book: HealthSource, director: Pick<RolloutDirector, 'healthKeys' | 'healthEntry'>): HealthSource {
  return {
    keys() {
      const a = book.keys();
      const b = director.healthKeys();
      if (b.length === 0) return a;
      const merged: string[] = [];
      let i = 0;
      let j = 0;
      while (i < a.length || j < b.length) {
        if (j >= b.length || (i < a.length && compareKeys(a[i]!, b[j]!) <= 0)) merged.push(a[i++]!);
        else merged.push(b[j++]!);
      }
      return merged;
    },
    entry: (key) => book.entry(key) ?? director.healthEntry(key),
  };
}
