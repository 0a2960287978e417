// The read-only verb `mesh-provisioner.provisioning` (DESIGN §6): one seat bucket read, narrowed,
// checked key by key and paged so that no reply exceeds the connection's max payload.
import * as v from 'valibot';
import type { Msg, NatsConnection } from '@nats-io/transport-node';
import { jsonBytes, readAll } from '../shared/bus.ts';
import { APPLIED, COLLECT, NEEDS, PROVISIONING_VERB, REGISTRY_BUCKET } from '../shared/buckets.ts';
import { encodeToken, parseCollectKey, parseNeedKey, parseNodeModuleKey, parseRegistryKey, type Parsed } from '../shared/keys.ts';
import type { Logger } from '../shared/log.ts';
import {
  CollectItemSchema, NeedSchema, ReportSchema, VERB_WHATS, VerbRequestSchema, validate, type VerbReply, type VerbRequest,
} from '../shared/schemas.ts';

/** Bytes a reply leaves free under the connection's max payload. */
export const REPLY_HEADROOM = 1024;
/** The max payload assumed when the connection has not said its own (the nats-server default). */
export const DEFAULT_MAX_PAYLOAD = 1024 * 1024;

/** The request fields that narrow a what, each naming one leading token of its bucket's keys. */
type NarrowField = 'node' | 'module' | 'collection' | 'contributor';
const NARROW_FIELDS: readonly NarrowField[] = ['node', 'module', 'collection', 'contributor'];

/** What the verb reads for one `what`. */
type Shape = {
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

const JsonObjectSchema = v.custom<Record<string, unknown>>(
  (raw) => typeof raw === 'object' && raw !== null && !Array.isArray(raw),
  'is not a JSON object',
);

const SHAPES: Readonly<Record<VerbRequest['what'], Shape>> = {
  registry: { bucket: REGISTRY_BUCKET, tokens: [], more: true, parseKey: parseRegistryKey, schema: JsonObjectSchema },
  needs: { bucket: NEEDS, tokens: ['node', 'module'], more: true, parseKey: parseNeedKey, schema: NeedSchema },
  applied: { bucket: APPLIED, tokens: ['node', 'module'], more: false, parseKey: parseNodeModuleKey, schema: ReportSchema },
  collect: { bucket: COLLECT, tokens: ['node', 'collection', 'contributor'], more: false, parseKey: parseCollectKey, schema: CollectItemSchema },
};

/** One key of the bucket as the reply lists it: an entry, or out of shape with the reason. */
type Row = { key: string; value: unknown } | { key: string; reason: string };

/** Orders keys by the bytes of their UTF-8, as the contract's "key order" means. */
export function compareKeys(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

/** Serves mesh-provisioner.provisioning until stopped. */
export function serveProvisioning(nc: NatsConnection, log: Logger): { stop(): Promise<void> } {
  const sub = nc.subscribe(PROVISIONING_VERB);
  const inFlight = new Set<Promise<void>>();
  const loop = (async () => {
    for await (const msg of sub) {
      // Answering to a `$JS.` subject would make a JetStream API call with the seat's rights for the asker (DESIGN §11).
      if (!msg.reply || msg.reply.startsWith('$JS.')) {
        log.debug(`provisioning: ignored a request with reply subject ${JSON.stringify(msg.reply ?? '')}`);
        continue;
      }
      const answering: Promise<void> = answer(nc, msg, log).finally(() => inFlight.delete(answering));
      inFlight.add(answering);
    }
  })().catch((err: unknown) => log.error(`provisioning: subscription ended: ${(err as Error).message}`));
  log.info(`provisioning: serving ${PROVISIONING_VERB}`);
  return {
    async stop() {
      if (!sub.isClosed()) sub.unsubscribe();
      await loop;
      await Promise.allSettled([...inFlight]);
    },
  };
}

async function answer(nc: NatsConnection, msg: Msg, log: Logger): Promise<void> {
  const reply = await answerProvisioning(nc, msg.data, nc.info?.max_payload ?? DEFAULT_MAX_PAYLOAD);
  if ('error' in reply) log.info(`provisioning: answered {error}: ${reply.error}`);
  try {
    msg.respond(jsonBytes(reply));
  } catch (err) {
    log.warn(`provisioning: could not answer: ${(err as Error).message}`);
  }
}

/** Answers one request (exported for tests and the query CLI's reuse of shapes). */
export async function answerProvisioning(
  nc: NatsConnection,
  body: Uint8Array,
  maxPayload: number,
): Promise<VerbReply | { error: string }> {
  const request = parseRequest(body);
  if (!request.ok) return { error: request.reason };
  const { what, limit, after } = request.value;
  const shape = SHAPES[what];
  let stored: Map<string, Uint8Array>;
  try {
    stored = await readAll(nc, shape.bucket, filterFor(shape, request.value));
  } catch (err) {
    return { error: `reading ${shape.bucket}: ${(err as Error).message}` };
  }
  try {
    const keys = [...stored.keys()].filter((key) => after === undefined || compareKeys(key, after) > 0).sort(compareKeys);
    return page(what, keys, (key) => classify(shape, key, stored.get(key)!), limit ?? Infinity, maxPayload - REPLY_HEADROOM);
  } catch (err) {
    return { error: `internal: ${(err as Error).message}` };
  }
}

/** Parses a request; the reason reads `<field>: <what is wrong>`. An empty body asks with no fields. */
function parseRequest(body: Uint8Array): Parsed<VerbRequest> {
  const text = new TextDecoder().decode(body);
  let raw: unknown = {};
  if (text.trim() !== '') {
    try {
      raw = JSON.parse(text);
    } catch (err) {
      return { ok: false, reason: `request: not JSON (${(err as Error).message})` };
    }
  }
  // valibot takes an array for an object; a request is never one.
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return { ok: false, reason: 'request: must be a JSON object' };
  const result = v.safeParse(VerbRequestSchema, raw);
  if (!result.success) return { ok: false, reason: result.issues.map(describeIssue).join('; ') };
  const allowed = SHAPES[result.output.what].tokens;
  for (const field of NARROW_FIELDS) {
    if (result.output[field] === undefined || allowed.includes(field)) continue;
    const whats = VERB_WHATS.filter((what) => SHAPES[what].tokens.includes(field)).join(', ');
    return { ok: false, reason: `${field}: only valid for what ${whats}, not ${result.output.what}` };
  }
  return { ok: true, value: result.output };
}

function describeIssue(issue: v.BaseIssue<unknown>): string {
  const field = v.getDotPath(issue) ?? 'request';
  if (issue.type === 'strict_object' && issue.expected === 'never') return `${field}: unknown field`;
  if (issue.message.startsWith('Invalid ')) return `${field}: expected ${issue.expected}, received ${issue.received}`;
  return `${field}: ${issue.received} ${issue.message}`;
}

/** The watch filter: the narrowed leading tokens (`*` where not narrowed), then `.>` when keys go on. */
function filterFor(shape: Shape, request: VerbRequest): string {
  const tokens = shape.tokens.map((field) => {
    const value = request[field];
    if (value === undefined) return '*';
    return field === 'collection' ? encodeToken(value) : value;
  });
  let last = tokens.length - 1;
  while (last >= 0 && tokens[last] === '*') last--;
  if (last < 0) return '>';
  const head = tokens.slice(0, last + 1).join('.');
  return last < tokens.length - 1 || shape.more ? `${head}.>` : head;
}

/** An entry, or out of shape when the key, the value, or their agreement fails. */
function classify(shape: Shape, key: string, data: Uint8Array): Row {
  const parsedKey = shape.parseKey(key);
  if (!parsedKey.ok) return { key, reason: `key: ${parsedKey.reason}` };
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder().decode(data));
  } catch (err) {
    return { key, reason: `value: not JSON (${(err as Error).message})` };
  }
  const checked = validate(shape.schema, value);
  if (!checked.ok) return { key, reason: `value: ${checked.reason}` };
  const disagreement = disagree(parsedKey.value, value as Record<string, unknown>);
  return disagreement ? { key, reason: disagreement } : { key, value };
}

/** Says the first field the value names differently from its key (a value written under the wrong key). */
function disagree(keyParts: unknown, value: Record<string, unknown>): string | undefined {
  if (typeof keyParts !== 'object' || keyParts === null) return undefined;
  for (const [field, expected] of Object.entries(keyParts)) {
    if (value[field] !== expected) {
      return `value: field "${field}" is ${JSON.stringify(value[field])} but the key says ${JSON.stringify(expected)}`;
    }
  }
  return undefined;
}

/**
 * Fills one reply in key order up to `limit` entries (out-of-shape rows ride along) and `budget`
 * bytes of JSON; `next` is the last key included when keys remain. A first row too large for any
 * reply is listed out of shape instead, so the cursor always moves on.
 */
function page(what: string, keys: string[], rowOf: (key: string) => Row, limit: number, budget: number): VerbReply {
  const reply: VerbReply = { what, entries: [], outOfShape: [] };
  let size = byteLength(reply);
  let taken = 0;
  for (const key of keys) {
    let row = rowOf(key);
    const full = 'value' in row && reply.entries.length >= limit;
    if (full || size + costOf(reply, row) + nextCost(key) > budget) {
      if (full || taken > 0) {
        reply.next = keys[taken - 1];
        break;
      }
      row = { key, reason: `value of ${byteLength(row)} bytes does not fit in one reply (max payload ${budget + REPLY_HEADROOM})` };
    }
    size += costOf(reply, row);
    if ('reason' in row) reply.outOfShape.push(row);
    else reply.entries.push(row);
    taken++;
  }
  return reply;
}

function costOf(reply: VerbReply, row: Row): number {
  const list = 'reason' in row ? reply.outOfShape : reply.entries;
  return byteLength(row) + (list.length > 0 ? 1 : 0);
}

function nextCost(key: string): number {
  return Buffer.byteLength(`,"next":${JSON.stringify(key)}`);
}

function byteLength(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value));
}
