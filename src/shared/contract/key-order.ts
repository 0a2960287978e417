// The contract's "key order" (DESIGN §6: the verb's entries in key order): keys ordered by the bytes of their UTF-8.

/** Orders keys by the bytes of their UTF-8, as the contract's "key order" means, without encoding them. */
export function compareKeys(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointRank(x) - codePointRank(y);
  }
  return a.length - b.length;
}

// UTF-16 units sort as UTF-8 bytes do, except that a surrogate (a code point past U+FFFF) belongs after U+E000–U+FFFF.
function codePointRank(unit: number): number {
  if (unit < 0xd800) return unit;
  return unit < 0xe000 ? unit + 0x2000 : unit - 0x800;
}
