// What `status` makes of the reports it pages through (pure): one summary per node for the fleet,
// one detail per module for a node, and which modules the catalogue holds unpublished.
import type { Parsed } from '../../../shared/result.ts';
import { ReportSchema, validate, type Report } from '../../../shared/schemas.ts';
import { heldReason } from '../../seat/health.ts';
import { isUsable, readModule } from '../../seat/inputs.ts';
import { rolloutCell, type RolloutMark } from './rollouts.ts';

/** Out-of-shape keys `status` lists at most; past that it only counts them. */
export const MAX_LISTED_OUT_OF_SHAPE = 100;

/** A module the seat holds (DESIGN §4): its plans are kept as they are until it is published again. */
export type Held = {
  /** The module. */
  module: string;
  /** The build of its composition, '' when there is none or it does not validate. */
  build: string;
  /** Why: composition missing, not published, or not valid (as `provisioner_health` says it). */
  reason: string;
};

/** The longest-waiting report of a node: its module, its first waited value and since when it reports waiting. */
export type OldestWaiting = {
  /** The module whose report it is. */
  module: string;
  /** The first value its report waits for (kind and name), absent when the report lists none. */
  kind?: string;
  name?: string;
  /** The report's `at`. */
  at: string;
  /** How long ago `at` was, in whole seconds. */
  seconds: number;
};

/** One node's reports summed up: the memory `status` keeps per node. */
export type NodeSummary = {
  node: string;
  applied: number;
  waiting: number;
  failed: number;
  /** The waiting report with the oldest `at`, if any waits. */
  oldestWaiting?: OldestWaiting;
  /** The node's modules (those it has a report of) that the seat holds, in key order. */
  held: string[];
  /** The node's modules under a rolling or halted rollout (DESIGN §12), each with its state, build and wave. */
  rollouts?: string[];
};

/**
 * The catalogue as `status` reads it: of each module only whether its composition is usable, or
 * why it is held (a module it has no composition of is held as "composition missing").
 */
export class Catalogue {
  readonly #held = new Map<string, Held>();
  readonly #usable = new Set<string>();

  /** Takes one stored composition (null: deleted) under its key. */
  update(key: string, value: Uint8Array | null): void {
    this.#held.delete(key);
    this.#usable.delete(key);
    if (value === null) return;
    const read = readModule(key, value);
    if (!read.known) return;
    if (isUsable(read.known)) this.#usable.add(key);
    else this.#held.set(key, { module: key, build: read.known.parsed.ok ? read.known.parsed.value.build : '', reason: heldReason(read.known) });
  }

  /** Why `module` is held, or undefined when its composition is published and valid. */
  heldOf(module: string): Held | undefined {
    if (this.#usable.has(module)) return undefined;
    return this.#held.get(module) ?? { module, build: '', reason: heldReason(undefined) };
  }

  /** Whether the catalogue holds a composition of `module` at all (usable or held). */
  knows(module: string): boolean {
    return this.#usable.has(module) || this.#held.has(module);
  }

  /** The compositions present but held (unpublished or not valid), in name order. */
  heldCompositions(): Held[] {
    return [...this.#held.values()].sort((a, b) => (a.module < b.module ? -1 : a.module > b.module ? 1 : 0));
  }
}

/** Checks an entry of the verb's `applied` again before it is counted: the seat checked it, `status` does not rely on that. */
export function readReport(value: unknown): Parsed<Report> {
  return validate(ReportSchema, value);
}

/** Whole seconds from `at` to `now` (0 for a time in the future or one that does not parse). */
export function secondsSince(at: string, now: number): number {
  const then = Date.parse(at);
  return Number.isNaN(then) ? 0 : Math.max(0, Math.floor((now - then) / 1000));
}

/** The fleet's reports summed up per node, fed one page at a time; memory is one NodeSummary per node. */
export class FleetSummary {
  /** Per node, in the order the verb's key order first named them. */
  readonly nodes = new Map<string, NodeSummary>();
  /** Out-of-shape keys, the first MAX_LISTED_OUT_OF_SHAPE of them. */
  readonly outOfShape: { key: string; reason: string }[] = [];
  /** Every out-of-shape key, listed or not. */
  outOfShapeCount = 0;
  /** Modules with a report and no composition at all: held as "composition missing". */
  readonly #missing = new Map<string, Held>();

  constructor(
    private readonly catalogue: Catalogue | undefined,
    private readonly now: number,
    private readonly rollouts: ReadonlyMap<string, RolloutMark> = new Map(),
  ) {}

  /** Counts one entry of `applied`. */
  add(key: string, value: unknown): void {
    const read = readReport(value);
    if (!read.ok) return this.addOutOfShape(key, `value: ${read.reason}`);
    const report = read.value;
    let node = this.nodes.get(report.node);
    if (!node) this.nodes.set(report.node, (node = { node: report.node, applied: 0, waiting: 0, failed: 0, held: [] }));
    if (report.state === 'applied' || report.state === 'waiting' || report.state === 'failed') node[report.state] += 1;
    if (report.state === 'waiting') node.oldestWaiting = older(node.oldestWaiting, report, this.now);
    const rollout = this.rollouts.get(report.module);
    if (rollout) (node.rollouts ??= []).push(rolloutCell(report.module, rollout));
    const held = this.catalogue?.heldOf(report.module);
    if (!held) return;
    node.held.push(report.module);
    if (!this.catalogue!.knows(report.module)) this.#missing.set(report.module, held);
  }

  /** Counts a key the verb (or readReport) found out of shape. */
  addOutOfShape(key: string, reason: string): void {
    this.outOfShapeCount += 1;
    if (this.outOfShape.length < MAX_LISTED_OUT_OF_SHAPE) this.outOfShape.push({ key, reason });
  }

  /** Every held module: compositions present but held, and modules reported without one; undefined when the catalogue was not read. */
  held(): Held[] | undefined {
    if (!this.catalogue) return undefined;
    return [...this.catalogue.heldCompositions(), ...this.#missing.values()].sort((a, b) => (a.module < b.module ? -1 : a.module > b.module ? 1 : 0));
  }
}

function older(current: OldestWaiting | undefined, report: Report, now: number): OldestWaiting {
  const then = Date.parse(report.at);
  if (current && !(then < Date.parse(current.at))) return current;
  const first = report.waiting[0];
  return { module: report.module, ...(first ? { kind: first.kind, name: first.name } : {}), at: report.at, seconds: secondsSince(report.at, now) };
}

/** Where a kind's values live, as the registry says: its owner and its bucket or verb. */
export type Ownership = { owner: string; where: string };

/** One module of a node in detail: its last report with each waited value's owner. */
export type ModuleDetail = {
  node: string;
  module: string;
  state: Report['state'];
  build: string;
  at: string;
  /** How long ago `at` was, in whole seconds. */
  seconds: number;
  reason?: string;
  /** Present when the seat holds the module. */
  held?: Held;
  /** Present when the module's rollout rolls or is halted. */
  rollout?: RolloutMark;
  /** Every value the module waits for, with the domain that owns it (the registry's word; '' for a kind it does not know). */
  waiting: { kind: string; name: string; owner: string; where: string; files: string[] }[];
  /** The files as the engine took them. */
  files: Report['files'];
};

/** A report in detail, each waited value's kind looked up in `registry`. */
export function detailOf(
  report: Report,
  registry: ReadonlyMap<string, Ownership>,
  catalogue: Catalogue | undefined,
  now: number,
  rollouts: ReadonlyMap<string, RolloutMark> = new Map(),
): ModuleDetail {
  const held = catalogue?.heldOf(report.module);
  const rollout = rollouts.get(report.module);
  return {
    node: report.node,
    module: report.module,
    state: report.state,
    build: report.build,
    at: report.at,
    seconds: secondsSince(report.at, now),
    ...(report.reason !== undefined ? { reason: report.reason } : {}),
    ...(held ? { held } : {}),
    ...(rollout ? { rollout } : {}),
    waiting: report.waiting.map((w) => ({ kind: w.kind, name: w.name, ...(registry.get(w.kind) ?? { owner: '', where: '' }), files: w.files })),
    files: report.files,
  };
}

/** A registry entry's owner and bucket (or verb), whatever shape the stored value has. */
export function ownershipOf(value: unknown): Ownership {
  const v = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
  const text = (x: unknown) => (typeof x === 'string' ? x : '');
  return { owner: text(v['owner']), where: text(v['bucket']) || text(v['verb']) };
}
