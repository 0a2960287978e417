// The bytes the reporter writes, each JSON text made once (DESIGN §7 points 2, 11): a report's
// with its time added to the text it was compared by, a need's fitted only when it would not fit,
// and a module's needs left alone when its fill named the same ones.
import type { NeedEntry } from '../fill/fill.ts';

/** The encoder of every value the reporter writes. */
export const UTF8 = new TextEncoder();

/** Whether two fills' need entries are the same, in order: kind, name, met and every file. */
export function sameEntries(a: readonly NeedEntry[], b: readonly NeedEntry[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const [x, y] = [a[i]!, b[i]!];
    if (x.kind !== y.kind || x.name !== y.name || x.met !== y.met || x.files.length !== y.files.length) return false;
    for (let j = 0; j < x.files.length; j++) if (x.files[j] !== y.files[j]) return false;
  }
  return true;
}

/**
 * A report's JSON with its time: the JSON of `{node, module, ...body}` with `"at"` added last, the
 * same text `JSON.stringify({node, module, ...body, at})` makes, without a second walk of the report.
 */
export function withTime(comparable: string, at: string): string {
  return `${comparable.slice(0, -1)},"at":${JSON.stringify(at)}}`;
}

/** The JSON bytes of `value`, or of `fit(value, maxBytes)` when they would pass `maxBytes`: one stringify when it fits. */
export function fittedBytes<T>(value: T, maxBytes: number, fit: (value: T, maxBytes: number) => T): Uint8Array {
  const text = JSON.stringify(value);
  return UTF8.encode(Buffer.byteLength(text) <= maxBytes ? text : JSON.stringify(fit(value, maxBytes)));
}
