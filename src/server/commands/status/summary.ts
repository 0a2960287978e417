// What `status` makes of the fleet (pure): the reports and the seat's health it pages through,
// folded into one summary per node and one line per distinct thing the seat holds or cannot compose.
import { compareKeys } from '../../../shared/contract/keys.ts';
import type { Parsed } from '../../../shared/base/result.ts';
import { ReportSchema, type Report } from '../../../shared/contract/report.ts';
import { validate } from '../../../shared/contract/decode.ts';
import { countsFailed, failedIn, rolloutCell, type RolloutMark } from './rollouts.ts';
import { readSeatEntry, type SeatEntry } from './seat-health.ts';
import type { NodeWord } from './liveness.ts';

/** Out-of-shape keys `status` lists at most; past that it only counts them. */
export const MAX_LISTED_OUT_OF_SHAPE = 100;
/** Lines of the seat's health `status` lists at most; past that it only counts them. */
export const MAX_LISTED_HEALTH = 100;

/** The longest-waiting report of a node: its module, its first waited value and since when it reports waiting. */
export type OldestWaiting = {
  /** The module whose report it is. */
  module: string;
  /** The kind of the first value its report waits for, absent when the report lists none. */
  kind?: string;
  /** The name of that value. */
  name?: string;
  /** The client's hint for that value in the report's reason (`did you mean "color"?`), when it gives one. */
  hint?: string;
  /** The report's reason, when it waits for no value (the engine refused a file, or is away). */
  reason?: string;
  /** The report's `at`. */
  at: string;
  /** How long ago `at` was, in whole seconds. */
  seconds: number;
};

/** One node summed up: its last word (DESIGN §14), its reports by state and what the seat says of its assignments. */
export type NodeSummary = NodeWord & {
  node: string;
  /** Reports `applied`. */
  applied: number;
  /** Reports `waiting`. */
  waiting: number;
  /** Reports `failed`. */
  failed: number;
  /** Assignments whose plan the seat holds: composition missing or unpublished. */
  held: number;
  /** Assignments whose plan the seat cannot compose: composition out of shape, a path it cannot resolve, … */
  composeFailed: number;
  /** Restores of its files the engine made (DESIGN §14): the sum of its reports' files' `drift.count`. */
  drift: number;
  /** The waiting report with the oldest `at`, if any waits. */
  oldestWaiting?: OldestWaiting;
  /** The node's modules under a rollout not done, or failed in one (DESIGN §12), each with its state, build and wave. */
  rollouts?: string[];
};

/** One line of the seat's health over the fleet: the nodes of a module that stand alike. */
export type HealthGroup = {
  module: string;
  /** Held, or failed (cannot be composed). */
  state: SeatEntry['state'];
  /** The composition's build, '' when none is known. */
  build: string;
  /** The seat's reason. */
  reason: string;
  /** How many nodes stand so. */
  nodes: number;
  /** The earliest `since` among them. */
  since: string;
};

/** Checks an entry of the verb's `applied` again before it is counted: the seat checked it, `status` does not rely on that. */
export function readReport(value: unknown): Parsed<Report> {
  return validate(ReportSchema, value);
}

/** Whole seconds from `at` to `now` (0 for a time in the future or one that does not parse). */
export function secondsSince(at: string, now: number): number {
  const then = Date.parse(at);
  return Number.isNaN(then) ? 0 : Math.max(0, Math.floor((now - then) / 1000));
}

/** Keys out of shape: the first MAX_LISTED_OUT_OF_SHAPE listed, every one counted. */
export class OutOfShape {
  /** The first keys, with why. */
  readonly listed: { key: string; reason: string }[] = [];
  /** Every key out of shape, listed or not. */
  count = 0;

  /** Counts one key. */
  add(key: string, reason: string): void {
    this.count += 1;
    if (this.listed.length < MAX_LISTED_OUT_OF_SHAPE) this.listed.push({ key, reason });
  }
}

/** The fleet summed up per node, fed one page at a time; memory is one NodeSummary per node and one group per distinct health line. */
export class FleetSummary {
  readonly #nodes = new Map<string, NodeSummary>();
  readonly #health = new Map<string, HealthGroup>();
  /** Entries of `health` in no listed line (past MAX_LISTED_HEALTH distinct lines), counted only. */
  healthUnlisted = 0;
  /** Keys of `applied` or `health` out of shape. */
  readonly outOfShape = new OutOfShape();
  /** The nodes rollouts list failed, by `<node>.<module>`, until a report of theirs is read. */
  readonly #failedUnseen = new Map<string, { node: string; module: string; mark: RolloutMark }>();

  constructor(
    private readonly now: number,
    private readonly rollouts: ReadonlyMap<string, RolloutMark> = new Map(),
  ) {
    for (const [module, mark] of rollouts)
      for (const f of countsFailed(mark) ? mark.failed : []) this.#failedUnseen.set(`${f.node}.${module}`, { node: f.node, module, mark });
  }

  /** Counts one entry of `applied`; a node a rollout lists failed counts failed until it reports the new build applied. */
  addReport(key: string, value: unknown): void {
    const read = readReport(value);
    if (!read.ok) return this.outOfShape.add(key, `value: ${read.reason}`);
    const report = read.value;
    const node = this.#node(report.node);
    const rollout = this.rollouts.get(report.module);
    this.#failedUnseen.delete(`${report.node}.${report.module}`);
    const failedInRollout = rollout !== undefined && failedIn(rollout, report.node, report) !== undefined;
    const state = failedInRollout ? 'failed' : report.state;
    if (state === 'applied' || state === 'waiting' || state === 'failed') node[state] += 1;
    if (state === 'waiting') node.oldestWaiting = older(node.oldestWaiting, report, this.now);
    node.drift += driftOf(report);
    // A done rollout is shown only on the nodes it left failed.
    if (rollout && (rollout.state !== 'done' || failedInRollout)) (node.rollouts ??= []).push(rolloutCell(report.module, rollout, failedInRollout));
  }

  /** Counts the nodes rollouts list failed that have no report at all: failed too (their plan is the new build). */
  addUnreportedFailures(): void {
    for (const { node, module, mark } of this.#failedUnseen.values()) {
      const summary = this.#node(node);
      summary.failed += 1;
      (summary.rollouts ??= []).push(rolloutCell(module, mark, true));
    }
    this.#failedUnseen.clear();
  }

  /** Counts one entry of `health`. */
  addHealth(key: string, value: unknown): void {
    const read = readSeatEntry(key, value);
    if (!read) return;
    if (!read.ok) return this.outOfShape.add(key, read.reason);
    const entry = read.value;
    const node = this.#node(entry.node);
    if (entry.state === 'held') node.held += 1;
    else node.composeFailed += 1;
    const build = entry.build ?? '';
    const id = JSON.stringify([entry.module, entry.state, build, entry.reason]);
    const group = this.#health.get(id);
    if (group) {
      group.nodes += 1;
      if (entry.since < group.since) group.since = entry.since;
    } else if (this.#health.size < MAX_LISTED_HEALTH) {
      this.#health.set(id, { module: entry.module, state: entry.state, build, reason: entry.reason, nodes: 1, since: entry.since });
    } else this.healthUnlisted += 1;
  }

  /** Takes a node's last word (the verb's `alive`): a node with a plan is shown even with no report. */
  addWord(node: string, word: NodeWord): void {
    Object.assign(this.#node(node), word);
  }

  /** Every node, in name order. */
  nodes(): NodeSummary[] {
    return [...this.#nodes.values()].sort((a, b) => compareKeys(a.node, b.node));
  }

  /** The health lines listed, by module, state and reason. */
  health(): HealthGroup[] {
    return [...this.#health.values()].sort((a, b) => compareKeys(a.module, b.module) || compareKeys(a.state, b.state) || compareKeys(a.reason, b.reason));
  }

  #node(name: string): NodeSummary {
    let node = this.#nodes.get(name);
    if (!node) this.#nodes.set(name, (node = { node: name, applied: 0, waiting: 0, failed: 0, held: 0, composeFailed: 0, drift: 0 }));
    return node;
  }
}

/** The restores of a report's files (DESIGN §14): the sum of their `drift.count`. */
export function driftOf(report: Pick<Report, 'files'>): number {
  return report.files.reduce((sum, f) => sum + (f.drift?.count ?? 0), 0);
}

function older(current: OldestWaiting | undefined, report: Report, now: number): OldestWaiting {
  const then = Date.parse(report.at);
  if (current && !(then < Date.parse(current.at))) return current;
  const first = report.waiting[0];
  const hint = first && report.reason !== undefined ? hintFor(`${first.kind}:${first.name}`, report.reason) : undefined;
  const what = first
    ? { kind: first.kind, name: first.name, ...(hint === undefined ? {} : { hint }) }
    : report.reason !== undefined
      ? { reason: report.reason }
      : {};
  return { module: report.module, ...what, at: report.at, seconds: secondsSince(report.at, now) };
}

/**
 * The client's hint for a waited value in its report's reason: the note `<kind>:<name>: did you
 * mean "<key>"?` (src/client/sources/config.ts), one of the reason's `; `-joined parts.
 */
export function hintFor(value: string, reason: string): string | undefined {
  const head = `${value}: `;
  for (let at = reason.indexOf(head); at >= 0; at = reason.indexOf(head, at + 1)) {
    if (at > 0 && !reason.startsWith('; ', at - 2)) continue;
    const hint = /^did you mean "(?:[^"\\]|\\.)*"\?/.exec(reason.slice(at + head.length));
    if (hint) return hint[0];
  }
  return undefined;
}
