// `mesh-provisioner status [<node> [<module>]]`: the fleet at a glance, or one node's modules in
// detail. Reports come from the verb page by page (server/commands/query.ts), each page folded into one summary per
// node and then dropped; held modules come from the catalogue's compositions, read once, read-only.
import type { NatsConnection } from '@nats-io/transport-node';
import { watchKv } from '../../../shared/watch/watch.ts';
import { MODULES } from '../../../shared/buckets.ts';
import { safeJson } from '../../../shared/safe-text.ts';
import { DEFAULT_QUERY_TIMEOUT_MS, forEachPage, type QueryFailure } from '../query.ts';
import { detailLines, fleetLines, type FleetView, type NodeView } from './format.ts';
import { Catalogue, detailOf, FleetSummary, ownershipOf, readReport, type ModuleDetail, type Ownership } from './summary.ts';
import { DEFAULT_STATUS_LIMIT, type StatusArgs } from '../../options.ts';
import { errorText } from '../../../shared/errors.ts';
import { readRollouts } from './rollouts.ts';

type Say = (line: string) => void;
type Rollouts = Awaited<ReturnType<typeof readRollouts>>;

/** Runs `status`: the fleet table (or JSON) without a node, a node's modules in detail with one. Returns the exit code. */
export async function runStatus(nc: NatsConnection, args: StatusArgs, out: Say, err: Say = out, now: () => number = Date.now): Promise<number> {
  const catalogue = await readCatalogue(nc, err);
  const rollouts = await readRollouts(nc);
  const failed = args.node === undefined ? await fleet(nc, args, catalogue, out, now(), rollouts) : await node(nc, args, catalogue, out, now(), rollouts);
  if (!failed) return 0;
  err(failed.message.replace(/^query: /, 'status: '));
  return failed.code;
}

async function fleet(
  nc: NatsConnection,
  args: StatusArgs,
  catalogue: Catalogue | undefined,
  out: Say,
  now: number,
  rollouts: Rollouts,
): Promise<QueryFailure | undefined> {
  const summary = new FleetSummary(catalogue, now, rollouts);
  const failed = await forEachPage(nc, { what: 'applied', limit: args.limit ?? DEFAULT_STATUS_LIMIT }, (page) => {
    for (const { key, value } of page.entries) summary.add(key, value);
    for (const { key, reason } of page.outOfShape) summary.addOutOfShape(key, reason);
  });
  if (failed) return failed;
  const view: FleetView = {
    nodes: [...summary.nodes.values()],
    held: summary.held() ?? null,
    outOfShape: summary.outOfShape,
    outOfShapeCount: summary.outOfShapeCount,
  };
  if (args.json) out(safeJson(view));
  else fleetLines(view).forEach((line) => out(line));
  return undefined;
}

async function node(
  nc: NatsConnection,
  args: StatusArgs,
  catalogue: Catalogue | undefined,
  out: Say,
  now: number,
  rollouts: Rollouts,
): Promise<QueryFailure | undefined> {
  const registry = new Map<string, Ownership>();
  const limit = args.limit ?? DEFAULT_STATUS_LIMIT;
  const failedRegistry = await forEachPage(nc, { what: 'registry', limit }, (page) => {
    for (const { key, value } of page.entries) registry.set(key, ownershipOf(value));
  });
  if (failedRegistry) return failedRegistry;
  const modules: ModuleDetail[] = [];
  const outOfShape: { key: string; reason: string }[] = [];
  const request = { what: 'applied', node: args.node, ...(args.module ? { module: args.module } : {}), limit };
  const failed = await forEachPage(nc, request, (page) => {
    for (const { key, value } of page.entries) {
      const read = readReport(value);
      if (read.ok) modules.push(detailOf(read.value, registry, catalogue, now, rollouts));
      else outOfShape.push({ key, reason: `value: ${read.reason}` });
    }
    outOfShape.push(...page.outOfShape);
  });
  if (failed) return failed;
  const view: NodeView = { node: args.node!, ...(args.module ? { module: args.module } : {}), modules, outOfShape };
  if (args.json) out(safeJson(view));
  else detailLines(view).forEach((line) => out(line));
  return undefined;
}

/**
 * Reads every composition of the catalogue once with a filtered watch (what the seat's user may
 * do), keeping of each only whether it is held. Undefined, said on `err`, when the bucket is
 * missing or does not answer in time: held modules are then unknown, not "none".
 */
async function readCatalogue(nc: NatsConnection, err: Say): Promise<Catalogue | undefined> {
  const catalogue = new Catalogue();
  let timer: NodeJS.Timeout | undefined;
  let stop = () => {};
  try {
    const watch = await watchKv(nc, MODULES, '>', (event) => catalogue.update(event.key, event.value));
    stop = watch.stop;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), DEFAULT_QUERY_TIMEOUT_MS)));
    if ((await Promise.race([watch.caughtUp, late])) === 'late') {
      err(`status: ${MODULES} was not read within ${DEFAULT_QUERY_TIMEOUT_MS} ms; held modules unknown`);
      return undefined;
    }
    return catalogue;
  } catch (e) {
    err(`status: cannot read ${MODULES} (${errorText(e)}); held modules unknown`);
    return undefined;
  } finally {
    clearTimeout(timer);
    stop();
  }
}
