// The token encoding of DESIGN §2: any string as one KV key token, and back exactly.
import type { Parsed } from '../base/result.ts';

const PLAIN_BYTE = /^[A-Za-z0-9\-_/]$/;
const HEX = '0123456789ABCDEF';
const UTF8 = new TextEncoder();

/** Encodes any string as one KV key token: bytes outside `A-Z a-z 0-9 - _ /` become `=XX`. */
export function encodeToken(text: string): string {
  let out = '';
  for (const char of text) {
    if (PLAIN_BYTE.test(char)) {
      out += char;
      continue;
    }
    for (const byte of UTF8.encode(char)) out += '=' + HEX[byte >> 4] + HEX[byte & 15];
  }
  return out;
}

/** Decodes one token exactly, or says why it is not a valid encoding. */
export function decodeToken(token: string): Parsed<string> {
  if (token === '') return { ok: false, reason: 'empty token' };
  const bytes: number[] = [];
  for (let i = 0; i < token.length; i++) {
    const char = token[i]!;
    if (char === '=') {
      const hex = token.slice(i + 1, i + 3);
      if (!/^[0-9A-F]{2}$/.test(hex)) return { ok: false, reason: `bad escape "=${hex}" at ${i}` };
      const byte = parseInt(hex, 16);
      if (PLAIN_BYTE.test(String.fromCharCode(byte))) {
        return { ok: false, reason: `"=${hex}" escapes a byte that stands for itself` };
      }
      bytes.push(byte);
      i += 2;
    } else if (PLAIN_BYTE.test(char)) {
      bytes.push(char.charCodeAt(0));
    } else {
      return { ok: false, reason: `character ${JSON.stringify(char)} at ${i} is not allowed in a token` };
    }
  }
  try {
    return { ok: true, value: new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(new Uint8Array(bytes)) };
  } catch {
    return { ok: false, reason: 'escapes do not decode as UTF-8' };
  }
}
