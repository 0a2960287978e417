// What a node's client left on the bus before a restart (DESIGN §7 point 12): its needs, items and
// reports, known at start from its record of written keys (report/written.ts) — or, without one, from
// one read of `<node>.>` of needs and collect, unless no planned module has a report (a new node: nothing
// to read). A module they name with no plan on the node is removed as a deleted plan is (needs,
// `removed`, report), an item its plan no longer has is deleted, and the needs of planned modules are
// handed to the reporter so each module's first fill deletes those it no longer names.
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { readAll } from '../../shared/bus/watch/read-all.ts';
import { APPLIED, COLLECT, NEEDS } from '../../shared/contract/buckets.ts';
import { nodeModuleKey, parseCollectKey, parseNeedKey } from '../../shared/contract/keys.ts';
import type { Plan } from '../../shared/contract/plan.ts';
import type { Written } from './written.ts';
import type { Logger } from '../../shared/cli/log.ts';
import type { Reporter } from './reporter.ts';
import { errorText, isTimeout } from '../../shared/base/errors.ts';

/** A node's stored needs by module: key → bytes. */
export type StoredNeeds = Map<string, Map<string, Uint8Array>>;

/** A node's needs keys grouped by module, and those out of the needs key shape with the reason. */
export type GroupedNeeds = { byModule: StoredNeeds; outOfShape: { key: string; reason: string }[] };

/** Groups needs entries (key → bytes) of `node` by the module their key names. */
export function groupNeeds(node: string, entries: ReadonlyMap<string, Uint8Array>): GroupedNeeds {
  const byModule: StoredNeeds = new Map();
  const outOfShape: GroupedNeeds['outOfShape'] = [];
  for (const [key, bytes] of entries) {
    const parsed = parseNeedKey(key);
    if (!parsed.ok || parsed.value.node !== node) {
      outOfShape.push({ key, reason: parsed.ok ? `names node ${parsed.value.node}` : parsed.reason });
      continue;
    }
    const { module } = parsed.value;
    (byModule.get(module) ?? byModule.set(module, new Map()).get(module)!).set(key, bytes);
  }
  return { byModule, outOfShape };
}

/** What a node's client left on the bus before this start: needs by module, item keys, modules reported. */
export type LeftBehind = { needs: StoredNeeds; items: string[]; reported: Set<string> };

/**
 * What `node`'s client left before this start: from its record (report/written.ts) when there is one;
 * else nothing when no module of `planned` has a report (a new node), else one read of `<node>.>` of
 * needs and collect. A read that fails is said, and resolves undefined: the start goes on without it.
 */
export async function readLeftBehind(
  nc: NatsConnection,
  node: string,
  record: Written | undefined,
  planned: ReadonlySet<string>,
  log: Logger,
): Promise<LeftBehind | undefined> {
  if (record) return fromRecord(node, record, log);
  if (!(await anyReported(nc, node, planned, log))) {
    log.info(`${node}: no record of written keys and no planned module reported: a new node, nothing left from before to read`);
    return { needs: new Map(), items: [], reported: new Set() };
  }
  log.notice(`${node}: no record of written keys: reading ${node}'s needs and items once to find what modules gone while it was down left`);
  const needs = await readStoredNeeds(nc, node, log);
  if (!needs) return undefined;
  try {
    const items = [...(await readAll(nc, COLLECT, `${node}.>`)).keys()];
    return { needs, items, reported: new Set(needs.keys()) };
  } catch (err) {
    log.warn(`${COLLECT}: could not read ${node}'s items, so those left from before this start stay: ${errorText(err)}`);
    return { needs, items: [], reported: new Set(needs.keys()) };
  }
}

/** What a record says was left: its needs grouped by module (keys out of shape said), its items, its reports. */
function fromRecord(node: string, record: Written, log: Logger): LeftBehind {
  const encoder = new TextEncoder();
  const { byModule, outOfShape } = groupNeeds(node, new Map([...record.needs].map(([k, text]) => [k, encoder.encode(text)])));
  for (const { key, reason } of outOfShape) log.warn(`${NEEDS} ${key}: recorded key out of shape: ${reason}; left alone`);
  return { needs: byModule, items: [...record.collect], reported: record.applied };
}

/** How many times the gets of anyReported are asked while the bus leaves them unanswered. */
export const REPORTED_ASKS = 3;

/**
 * Whether any module of `planned` has a report of `node` (literal direct gets, all at once); a get
 * refused, or unanswered REPORTED_ASKS times, counts as one. Unanswered gets are asked again rather
 * than taken as a report: a bus too busy to answer them (a fleet started at once) is the one where
 * the read they spare — two wildcard reads from sequence 1 — costs the most.
 */
async function anyReported(nc: NatsConnection, node: string, planned: ReadonlySet<string>, log: Logger): Promise<boolean> {
  if (planned.size === 0) return false;
  const direct = (await jetstreamManager(nc, { checkAPI: false, timeout: 5000 })).direct;
  for (let ask = 1; ; ask++) {
    try {
      const got = await Promise.all([...planned].map((m) => direct.getMessage(`KV_${APPLIED}`, { last_by_subj: `$KV.${APPLIED}.${nodeModuleKey(node, m)}` })));
      return got.some((msg) => msg !== null);
    } catch (err) {
      if (isTimeout(err) && ask < REPORTED_ASKS) {
        log.debug(`${APPLIED}: ${node}'s reports unanswered; asking again`);
        continue;
      }
      log.warn(`${APPLIED}: could not read ${node}'s reports, so it is not taken as a new node: ${errorText(err)}`);
      return true;
    }
  }
}

/**
 * Reads the node's own needs with a filtered read of `<node>.>` (what its grants allow; never a
 * listing of the bucket's keys). A key out of shape is said and left alone; a read that is refused
 * or fails is said, and resolves undefined: the start goes on without it.
 */
export async function readStoredNeeds(nc: NatsConnection, node: string, log: Logger): Promise<StoredNeeds | undefined> {
  try {
    const { byModule, outOfShape } = groupNeeds(node, await readAll(nc, NEEDS, `${node}.>`));
    for (const { key, reason } of outOfShape) log.warn(`${NEEDS} ${key}: key out of shape: ${reason}; left alone`);
    return byModule;
  } catch (err) {
    log.warn(`${NEEDS}: could not read ${node}'s needs, so those left from before this start stay: ${errorText(err)}`);
    return undefined;
  }
}

/**
 * Takes off the node what `left` holds of modules with no plan (needs, `removed`, report, through
 * `remove`), deletes each item whose contributor has no plan or whose plan no longer has an item of
 * its collection (`deleteItem`), and hands the planned modules' needs to the reporter.
 */
export function settleLeftBehind(
  left: LeftBehind,
  plans: ReadonlyMap<string, Plan>,
  reporter: Pick<Reporter, 'known'>,
  remove: (module: string) => void,
  deleteItem: (key: string) => void,
  node: string,
  log: Logger,
): void {
  const planned = new Set(plans.keys());
  settleStoredNeeds(left.needs, planned, reporter, remove, node, log);
  for (const module of left.reported) {
    if (planned.has(module) || left.needs.has(module)) continue;
    log.notice(`${APPLIED}: report of ${module}, which has no plan on ${node}, deleted`);
    remove(module);
  }
  for (const key of left.items) {
    const parsed = parseCollectKey(key);
    if (!parsed.ok || parsed.value.node !== node) continue;
    const { collection, contributor } = parsed.value;
    if (plans.get(contributor)?.items.some((i) => i.collection === collection)) continue;
    log.notice(`${COLLECT}: item ${key}, which no plan on ${node} has, deleted`);
    deleteItem(key);
  }
}

/**
 * Hands each module's stored needs to the reporter (a planned module's next fill deletes those it no
 * longer names) and takes every module with no plan off the node through `remove` — its needs, then
 * `removed` and its report — one notice per module. A module that left no need is not known here,
 * so its report stays (docs/decisions.md, Client).
 */
export function settleStoredNeeds(
  stored: StoredNeeds,
  planned: ReadonlySet<string>,
  reporter: Pick<Reporter, 'known'>,
  remove: (module: string) => void,
  node: string,
  log: Logger,
): void {
  for (const [module, needs] of stored) {
    reporter.known(module, needs);
    if (planned.has(module)) continue;
    log.notice(`${NEEDS}: needs and report of ${module}, which has no plan on ${node}, deleted`);
    remove(module);
  }
}
