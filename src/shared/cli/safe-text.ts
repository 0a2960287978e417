// Text from the bus shown to a person (DESIGN §3): what a node, a module or a provider wrote may hold
// terminal escapes or line breaks; shown through these, it can neither drive the operator's terminal
// nor forge or hide a line. Every table, lint message, log line and `--json` output goes through here.

/**
 * What is never shown raw: C0, DEL and C1 (the control characters); U+2028/U+2029, which some
 * viewers break lines at; the whole Unicode Bidi_Control set (U+061C, U+200E/U+200F, the embeddings
 * and overrides U+202A–U+202E, the isolates U+2066–U+2069), which reorder what a line shows; and a
 * lone surrogate, which no UTF-8 output can carry (it would come out as U+FFFD, hiding what it was).
 */
const UNSAFE =
  /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** What JSON.stringify leaves raw of UNSAFE (it escapes C0 and lone surrogates itself). */
const UNSAFE_IN_JSON = /[\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/g;

/** The most UTF-8 bytes of a table cell before it is cut (DESIGN §3: 4 KiB). */
export const MAX_CELL_BYTES = 4096;

/**
 * `text` with each unsafe code point written as a visible escape — `\x1b` for one below U+0100,
 * `\u2028` above — and everything else, backslashes included, kept: the identity on safe text, so
 * applying it twice changes nothing.
 */
export function safeText(text: string): string {
  return text.replace(UNSAFE, (c) => {
    const code = c.charCodeAt(0);
    return code < 0x100 ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

/** `text` as a table cell: safe, and past MAX_CELL_BYTES cut at a code point with `…` appended. */
export function safeCell(text: string): string {
  const safe = safeText(text);
  // Three bytes per UTF-16 unit bound its UTF-8: most cells are far below and need no count.
  if (safe.length * 3 <= MAX_CELL_BYTES) return safe;
  let bytes = 0;
  let end = 0;
  for (const c of safe) {
    const code = c.codePointAt(0)!;
    bytes += code < 0x80 ? 1 : code < 0x800 ? 2 : code < 0x10000 ? 3 : 4;
    if (bytes > MAX_CELL_BYTES) return `${safe.slice(0, end)}…`;
    end += c.length;
  }
  return safe;
}

/**
 * `value` as JSON that is safe to print: JSON.stringify's text with DEL, C1, U+2028/U+2029 and the
 * bidi controls written `\uXXXX` too (U+009B is CSI to many terminals). Still valid JSON, whole and
 * uncut: it parses back to exactly `value`. `space` indents as JSON.stringify's does (for a file).
 */
export function safeJson(value: unknown, space?: number): string {
  return (JSON.stringify(value, null, space) ?? 'null').replace(UNSAFE_IN_JSON, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
