// What `status <node> [<module>]` makes of a node (pure): each module's last report, every value it
// waits for with the domain that owns it and the key it is read from, and what the seat says of it.
import { compareKeys } from '../../../shared/contract/keys.ts';
import type { Report } from '../../../shared/contract/report.ts';
import { countsFailed, failedIn, failedNodeIn, type RolloutMark } from './rollouts.ts';
import { readSeatEntry, type SeatEntry } from './seat-health.ts';
import { OutOfShape, readReport, secondsSince } from './summary.ts';
import { locate, type Ownership } from './where.ts';

/** A value a module waits for, with who owns it and where it is read. */
export type WaitedValue = {
  kind: string;
  name: string;
  /** The domain that owns the kind, as the registry says ('' for a kind it does not know). */
  owner: string;
  /** Its bucket or verb, as the registry says ('' for a kind it does not know). */
  where: string;
  /** The key in that bucket, when the kind's values are kept under one. */
  key?: string;
  /** The field of that key's value holding it, when not the whole value. */
  field?: string;
  /** The files that name it. */
  files: string[];
  /** Why it may never come (a bound value whose provider is not on its node: status/provisions.ts). */
  note?: string;
};

/** What the seat says of a module of the node (the verb's `health`), with its age. */
export type ModuleHealth = SeatEntry & {
  /** How long ago `since` was, in whole seconds. */
  seconds: number;
};

/**
 * One module of a node in detail: its last report (the report's fields, absent when the node has
 * none) and what the seat says of it (absent when the seat composes its plan).
 */
export type ModuleDetail = {
  node: string;
  module: string;
  /** The report's state; absent when the node has no report of the module. */
  state?: Report['state'];
  build?: string;
  at?: string;
  /** How long ago `at` was, in whole seconds. */
  seconds?: number;
  reason?: string;
  /** Its files' restores (DESIGN §14): their sum and the newest `last`; absent when none drifted. */
  drift?: { count: number; last: string };
  /** Present when the seat holds the module's plan or cannot compose it. */
  health?: ModuleHealth;
  /** Present when the module's rollout is not done, or left this node failed (DESIGN §12). */
  rollout?: NodeRollout;
  /** Every value the module waits for. */
  waiting: WaitedValue[];
  /** The files as the engine took them. */
  files: Report['files'];
};

/** A module's rollout as a node's detail shows it: the rollout's mark, and why this node failed in it when it did. */
export type NodeRollout = Omit<RolloutMark, 'failed'> & {
  /**
   * The seat's reason, when the rollout lists this node failed: rolling or done, and it has not
   * reported the new build applied since; halted or aborted, one of the nodes it failed on.
   */
  failed?: string;
};

/** A node's modules, fed pages of `applied` and `health` narrowed to it; memory is one detail per module of the node. */
export class NodeDetail {
  readonly #modules = new Map<string, ModuleDetail>();
  /** Keys of `applied` or `health` out of shape. */
  readonly outOfShape = new OutOfShape();

  constructor(
    private readonly registry: ReadonlyMap<string, Ownership>,
    private readonly now: number,
    private readonly rollouts: ReadonlyMap<string, RolloutMark> = new Map(),
  ) {}

  /** Takes one entry of `applied`. */
  addReport(key: string, value: unknown): void {
    const read = readReport(value);
    if (!read.ok) return this.outOfShape.add(key, `value: ${read.reason}`);
    const r = read.value;
    const health = this.#modules.get(r.module)?.health;
    this.#modules.set(r.module, {
      node: r.node,
      module: r.module,
      state: r.state,
      build: r.build,
      at: r.at,
      seconds: secondsSince(r.at, this.now),
      ...(r.reason !== undefined ? { reason: r.reason } : {}),
      ...moduleDrift(r.files),
      ...(health ? { health } : {}),
      waiting: r.waiting.map((w) => ({ kind: w.kind, name: w.name, ...locate(this.registry.get(w.kind), w.kind, w.name, r.node, r.module), files: w.files })),
      files: r.files,
    });
  }

  /** Takes one entry of `health`. */
  addHealth(key: string, value: unknown): void {
    const read = readSeatEntry(key, value);
    if (!read) return;
    if (!read.ok) return this.outOfShape.add(key, read.reason);
    const { node, module } = read.value;
    const detail = this.#modules.get(module) ?? { node, module, waiting: [], files: [] };
    this.#modules.set(module, { ...detail, health: { ...read.value, seconds: secondsSince(read.value.since, this.now) } });
  }

  /** Lists a module of `node` a rollout lists failed though the node has no report of it (`module`: only that one). */
  addUnreportedFailures(node: string, module?: string): void {
    for (const [name, mark] of this.rollouts) {
      if ((module === undefined || module === name) && !this.#modules.has(name) && failedNodeIn(mark, node) !== undefined)
        this.#modules.set(name, { node, module: name, waiting: [], files: [] });
    }
  }

  /** Every module with a report or a health entry, in name order. */
  modules(): ModuleDetail[] {
    const marked = (m: ModuleDetail): ModuleDetail => {
      const mark = this.rollouts.get(m.module);
      if (!mark) return m;
      const { failed: listed, ...rollout } = mark;
      const failed = countsFailed(mark) ? failedIn(mark, m.node, m) : failedNodeIn(mark, m.node);
      // A done rollout is shown only on a node it left failed.
      if (failed === undefined && mark.state === 'done') return m;
      return { ...m, rollout: failed === undefined ? rollout : { ...rollout, failed } };
    };
    return [...this.#modules.values()].map(marked).sort((a, b) => compareKeys(a.module, b.module));
  }
}

/** A module's drift: its files' restores summed, with the newest time among them; nothing when none drifted. */
function moduleDrift(files: Report['files']): { drift?: { count: number; last: string } } {
  const drifted = files.flatMap((f) => (f.drift && f.drift.count > 0 ? [f.drift] : []));
  if (drifted.length === 0) return {};
  const last = drifted.map((d) => d.last).reduce((a, b) => (Date.parse(b) > Date.parse(a) ? b : a));
  return { drift: { count: drifted.reduce((sum, d) => sum + d.count, 0), last } };
}
