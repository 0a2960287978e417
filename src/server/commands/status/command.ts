// `mesh-provisioner status [<node> [<module>]]`: the fleet at a glance, or one node's modules in
// detail, and an exit code a check can rely on (DESIGN §13). Reports and the seat's health come from
// the verb page by page (server/commands/query/command.ts), each page folded into the view and dropped; a
// bound value waited for is read against its plan and its provider's (provisions.ts).
import type { NatsConnection } from '@nats-io/transport-node';
import { compareKeys } from '../../../shared/contract/keys.ts';
import { safeJson } from '../../../shared/cli/safe-text.ts';
import { forEachPage, type QueryFailure } from '../query/command.ts';
import { NodeDetail } from './detail.ts';
import { detailLines, fleetLines, type FleetView, type NodeView } from './format.ts';
import { FleetSummary } from './summary.ts';
import { ownershipOf, type Ownership } from './where.ts';
import type { StatusArgs } from '../../options.ts';
import { DEFAULT_STATUS_LIMIT } from './command-line.ts';
import { isNotDone, readRollouts, type RolloutMark } from './rollouts.ts';
import { resolveBoundWaits } from './provisions.ts';
import { readWords } from './liveness.ts';

/** The rollouts shown, by module. */
type Rollouts = ReadonlyMap<string, RolloutMark>;

type Say = (line: string) => void;

/** Exit code: every module shown is applied. */
const EXIT_ALL_APPLIED = 0;
/** Exit code: a node shown is silent or its engine down, a module shown is not applied (waiting, failed, held, cannot be composed, its rollout not done or failed on it), a key is out of shape, or a node named has nothing shown. */
const EXIT_NOT_ALL_APPLIED = 1;

/**
 * Runs `status`: the fleet table (or JSON) without a node, a node's modules in detail with one.
 * Returns 0 when every module shown is applied, 1 when one is not (or nothing is shown of a node
 * named), or the failure's code when the verb could not be asked (2 for a request it refused).
 */
export async function runStatus(nc: NatsConnection, args: StatusArgs, out: Say, err: Say = out, now: () => number = Date.now): Promise<number> {
  // Rollouts that roll or are halted (DESIGN §12), shown on each node of their module.
  const rollouts = await readRollouts(nc);
  const shown = args.node === undefined ? await fleet(nc, args, out, now(), rollouts) : await node(nc, args, out, now(), rollouts);
  if (typeof shown === 'number') return shown;
  err(shown.message.replace(/^query: /, 'status: '));
  return shown.code;
}

async function fleet(nc: NatsConnection, args: StatusArgs, out: Say, now: number, rollouts: Rollouts): Promise<number | QueryFailure> {
  const summary = new FleetSummary(now, rollouts);
  const limit = args.limit ?? DEFAULT_STATUS_LIMIT;
  const failed =
    (await forEachPage(nc, { what: 'applied', limit }, (page) => {
      for (const { key, value } of page.entries) summary.addReport(key, value);
      for (const { key, reason } of page.outOfShape) summary.outOfShape.add(key, reason);
    })) ??
    (await forEachPage(nc, { what: 'health', limit }, (page) => {
      for (const { key, value } of page.entries) summary.addHealth(key, value);
      for (const { key, reason } of page.outOfShape) summary.outOfShape.add(key, reason);
    }));
  if (failed) return failed;
  const words = await readWords(nc, { limit }, now, (key, reason) => summary.outOfShape.add(key, reason));
  if (!(words instanceof Map)) return words;
  for (const [name, word] of words) summary.addWord(name, word);
  summary.addUnreportedFailures();
  const view: FleetView = {
    nodes: summary.nodes(),
    rollouts: [...rollouts].map(([module, mark]) => ({ module, ...mark })).sort((a, b) => compareKeys(a.module, b.module)),
    health: summary.health(),
    healthUnlisted: summary.healthUnlisted,
    outOfShape: summary.outOfShape.listed,
    outOfShapeCount: summary.outOfShape.count,
  };
  if (args.json) out(safeJson(view));
  else fleetLines(view).forEach((line) => out(line));
  // A rollout not done is a module whose newest build is not applied (DESIGN §13); a done one's failed nodes count in their rows.
  const settled =
    view.outOfShapeCount === 0 &&
    !view.rollouts.some(isNotDone) &&
    view.nodes.every((n) => n.liveness === undefined && n.waiting + n.failed + n.held + n.composeFailed === 0);
  return settled ? EXIT_ALL_APPLIED : EXIT_NOT_ALL_APPLIED;
}

async function node(nc: NatsConnection, args: StatusArgs, out: Say, now: number, rollouts: Rollouts): Promise<number | QueryFailure> {
  const limit = args.limit ?? DEFAULT_STATUS_LIMIT;
  const registry = new Map<string, Ownership>();
  const failedRegistry = await forEachPage(nc, { what: 'registry', limit }, (page) => {
    for (const { key, value } of page.entries) registry.set(key, ownershipOf(value));
  });
  if (failedRegistry) return failedRegistry;
  const detail = new NodeDetail(registry, now, rollouts);
  const narrowed = { node: args.node, ...(args.module ? { module: args.module } : {}), limit };
  const failed =
    (await forEachPage(nc, { what: 'applied', ...narrowed }, (page) => {
      for (const { key, value } of page.entries) detail.addReport(key, value);
      for (const { key, reason } of page.outOfShape) detail.outOfShape.add(key, reason);
    })) ??
    (await forEachPage(nc, { what: 'health', ...narrowed }, (page) => {
      for (const { key, value } of page.entries) detail.addHealth(key, value);
      for (const { key, reason } of page.outOfShape) detail.outOfShape.add(key, reason);
    }));
  if (failed) return failed;
  const words = await readWords(nc, { node: args.node!, limit }, now, (key, reason) => detail.outOfShape.add(key, reason));
  if (!(words instanceof Map)) return words;
  const word = words.get(args.node!);
  detail.addUnreportedFailures(args.node!, args.module);
  const view: NodeView = {
    node: args.node!,
    ...(args.module ? { module: args.module } : {}),
    ...(word ? { word } : {}),
    modules: await resolveBoundWaits(nc, detail.modules()),
    outOfShape: detail.outOfShape.listed,
    outOfShapeCount: detail.outOfShape.count,
  };
  if (args.json) out(safeJson(view));
  else detailLines(view).forEach((line) => out(line));
  // A `removed` report is a module taken off the node on purpose, counted in neither view (its key goes next).
  // A node silent or with its engine down is not vouched for, whatever its reports say (DESIGN §14).
  const settled =
    view.word?.liveness === undefined &&
    view.modules.length > 0 &&
    view.outOfShapeCount === 0 &&
    view.modules.every((m) => (m.state === 'applied' || m.state === 'removed') && !m.health && !m.rollout);
  return settled ? EXIT_ALL_APPLIED : EXIT_NOT_ALL_APPLIED;
}
