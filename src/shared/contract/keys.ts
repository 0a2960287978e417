// The token encoding of DESIGN §2 and every key shape of §3: nothing else in src/ joins keys.
import { fail, type Parsed } from '../base/result.ts';

/** A name: a node, module or contributor (DESIGN §2). */
export const NAME_PATTERN = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * A secret's name, a provision or a local (DESIGN §2): each becomes a segment of a vault name, so it
 * holds no `/`, `.` or `..`, and a bound key's token stands for itself.
 */
export const SEGMENT_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;

/** A placeholder kind (DESIGN §8). */
export const KIND_PATTERN = /^[a-z][a-z0-9-]*$/;

const PLAIN_BYTE = /^[A-Za-z0-9\-_/]$/;
const HEX = '0123456789ABCDEF';
const UTF8 = new TextEncoder();

/** Whether `name` is a valid node, module or contributor name. */
export function isName(name: string): boolean {
  return NAME_PATTERN.test(name);
}

/** Whether `name` is a valid secret name, provision or local. */
export function isSegmentName(name: string): boolean {
  return SEGMENT_NAME_PATTERN.test(name);
}

/** Says why a text is not a secret name, provision or local (quoting at most 64 characters of it); nothing when it is. */
export function segmentNameProblem(text: string): string | undefined {
  if (isSegmentName(text)) return undefined;
  const quoted = JSON.stringify(text.length > 64 ? `${text.slice(0, 64)}…` : text);
  return `is ${quoted}, not a name of 1 to 128 of A-Z a-z 0-9 _ - starting with a letter or digit (no /, . or ..)`;
}

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

/** A key of the shape `<node>.<module>` (assignments, plans, applied). */
export type NodeModuleKey = { node: string; module: string };
/** A key of `mesh-config_resolved`: `<node>.<module>.<key>`, the key free to hold dots. */
export type ConfigKey = NodeModuleKey & { key: string };
/** A key of `mesh-provisioner_needs`: `<node>.<module>.<kind>.<name-token>`. */
export type NeedKey = NodeModuleKey & { kind: string; name: string };
/** A key of `mesh-provisioner_collect`: `<node>.<collection-token>.<contributor>`. */
export type CollectKey = { node: string; collection: string; contributor: string };
/** A key of `<provider>_bound`: `<node>.<module>.<provision>[.<local>]`. */
export type BoundKey = NodeModuleKey & { provision: string; local?: string };

/** Says why `value` of `field` is not a node, module or contributor name; nothing when it is. */
export function checkName(field: string, value: string): string | undefined {
  return isName(value) ? undefined : `${field} "${value}" is not a valid name (a-z, 0-9 and -, at most 63)`;
}

/** Says why `value` of `field` is not a secret name, provision or local; nothing when it is. */
export function checkSegment(field: string, value: string): string | undefined {
  const problem = segmentNameProblem(value);
  return problem === undefined ? undefined : `${field} ${problem}`;
}

function splitKey(key: string, min: number, max: number): Parsed<string[]> {
  const tokens = key.split('.');
  if (tokens.length < min || tokens.length > max) {
    const want = min === max ? `${min}` : `${min} to ${max}`;
    return fail(`has ${tokens.length} tokens, wants ${want}`);
  }
  return { ok: true, value: tokens };
}

/** Builds `<node>.<module>`. */
export function nodeModuleKey(node: string, module: string): string {
  return `${node}.${module}`;
}

/** Parses `<node>.<module>`. */
export function parseNodeModuleKey(key: string): Parsed<NodeModuleKey> {
  const split = splitKey(key, 2, 2);
  if (!split.ok) return split;
  const [node, module] = split.value as [string, string];
  const bad = checkName('node', node) ?? checkName('module', module);
  return bad ? fail(bad) : { ok: true, value: { node, module } };
}

/** Parses a module key of `mesh-catalog_modules`: the module's name itself, so there is nothing to build. */
export function parseModuleKey(key: string): Parsed<string> {
  const bad = checkName('module', key);
  return bad ? fail(bad) : { ok: true, value: key };
}

/** Builds a registry key: the kind itself. */
export function registryKey(kind: string): string {
  return kind;
}

/** Parses a registry key. */
export function parseRegistryKey(key: string): Parsed<string> {
  return KIND_PATTERN.test(key) ? { ok: true, value: key } : fail(`kind "${key}" does not match ${KIND_PATTERN}`);
}

/**
 * Builds `<node>.<module>.<key>` of `mesh-config_resolved`: a config key's dots stay dots, each part
 * between them encoded as a token (DESIGN §2: `db.host` is `db.host`, `a:b` is `a=3Ab`).
 */
export function configKey(node: string, module: string, key: string): string {
  return `${node}.${module}.${key.split('.').map(encodeToken).join('.')}`;
}

/** Parses `<node>.<module>.<key>` of `mesh-config_resolved`. */
export function parseConfigKey(key: string): Parsed<ConfigKey> {
  const tokens = key.split('.');
  if (tokens.length < 3) return fail(`has ${tokens.length} tokens, wants at least 3`);
  const [node, module] = tokens as [string, string];
  const bad = checkName('node', node) ?? checkName('module', module);
  if (bad) return fail(bad);
  const rest: string[] = [];
  for (const token of tokens.slice(2)) {
    if (token === '') return fail('config key has an empty token');
    const part = decodeToken(token);
    if (!part.ok) return fail(`config key token "${token}": ${part.reason}`);
    // configKey writes a dot as a separator, never as `=2E`: two keys must not name one config key.
    if (part.value.includes('.')) return fail(`config key token "${token}" escapes a dot`);
    rest.push(part.value);
  }
  return { ok: true, value: { node, module, key: rest.join('.') } };
}

/** Builds `<node>.<module>.<kind>.<name-token>` of `mesh-provisioner_needs`. */
export function needKey(node: string, module: string, kind: string, name: string): string {
  return `${node}.${module}.${kind}.${encodeToken(name)}`;
}

/** Parses `<node>.<module>.<kind>.<name-token>`. */
export function parseNeedKey(key: string): Parsed<NeedKey> {
  const split = splitKey(key, 4, 4);
  if (!split.ok) return split;
  const [node, module, kind, token] = split.value as [string, string, string, string];
  const bad = checkName('node', node) ?? checkName('module', module);
  if (bad) return fail(bad);
  if (!KIND_PATTERN.test(kind)) return fail(`kind "${kind}" does not match ${KIND_PATTERN}`);
  const name = decodeToken(token);
  if (!name.ok) return fail(`name token: ${name.reason}`);
  return { ok: true, value: { node, module, kind, name: name.value } };
}

/** Builds `<node>.<collection-token>.<contributor>` of `mesh-provisioner_collect`. */
export function collectKey(node: string, collection: string, contributor: string): string {
  return `${node}.${encodeToken(collection)}.${contributor}`;
}

/** Parses `<node>.<collection-token>.<contributor>`. */
export function parseCollectKey(key: string): Parsed<CollectKey> {
  const split = splitKey(key, 3, 3);
  if (!split.ok) return split;
  const [node, token, contributor] = split.value as [string, string, string];
  const bad = checkName('node', node) ?? checkName('contributor', contributor);
  if (bad) return fail(bad);
  const collection = decodeToken(token);
  if (!collection.ok) return fail(`collection token: ${collection.reason}`);
  return { ok: true, value: { node, collection: collection.value, contributor } };
}

/** Builds `<node>.<module>.<provision>[.<local>]` of `<provider>_bound`. */
export function boundKey(node: string, module: string, provision: string, local?: string): string {
  const base = `${node}.${module}.${encodeToken(provision)}`;
  return local === undefined ? base : `${base}.${encodeToken(local)}`;
}

/** Parses `<node>.<module>.<provision>[.<local>]`; the provision and local must be in their grammar (SEGMENT_NAME_PATTERN). */
export function parseBoundKey(key: string): Parsed<BoundKey> {
  const split = splitKey(key, 3, 4);
  if (!split.ok) return split;
  const [node, module, provision, local] = split.value as [string, string, string, string?];
  // A name of the grammar is its own token: one holding `=XX` was not made from a provision or local.
  const bad =
    checkName('node', node) ??
    checkName('module', module) ??
    checkSegment('provision', provision) ??
    (local === undefined ? undefined : checkSegment('local', local));
  if (bad) return fail(bad);
  return { ok: true, value: local === undefined ? { node, module, provision } : { node, module, provision, local } };
}

/** The bucket a provider serves its bound entries in. */
export function boundBucket(provider: string): string {
  return `${provider}_bound`;
}

/**
 * Says the first field a value names differently from the key it is stored under (a value written
 * under another key): `field "node" is "n2" but the key says "n1"`. Nothing when they agree.
 */
export function keyDisagreement(keyParts: object, value: Readonly<Record<string, unknown>>): string | undefined {
  for (const [field, expected] of Object.entries(keyParts)) {
    if (value[field] !== expected) return `field "${field}" is ${JSON.stringify(value[field])} but the key says ${JSON.stringify(expected)}`;
  }
  return undefined;
}

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
