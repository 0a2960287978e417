// The one canonical JSON text of a value (DESIGN §3, "A bound entry answers one request"): what the
// provider helper and a node's client both hash, so the same provision entry gives the same text
// on each side whatever order its keys were written in. It is RFC 8785's (JCS) form for what JSON
// carries here: object keys sorted by their UTF-16 code units at every depth, no spaces, numbers and
// strings as ECMAScript's JSON.stringify writes them (non-ASCII as itself, a lone surrogate as
// `\udXXX`), so another implementation can give the same bytes.

/**
 * The canonical JSON text of `value`: keys sorted at every depth, no spaces. A key whose value is
 * `undefined` is left out, as JSON.stringify leaves it; a number that is not finite, a bigint or a
 * function cannot come from JSON and throws a TypeError naming it.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError(`canonical JSON has no form for the number ${value}`);
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map((item) => (item === undefined ? 'null' : canonicalJson(item))).join(',')}]`;
  if (typeof value !== 'object') throw new TypeError(`canonical JSON has no form for a ${typeof value}`);
  const record = value as Record<string, unknown>;
  // The default sort compares UTF-16 code units, as RFC 8785 asks.
  const members = Object.keys(record)
    .sort()
    .filter((k) => record[k] !== undefined)
    .map((k) => `${JSON.stringify(k)}:${canonicalJson(record[k])}`);
  return `{${members.join(',')}}`;
}
