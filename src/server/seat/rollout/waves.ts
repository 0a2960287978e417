// Which of a module's nodes each wave of a rollout holds (DESIGN §12): stable and spread, the nodes
// ordered by the sha256 of `<module>.<build>.<node>`, wave k the first ⌈fₖ·N⌉ of them.
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

/** The nodes in wave order for `module` and the new `build`: by the sha256 of `<module>.<build>.<node>` (UTF-8), ties by name. */
export function waveOrder(module: string, build: string, nodes: Iterable<string>): string[] {
  const keyed = [...new Set(nodes)].map((node) => ({ node, hash: createHash('sha256').update(`${module}.${build}.${node}`, 'utf8').digest('hex') }));
  keyed.sort((a, b) => (a.hash < b.hash ? -1 : a.hash > b.hash ? 1 : a.node < b.node ? -1 : a.node > b.node ? 1 : 0));
  return keyed.map((k) => k.node);
}

/** How many of the ordered nodes the waves up to `wave` (1-based) reach. */
export function reachedBy(waves: readonly number[], wave: number, total: number): number {
  const fraction = waves[Math.min(wave, waves.length) - 1];
  return fraction === undefined ? 0 : Math.min(total, waveSize(fraction, total));
}
