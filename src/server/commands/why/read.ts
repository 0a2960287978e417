// What `why` reads from the bus (DESIGN §14): the module's report through the verb, its plan and the
// newest entry of each key its files' inputs name, by direct get. Keys and revisions are kept; the
// values direct get brings are dropped at once.
import type { NatsConnection } from '@nats-io/transport-node';
import type { KV } from '@nats-io/kv';
import { openKv } from '../../../shared/bus/bus.ts';
import { errorText, isPermissionViolation } from '../../../shared/base/errors.ts';
import { fail, ok, type Parsed } from '../../../shared/base/result.ts';
import { PLANS } from '../../../shared/contract/buckets.ts';
import { PROVISIONING_VERB } from '../../../shared/contract/subjects.ts';
import { validate } from '../../../shared/contract/decode.ts';
import { nodeModuleKey } from '../../../shared/contract/keys.ts';
import { MAX_JSON_DEPTH, MAX_PLAN_BYTES, parseBoundedJson } from '../../../shared/contract/limits.ts';
import { PlanSchema, type Plan } from '../../../shared/contract/plan.ts';
import type { Report } from '../../../shared/contract/report.ts';
import { forEachPage, type QueryFailure } from '../query/command.ts';
import { readReport } from '../status/summary.ts';
import type { Newest } from './judge.ts';

/** Why and trace read mesh-config's and providers' buckets, which only admin's login reads whole (DESIGN §11). */
export const READER_LOGIN_HINT = "why and trace read every bucket a file's inputs come from: they need admin's login (admin.nk, as --nkey)";

/** A failure of the verb as `why` or `trace` says it: a refused login told which login they need. */
export function readerFailure(command: string, failed: QueryFailure): QueryFailure {
  if (failed.refused)
    return { code: failed.code, message: `${command}: this login may not ask ${PROVISIONING_VERB}; ${READER_LOGIN_HINT}; the bus said: ${failed.refused.by}` };
  return { code: failed.code, message: failed.message.replace(/^query: /, `${command}: `) };
}

/** The report of `module` on `node` through the verb: undefined when there is none, a failure when the verb cannot be asked or the report is out of shape. */
export async function readModuleReport(nc: NatsConnection, node: string, module: string): Promise<Report | undefined | QueryFailure> {
  let found: Report | QueryFailure | undefined;
  const failed = await forEachPage(nc, { what: 'applied', node, module }, (page) => {
    for (const { key, value } of page.entries) {
      const read = readReport(value);
      found = read.ok ? read.value : { code: 1, message: `query: the report ${key} is out of shape: ${read.reason}` };
    }
    for (const { key, reason } of page.outOfShape) found = { code: 1, message: `query: the report ${key} is out of shape: ${reason}` };
  });
  return failed ?? found;
}

/** The module's plan by direct get: undefined when it has none; a reason when it cannot be read or is out of shape. */
export async function readPlan(nc: NatsConnection, node: string, module: string): Promise<Parsed<Plan | undefined>> {
  const key = nodeModuleKey(node, module);
  const entry = await readEntry(nc, new Map(), PLANS, key);
  if (!entry.ok) return entry;
  const e = entry.value;
  if (e === null || e.operation !== 'PUT') return ok(undefined);
  const json = parseBoundedJson(e.value, { maxBytes: MAX_PLAN_BYTES, maxDepth: MAX_JSON_DEPTH });
  const plan = json.ok ? validate(PlanSchema, json.value) : json;
  return plan.ok ? plan : fail(`the plan ${PLANS} ${key} is out of shape: ${plan.reason}`);
}

/** The newest entry of every key, read at once; a reason naming the first key that could not be read. */
export async function readNewest(nc: NatsConnection, keys: readonly { bucket: string; key: string }[]): Promise<Parsed<Map<string, Newest | null>>> {
  const buckets = new Map<string, Promise<KV>>();
  const read = await Promise.all(
    keys.map(async ({ bucket, key }) => {
      const entry = await readEntry(nc, buckets, bucket, key);
      if (!entry.ok) return entry;
      const e = entry.value;
      return ok([newestKey(bucket, key), e === null ? null : { rev: e.revision, at: e.created.toISOString(), op: e.operation }] as const);
    }),
  );
  const failed = read.find((r) => !r.ok);
  if (failed && !failed.ok) return failed;
  return ok(new Map(read.flatMap((r) => (r.ok ? [r.value] : []))));
}

/** The key of `readNewest`'s map for a bucket's key. */
export function newestKey(bucket: string, key: string): string {
  return `${bucket}\0${key}`;
}

async function readEntry(nc: NatsConnection, buckets: Map<string, Promise<KV>>, bucket: string, key: string) {
  try {
    let kv = buckets.get(bucket);
    if (!kv) buckets.set(bucket, (kv = openKv(nc, bucket)));
    return ok(await (await kv).get(key));
  } catch (err) {
    const refused = isPermissionViolation(err) ? `; ${READER_LOGIN_HINT}` : '';
    return fail(`reading ${bucket} ${key} failed: ${errorText(err)}${refused}`);
  }
}
