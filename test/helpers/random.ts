// A small seeded PRNG for property tests: the same seed gives the same cases, so a failure repeats.

/** A random source: next() in [0, 1). */
export type Random = { next(): number; int(n: number): number; pick<T>(items: readonly T[]): T };

/** mulberry32, seeded. */
export function seeded(seed: number): Random {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  return { next, int, pick: (items) => items[int(items.length)]! };
}

/** The seed of this run: MESH_TEST_SEED or a fixed default, printed by a failing assertion's message. */
export const SEED = Number(process.env['MESH_TEST_SEED'] ?? 20261129);
