// A trace's KEY-PATTERN (DESIGN §14): `<bucket>:<key pattern>`, the pattern a bucket's key with `*`
// standing for one whole token (`mesh-config_resolved:*.web.color`). Pure: checked here, so a
// pattern the bus could not take as a filter never reaches it.
import { fail, ok, type Parsed } from '../../../shared/base/result.ts';
import { MAX_KEY_BYTES } from '../../../shared/contract/limits.ts';

/** A checked pattern: the bucket and the key filter. */
export type KeyPattern = { bucket: string; pattern: string };

/** A bucket's name as JetStream takes one (a stream is `KV_<bucket>`). */
const BUCKET_NAME = /^[A-Za-z0-9_-]+$/;
/** A key's token as DESIGN §2 encodes one: its own characters and `=XX`. */
const KEY_TOKEN = /^(?:[A-Za-z0-9_/-]|=[0-9A-F]{2})+$/;

/** Parses `<bucket>:<pattern>`; a reason names what is wrong with it. */
export function parseKeyPattern(text: string): Parsed<KeyPattern> {
  const colon = text.indexOf(':');
  if (colon < 0) return fail(`trace: KEY-PATTERN "${text}" has no bucket: write it <bucket>:<key pattern>, e.g. mesh-config_resolved:*.web.color`);
  const bucket = text.slice(0, colon);
  const pattern = text.slice(colon + 1);
  if (!BUCKET_NAME.test(bucket)) return fail(`trace: "${bucket}" in KEY-PATTERN is not a bucket's name (letters, digits, - and _)`);
  if (pattern === '') return fail(`trace: KEY-PATTERN "${text}" has no key pattern after the bucket`);
  if (Buffer.byteLength(pattern) > MAX_KEY_BYTES) return fail(`trace: the key pattern is ${Buffer.byteLength(pattern)} bytes, past ${MAX_KEY_BYTES}`);
  for (const token of pattern.split('.')) {
    if (token === '*') continue;
    if (token === '') return fail(`trace: the key pattern "${pattern}" has an empty token (two dots, or one at an end)`);
    if (token.includes('*') || token === '>') return fail(`trace: "${token}" in the key pattern: * stands for one whole token, alone between dots`);
    if (!KEY_TOKEN.test(token)) return fail(`trace: "${token}" in the key pattern is not a key's token (write other bytes as =XX, DESIGN §2)`);
  }
  return ok({ bucket, pattern });
}

/** Whether `key` matches `pattern` (`*` one whole token). */
export function matchesPattern(pattern: string, key: string): boolean {
  const want = pattern.split('.');
  const have = key.split('.');
  return want.length === have.length && want.every((token, i) => token === '*' || token === have[i]);
}
