// A request of the verb `mesh-provisioner.provisioning` (DESIGN §6): parsed within the limits of §3,
// and the watch filter built from it, checked before the bus ever sees it.
import * as v from 'valibot';
import { APPLIED, COLLECT, NEEDS, REGISTRY_BUCKET } from '../../shared/contract/buckets.ts';
import { encodeToken, parseCollectKey, parseNeedKey, parseNodeModuleKey, parseRegistryKey } from '../../shared/contract/keys.ts';
import type { Parsed } from '../../shared/base/result.ts';
import { MAX_JSON_DEPTH, MAX_SUBJECT_BYTES, parseBoundedJson } from '../../shared/contract/limits.ts';
import { CollectItemSchema } from '../../shared/contract/collect.ts';
import { NeedSchema } from '../../shared/contract/need.ts';
import { ReportSchema } from '../../shared/contract/report.ts';
import { VERB_WHATS, VerbRequestSchema, type VerbRequest } from '../../shared/contract/verb.ts';

/** Largest request body, in bytes: a request is a handful of short fields. */
export const MAX_REQUEST_BYTES = 64 * 1024;
/** Longest piece of the asker's text (a field name, a value) an `{error}` quotes. */
const MAX_QUOTED = 80;

/** The request fields that narrow a what, each naming one leading token of its bucket's keys. */
export type NarrowField = 'node' | 'module' | 'collection' | 'contributor';
const NARROW_FIELDS: readonly NarrowField[] = ['node', 'module', 'collection', 'contributor'];

/** What the verb reads for one `what`. */
export type Shape = {
  /** The bucket read. */
  bucket: string;
  /** The request fields naming the key's leading tokens, in token order. */
  tokens: readonly NarrowField[];
  /** Whether the key has tokens after those (so a narrowing by all of them still ends in `.>`). */
  more: boolean;
  /** The keys.ts parser of the bucket's key shape. */
  parseKey(key: string): Parsed<unknown>;
  /** The schema every value must pass. */
  schema: v.GenericSchema;
};

const JsonObjectSchema = v.custom<Record<string, unknown>>((raw) => typeof raw === 'object' && raw !== null && !Array.isArray(raw), 'is not a JSON object');

/** A `what` answered from a seat bucket; `health` is answered from the seat's memory. */
export type BucketWhat = Exclude<VerbRequest['what'], 'health' | 'alive'>;

/** The shape of each `what` read from a bucket. */
export const SHAPES: Readonly<Record<BucketWhat, Shape>> = {
  registry: { bucket: REGISTRY_BUCKET, tokens: [], more: true, parseKey: parseRegistryKey, schema: JsonObjectSchema },
  needs: { bucket: NEEDS, tokens: ['node', 'module'], more: true, parseKey: parseNeedKey, schema: NeedSchema },
  applied: { bucket: APPLIED, tokens: ['node', 'module'], more: false, parseKey: parseNodeModuleKey, schema: ReportSchema },
  collect: { bucket: COLLECT, tokens: ['node', 'collection', 'contributor'], more: false, parseKey: parseCollectKey, schema: CollectItemSchema },
};

/**
 * Parses a request body within MAX_REQUEST_BYTES and MAX_JSON_DEPTH; the reason reads
 * `<field>: <what is wrong>`, naming the limit and the size when one is passed. An empty body
 * asks with no fields. Never throws.
 */
export function parseVerbRequest(body: Uint8Array): Parsed<VerbRequest> {
  if (body.length > MAX_REQUEST_BYTES) return { ok: false, reason: `request: ${body.length} bytes, past the limit of ${MAX_REQUEST_BYTES} bytes` };
  const text = new TextDecoder().decode(body);
  let raw: unknown = {};
  if (text.trim() !== '') {
    const parsed = parseBoundedJson(text, { maxBytes: MAX_REQUEST_BYTES, maxDepth: MAX_JSON_DEPTH });
    if (!parsed.ok) return { ok: false, reason: `request: ${parsed.reason}` };
    raw = parsed.value;
  }
  // valibot takes an array for an object; a request is never one.
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return { ok: false, reason: 'request: must be a JSON object' };
  const result = v.safeParse(VerbRequestSchema, raw);
  if (!result.success) return { ok: false, reason: result.issues.map(describeIssue).join('; ') };
  const allowed = narrowing(result.output.what);
  for (const field of NARROW_FIELDS) {
    if (result.output[field] === undefined || allowed.includes(field)) continue;
    const whats = VERB_WHATS.filter((what) => narrowing(what).includes(field)).join(', ');
    return { ok: false, reason: `${field}: only valid for what ${whats}, not ${result.output.what}` };
  }
  return { ok: true, value: result.output };
}

/** The fields that narrow a `what`: its bucket's leading key tokens, or `node` and `module` for `health` (keyed `<node>.<module>`). */
export function narrowing(what: VerbRequest['what']): readonly NarrowField[] {
  return what === 'health' ? ['node', 'module'] : what === 'alive' ? ['node'] : SHAPES[what].tokens;
}

function describeIssue(issue: v.BaseIssue<unknown>): string {
  const field = quote(v.getDotPath(issue) ?? 'request');
  if (issue.type === 'strict_object' && issue.expected === 'never') return `${field}: unknown field`;
  if (issue.message.startsWith('Invalid ')) return `${field}: expected ${issue.expected}, received ${quote(issue.received)}`;
  return `${field}: ${quote(issue.received)} ${issue.message}`;
}

/** The asker's text as an `{error}` quotes it: cut short, so a reply never echoes a hostile field whole. */
function quote(text: string): string {
  if (text.length <= MAX_QUOTED) return text;
  return `${text.slice(0, MAX_QUOTED)}…${text.startsWith('"') ? '"' : ''}`;
}

/**
 * The watch filter of a request: the narrowed leading tokens (`*` where not narrowed), then `.>`
 * when keys go on. Refused when the subject it makes (`$KV.<bucket>.<filter>`) is past
 * MAX_SUBJECT_BYTES, so no request can make the seat send a line the server drops it for.
 */
export function watchFilter(request: VerbRequest & { what: BucketWhat }): Parsed<string> {
  const shape = SHAPES[request.what];
  const tokens = shape.tokens.map((field) => {
    const value = request[field];
    if (value === undefined) return '*';
    return field === 'collection' ? encodeToken(value) : value;
  });
  let last = tokens.length - 1;
  while (last >= 0 && tokens[last] === '*') last--;
  const head = tokens.slice(0, last + 1).join('.');
  const filter = last < 0 ? '>' : last < tokens.length - 1 || shape.more ? `${head}.>` : head;
  const bytes = Buffer.byteLength(`$KV.${shape.bucket}.${filter}`);
  if (bytes > MAX_SUBJECT_BYTES) return { ok: false, reason: `request: the filter it makes is ${bytes} bytes, past the limit of ${MAX_SUBJECT_BYTES} bytes` };
  return { ok: true, value: filter };
}
