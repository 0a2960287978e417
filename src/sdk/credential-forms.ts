// The forms a consumer's credential can take in a text the helper did not write — an adapter's
// refusal or error, a served value — so that no such text is published or logged while it holds one
// (DESIGN §3: no credential in a bucket or a log line). A text holding one is withheld whole, never
// masked: a mask leaves the edges of an encoding and says where the credential was.
import { Buffer } from 'node:buffer';

/**
 * Shortest credential the helper serves, in UTF-8 bytes: a shorter one cannot be told apart from
 * ordinary text (a one-letter credential is in every line), so it is refused rather than looked for.
 */
export const MIN_CREDENTIAL_BYTES = 8;

/** What percent-encoders leave as it is: RFC 3986's unreserved set, encodeURIComponent's, encodeURI's, HTML forms'. */
const KEPT_BY_ENCODERS = [/[A-Za-z0-9\-._~]/, /[A-Za-z0-9\-._~!'()*]/, /[A-Za-z0-9\-._~!'()*;,/?:@&=+$#]/, /[A-Za-z0-9\-._*]/];

/**
 * The case folding texts and forms are compared under: lower-cased, then upper-cased. Upper-casing
 * alone misses a lower-cased `İ` (two characters then), lower-casing alone a final sigma (`ς` or `σ`
 * by its neighbours); the two together fold a credential the same wherever it stands.
 */
const fold = (text: string) => text.toLowerCase().toUpperCase();

/** How many code units of a form index it: every form of an 8-byte credential is at least 3 long. */
const PREFIX_UNITS = 2;

/**
 * Every form of `credential` the helper looks for (before case folding): as it is, JSON-quoted once
 * or twice (and with `\uXXXX` for every non-ASCII character), percent-encoded by the usual encoders
 * (a space as `%20` or `+`), hex, and base64 and base64url at each of the three byte offsets it can
 * start at inside a longer encoded text (the characters it shares with its neighbours left out).
 */
export function credentialForms(credential: string): string[] {
  const bytes = Buffer.from(credential, 'utf8');
  const quoted = jsonQuoted(credential);
  const forms = new Set([credential, quoted, jsonQuoted(quoted), asciiJson(credential), bytes.toString('hex')]);
  for (const kept of KEPT_BY_ENCODERS) {
    const encoded = percentEncode(bytes, kept);
    forms.add(encoded).add(encoded.replaceAll('%20', '+'));
  }
  for (let offset = 0; offset < 3; offset++) {
    forms.add(base64Core(bytes, offset, 'base64')).add(base64Core(bytes, offset, 'base64url'));
  }
  return [...forms].filter((form) => form.length > 0);
}

/** Finds consumers' credentials, in any of their forms, in texts; built again whenever the credentials change. */
export class CredentialMatcher {
  /** The folded forms, by their first PREFIX_UNITS code units. */
  readonly #byPrefix = new Map<string, string[]>();

  /** Looks for every credential of `credentials` at least MIN_CREDENTIAL_BYTES long (shorter ones are refused, not looked for). */
  constructor(credentials: Iterable<string>) {
    for (const credential of credentials) {
      if (Buffer.byteLength(credential) < MIN_CREDENTIAL_BYTES) continue;
      for (const form of credentialForms(credential).map(fold)) {
        const prefix = form.slice(0, PREFIX_UNITS);
        const list = this.#byPrefix.get(prefix);
        if (list) list.push(form);
        else this.#byPrefix.set(prefix, [form]);
      }
    }
  }

  /** Whether `text` holds a credential in one of its forms, compared case-folded. */
  holds(text: string): boolean {
    if (this.#byPrefix.size === 0) return false;
    const folded = fold(text);
    for (let at = 0; at + PREFIX_UNITS <= folded.length; at++) {
      const forms = this.#byPrefix.get(folded.slice(at, at + PREFIX_UNITS));
      if (forms?.some((form) => folded.startsWith(form, at))) return true;
    }
    return false;
  }

  /** Whether any string of `value` — a key or a leaf of an object, an array, a string — holds a credential. */
  holdsIn(value: unknown): boolean {
    if (typeof value === 'string') return this.holds(value);
    if (typeof value === 'number' || typeof value === 'bigint') return this.holds(String(value));
    if (Array.isArray(value)) return value.some((item) => this.holdsIn(item));
    if (value === null || typeof value !== 'object') return false;
    return Object.entries(value).some(([key, item]) => this.holds(key) || this.holdsIn(item));
  }
}

/** The text JSON-quoted, without its quotes. */
function jsonQuoted(text: string): string {
  return JSON.stringify(text).slice(1, -1);
}

/** JSON string content with every non-ASCII code unit written `\uXXXX`, as ASCII-only encoders write it. */
function asciiJson(text: string): string {
  return jsonQuoted(text).replace(/[^\x00-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** Percent-encodes the UTF-8 bytes, keeping the ASCII characters `kept` matches. */
function percentEncode(bytes: Buffer, kept: RegExp): string {
  let out = '';
  for (const byte of bytes) {
    const char = String.fromCharCode(byte);
    out += byte < 0x80 && kept.test(char) ? char : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/**
 * The base64 characters that depend on the credential's bytes alone when it starts `offset` bytes
 * into a longer encoded text: character i covers bits [6i, 6i+6), the credential bits [8·offset, 8·(offset+n)).
 */
function base64Core(bytes: Buffer, offset: number, encoding: 'base64' | 'base64url'): string {
  const text = Buffer.concat([Buffer.alloc(offset), bytes]).toString(encoding);
  return text.slice(Math.ceil((8 * offset) / 6), Math.floor((8 * (offset + bytes.length)) / 6));
}
