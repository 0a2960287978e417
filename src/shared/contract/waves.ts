// Which of a module's nodes each wave of a rollout holds (DESIGN §12): stable and spread, the nodes
// ordered by the sha256 of `<module>.<build>.<node>`, wave k the first ⌈fₖ·N⌉ of them — kept as the
// wave's cut, the hash of its last node at the start, so wave k is every node hashed at most its cut.
import { createHash } from 'node:crypto';

/**
 * ⌈fraction·total⌉ computed exactly: the fraction is read as the decimal JSON wrote (0.07 is 7/100),
 * so 0.07 of 100 is 7, where the float product 7.000000000000001 would round up to 8.
 */
export function waveSize(fraction: number, total: number): number {
  const parts = /^(\d+)(?:\.(\d+))?(?:e([+-]?\d+))?$/.exec(String(fraction));
  // A fraction the schema admits is a finite positive number, always written this way.
  if (!parts) throw new Error(`wave ${fraction} is not a decimal fraction`);
  const [, whole, decimals = '', exponent = '0'] = parts;
  const mantissa = BigInt(`${whole}${decimals}`) * BigInt(total);
  const scale = Number(exponent) - decimals.length;
  if (scale >= 0) return Number(mantissa * 10n ** BigInt(scale));
  const divisor = 10n ** BigInt(-scale);
  return Number((mantissa + divisor - 1n) / divisor);
}

/** A node's place in the waves of `module`'s `build`: the hex sha256 of `<module>.<build>.<node>` (UTF-8). */
export function nodeHash(module: string, build: string, node: string): string {
  return createHash('sha256').update(`${module}.${build}.${node}`, 'utf8').digest('hex');
}

/** The nodes in wave order for `module` and the new `build`: by `nodeHash`, ties by name. */
export function waveOrder(module: string, build: string, nodes: Iterable<string>): string[] {
  const keyed = [...new Set(nodes)].map((node) => ({ node, hash: nodeHash(module, build, node) }));
  keyed.sort((a, b) => (a.hash < b.hash ? -1 : a.hash > b.hash ? 1 : a.node < b.node ? -1 : a.node > b.node ? 1 : 0));
  return keyed.map((k) => k.node);
}

/**
 * Each wave's cut for the nodes on an older plan at the start, `ordered` by `waveOrder`: the hash
 * of the wave's last node. Wave k is then every node whose hash is at most its cut (DESIGN §12),
 * so the state keeps one hash a wave instead of the fleet's names.
 */
export function wavesCuts(module: string, build: string, ordered: readonly string[], waves: readonly number[]): string[] {
  if (ordered.length === 0) return [];
  return waves.map((_, k) => nodeHash(module, build, ordered[reachedBy(waves, k + 1, ordered.length) - 1]!));
}

/** The cut the waves up to `wave` (1-based) reach: undefined before the first, so no node is reached. */
export function cutOf(cuts: readonly string[], wave: number): string | undefined {
  return wave < 1 ? undefined : cuts[Math.min(wave, cuts.length) - 1];
}

/** How many of the ordered nodes the waves up to `wave` (1-based) reach. */
export function reachedBy(waves: readonly number[], wave: number, total: number): number {
  const fraction = waves[Math.min(wave, waves.length) - 1];
  return fraction === undefined ? 0 : Math.min(total, waveSize(fraction, total));
}
