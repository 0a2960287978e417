// Every key shape of DESIGN §3: nothing else in src/ joins keys. The names and tokens keys are made
// of are their own files; they are exported here too, so every importer reads keys from one place.
import { fail, type Parsed } from '../base/result.ts';
import { decodeToken, encodeToken } from './key-token.ts';
import { checkName, checkSegment, KIND_PATTERN } from './names.ts';

export { compareKeys } from './key-order.ts';
export { decodeToken, encodeToken } from './key-token.ts';
export { checkName, checkSegment, isName, isSegmentName, KIND_PATTERN, NAME_PATTERN, SEGMENT_NAME_PATTERN, segmentNameProblem } from './names.ts';

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
