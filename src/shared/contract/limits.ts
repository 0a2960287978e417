// Limits on what is read (DESIGN §3): every check is linear and runs before anything recursive or
// quadratic sees the input, so one hostile value fails its own key and nothing else.
import type { Parsed } from '../base/result.ts';
import { errorText } from '../base/errors.ts';

/** Deepest nesting of arrays and objects a JSON value may have. */
export const MAX_JSON_DEPTH = 64;
/** Longest name or key token, in UTF-8 bytes. */
export const MAX_TOKEN_BYTES = 255;
/** Longest KV key, in bytes. */
export const MAX_KEY_BYTES = 1024;
/**
 * Longest subject or filter built from an input, in bytes. nats-server refuses a protocol line
 * past its max_control_line (4096 by default) and drops the connection; a subject stays well below
 * so the verb, reply and headers of the same line still fit.
 */
export const MAX_SUBJECT_BYTES = 2048;
/** Largest template, in bytes. */
export const MAX_TEMPLATE_BYTES = 16 * 1024 * 1024;
/** Largest plan or composition, in bytes. */
export const MAX_PLAN_BYTES = 1024 * 1024;
/** Longest reply line from the engine, in bytes. */
export const MAX_ENGINE_LINE_BYTES = 64 * 1024 * 1024;
/** The largest login file read (a seed, a creds file, a CA bundle): far past any, short of exhausting memory. */
export const MAX_LOGIN_FILE_BYTES = 1024 * 1024;

const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * The deepest nesting of `[`/`{` in a JSON text, strings skipped, in one pass without recursion.
 * Stops counting once `stopAt` is passed. Malformed text gives some depth; JSON.parse judges it.
 */
export function jsonDepth(data: Uint8Array | string, stopAt = Infinity): number {
  // Bytes read by index, not through a function chosen per kind: that call per byte was a tenth
  // of the verb's walk of 20,000 reports.
  return typeof data === 'string' ? depthOfText(data, stopAt) : depthOfBytes(data, stopAt);
}

function depthOfText(data: string, stopAt: number): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < data.length; i++) {
    const c = data.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) {
      inString = true;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      depth++;
      if (depth > deepest) {
        deepest = depth;
        if (deepest > stopAt) return deepest;
      }
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      depth--;
    }
  }
  return deepest;
}

function depthOfBytes(data: Uint8Array, stopAt: number): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < data.length; i++) {
    const c = data[i]!;
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) {
      inString = true;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      depth++;
      if (depth > deepest) {
        deepest = depth;
        if (deepest > stopAt) return deepest;
      }
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      depth--;
    }
  }
  return deepest;
}

/** Size and depth bounds of one JSON read. */
export type JsonLimits = { maxBytes: number; maxDepth?: number };

/**
 * Parses JSON within limits: the size and nesting are checked first, so the reason of a refusal
 * names the limit and the size, and a hostile depth never reaches JSON.parse or a schema.
 */
export function parseBoundedJson(data: Uint8Array | string, limits: JsonLimits): Parsed<unknown> {
  const size = typeof data === 'string' ? Buffer.byteLength(data) : data.length;
  if (size > limits.maxBytes) return { ok: false, reason: `${size} bytes, past the limit of ${limits.maxBytes} bytes` };
  const maxDepth = limits.maxDepth ?? MAX_JSON_DEPTH;
  const depth = jsonDepth(data, maxDepth);
  if (depth > maxDepth) return { ok: false, reason: `nested deeper than ${maxDepth} levels` };
  const text = typeof data === 'string' ? data : Buffer.from(data.buffer, data.byteOffset, data.length).toString('utf8');
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (err) {
    return { ok: false, reason: `not JSON: ${withLine(errorText(err), text)}` };
  }
}

/**
 * JSON.parse's reason with the line and column of the position it names, for a text of several lines
 * (a file of 2,000 keys): node 20 says only `at position 25`; a reason that names its line is kept.
 */
function withLine(reason: string, text: string): string {
  const at = /at position (\d+)/.exec(reason);
  if (!at || /\bline\b/.test(reason) || !text.includes('\n')) return reason;
  const before = text.slice(0, Number(at[1]));
  const line = before.split('\n').length;
  return `${reason} (line ${line}, column ${before.length - before.lastIndexOf('\n')})`;
}

/** Says why a text is too long for a token (name, kind, collection…), or nothing when it fits. */
export function tokenTooLong(what: string, text: string): string | undefined {
  const bytes = Buffer.byteLength(text);
  return bytes > MAX_TOKEN_BYTES ? `${what} is ${bytes} bytes, past the limit of ${MAX_TOKEN_BYTES}` : undefined;
}
