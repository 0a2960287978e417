// SASLprep (RFC 4013) as PostgreSQL applies it to a password before hashing it for SCRAM — exactly as
// its src/common/saslprep.c (pg_saslprep) does: ASCII as it is; otherwise non-ASCII spaces mapped to a
// space and the "commonly mapped to nothing" characters dropped, then NFKC. Prohibited and unassigned
// characters and the bidi rule are checked on the mapped text before normalization (PostgreSQL's
// code does so, though RFC 3454 says the output), so the outcome never depends on a Unicode version
// newer than 3.2. Where the checks fail, PostgreSQL (and libpq) hash the password's raw bytes
// instead, so a failure here is an answer too, not an error.
import { L_CAT, MAPPED_TO_NOTHING, NON_ASCII_SPACE, PROHIBITED, RAND_AL_CAT, UNASSIGNED } from './saslprep-tables.ts';

/** A table of code point ranges, as [first, last] pairs in order. */
type Ranges = Uint32Array;

/** What SASLprep made of a password: the prepared text, or why PostgreSQL uses the raw bytes instead. */
export type Prepared = { ok: true; text: string } | { ok: false; reason: string };

const tables = {
  space: parseRanges(NON_ASCII_SPACE),
  nothing: parseRanges(MAPPED_TO_NOTHING),
  prohibited: parseRanges(PROHIBITED),
  unassigned: parseRanges(UNASSIGNED),
  randAL: parseRanges(RAND_AL_CAT),
  l: parseRanges(L_CAT),
};

/** Prepares `password` as pg_saslprep does; see the file's comment. */
export function saslprep(password: string): Prepared {
  if (/^[\x00-\x7f]*$/.test(password)) return { ok: true, text: password };
  const mapped = map(password);
  if (mapped.length === 0) return { ok: false, reason: 'nothing is left once mapped' };
  const codes = [...mapped].map((c) => c.codePointAt(0)!);
  if (codes.some((c) => inRanges(tables.prohibited, c))) return { ok: false, reason: 'it holds a prohibited character' };
  if (codes.some((c) => inRanges(tables.unassigned, c))) return { ok: false, reason: 'it holds a character Unicode 3.2 did not assign' };
  if (codes.some((c) => inRanges(tables.randAL, c))) {
    const rightToLeftAtBothEnds = inRanges(tables.randAL, codes[0]!) && inRanges(tables.randAL, codes.at(-1)!);
    if (codes.some((c) => inRanges(tables.l, c)) || !rightToLeftAtBothEnds) return { ok: false, reason: 'it mixes directions against the bidi rule' };
  }
  return { ok: true, text: mapped.normalize('NFKC') };
}

/** SASLprep's first two steps alone (what node-postgres applies): the mapping, then NFKC. */
export function mapAndNormalize(password: string): string {
  return map(password).normalize('NFKC');
}

/** SASLprep's mapping: non-ASCII spaces to a space, the "commonly mapped to nothing" characters dropped. */
function map(password: string): string {
  let mapped = '';
  for (const char of password) {
    const code = char.codePointAt(0)!;
    if (inRanges(tables.space, code)) mapped += ' ';
    else if (!inRanges(tables.nothing, code)) mapped += char;
  }
  return mapped;
}

/** Reads a table's `first-last` or `one` hex ranges. */
function parseRanges(text: string): Ranges {
  const pairs = text.split(' ').flatMap((range) => {
    const [first, last = first] = range.split('-');
    return [Number.parseInt(first!, 16), Number.parseInt(last!, 16)];
  });
  return Uint32Array.from(pairs);
}

/** Whether `code` is in the table (binary search over its pairs). */
function inRanges(ranges: Ranges, code: number): boolean {
  let low = 0;
  let high = ranges.length / 2 - 1;
  while (low <= high) {
    const mid = (low + high) >> 1;
    if (code < ranges[2 * mid]!) high = mid - 1;
    else if (code > ranges[2 * mid + 1]!) low = mid + 1;
    else return true;
  }
  return false;
}
