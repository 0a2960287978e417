// A node's needs left from before a restart (DESIGN §7 point 12, §11: a node reads its own keys of
// `mesh-provisioner_needs`): read once at start; a module they name with no plan on the node is
// removed as a deleted plan is (needs, `removed`, report), the others handed to the reporter so
// each module's first fill deletes the needs it no longer names.
import type { NatsConnection } from '@nats-io/transport-node';
import { readAll } from '../../shared/bus/watch/read-all.ts';
import { NEEDS } from '../../shared/contract/buckets.ts';
import { parseNeedKey } from '../../shared/contract/keys.ts';
import type { Logger } from '../../shared/cli/log.ts';
import type { Reporter } from './reporter.ts';
import { errorText } from '../../shared/base/errors.ts';

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
