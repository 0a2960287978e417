// A rollout as the seat keeps it in memory beside its stored state (DESIGN §12): each node's place
// in the waves, what its plan holds, its reports and clocks; and the one decision made per node,
// which composition its plan is composed from.
import type { Composition } from '../../../shared/contract/composition.ts';
import { markOfComposition } from './marks.ts';
import type { NodeClock, SeenReport } from './progress.ts';
import type { RolloutState } from '../../../shared/contract/rollout-state.ts';
import { cutOf, nodeHash } from '../../../shared/contract/waves.ts';

/** A rollout in the seat's memory. */
export type Live = {
  state: RolloutState;
  /** Each node's hash in the new build's waves (`nodeHash`), computed once. */
  hashes: Map<string, string>;
  /**
   * The nodes this seat planned the new build at once, having no plan (assigned anew): not counted
   * in the rollout (DESIGN §12). A halt plans them back, and they join the wave their hash falls in.
   */
  anew: Set<string>;
  /** The nodes the stored waves reach, in wave order, kept until the cut or the nodes known change. */
  reached: { cut: string | undefined; nodes: string[] } | undefined;
  /** Whether every report of the module was seen: read back at the seat's start, so a node with none sent none. */
  everyReportSeen: boolean;
  /** The failed nodes already said (a node failed below `halt` is said once). */
  saidFailed: Set<string>;
  /** The state's failed nodes as a set, for the list it was made from. */
  failedSet?: { list: readonly { node: string }[]; nodes: Set<string> };
  /** The new build's composition, once the composer has read it. */
  target: Composition | undefined;
  /** The clocks of the nodes planned the new build. */
  clocks: Map<string, NodeClock>;
  /** Each node's latest report. */
  reports: Map<string, SeenReport>;
  /** What each node's stored plan holds (`markOfPlan`). */
  marks: Map<string, string>;
  /**
   * When each node's stored plan was written (ms, the bus's clock), kept for a node with no clock yet:
   * a restarted seat's `wait` counts from there. Cleared with the clocks when they start again.
   */
  planTimes: Map<string, number>;
  /** The wave known stored in the bucket: no node is planned past it, so a restarted seat never plans one backwards. */
  storedWave: number;
  /** The timer of the next `wait` deadline. */
  deadline: { cancel(): void } | undefined;
  /** The write of changed counts waiting (counts are stored at most once a second; a step at once). */
  counts: { cancel(): void } | undefined;
};

/** A rollout's memory for `state`, its wave `storedWave` known stored (the state's own when read from the bucket). */
export function newLive(state: RolloutState, target: Composition | undefined, storedWave: number): Live {
  return {
    state,
    hashes: new Map(),
    anew: new Set(),
    reached: undefined,
    saidFailed: new Set(state.failed.map((f) => f.node)),
    everyReportSeen: false,
    target,
    clocks: new Map(),
    reports: new Map(),
    marks: new Map(),
    planTimes: new Map(),
    storedWave,
    deadline: undefined,
    counts: undefined,
  };
}

/** Hands what a superseded rollout learnt of the nodes' plans and reports to the one replacing it, and stops its timers. */
export function carryOver(from: Live, to: Live): void {
  for (const [node, report] of from.reports) to.reports.set(node, report);
  for (const [node, mark] of from.marks) to.marks.set(node, mark);
  for (const [node, at] of from.planTimes) to.planTimes.set(node, at);
  to.everyReportSeen = from.everyReportSeen;
  stopTimers(from);
}

/** Stops a rollout's deadline and its waiting write of counts. */
export function stopTimers(live: Live): void {
  live.deadline?.cancel();
  live.counts?.cancel();
  live.deadline = live.counts = undefined;
}

/** Starts every node's clock again (back from held, a halt, a resume): from now, not from its stored plan. */
export function restartClocks(live: Live): void {
  live.clocks.clear();
  live.planTimes.clear();
}

/** The cut the waves stored so far reach (undefined: none yet). */
export function reachedCut(live: Live): string | undefined {
  return cutOf(live.state.cuts, Math.min(live.state.wave, live.storedWave));
}

/** A node's hash in the rollout's waves; a node new to it makes the list of reached nodes be made again. */
export function hashOf(live: Live, node: string): string {
  let hash = live.hashes.get(node);
  if (hash === undefined) {
    live.hashes.set(node, (hash = nodeHash(live.state.module, live.state.build, node)));
    live.reached = undefined;
  }
  return hash;
}

/**
 * The nodes the waves stored so far reach, in wave order: of `nodes` (the module's assigned nodes),
 * every one hashed at most the cut, but those planned the new build anew. Made again only when the
 * cut or the nodes known change, not on every judgement of a large wave.
 */
export function reachedNodes(live: Live, nodes: Iterable<string>): string[] {
  const cut = reachedCut(live);
  if (live.reached && live.reached.cut === cut) return live.reached.nodes;
  const reached: { node: string; hash: string }[] = [];
  if (cut !== undefined)
    for (const node of nodes) {
      const hash = hashOf(live, node);
      if (hash <= cut && !live.anew.has(node)) reached.push({ node, hash });
    }
  reached.sort((a, b) => (a.hash < b.hash ? -1 : a.hash > b.hash ? 1 : a.node < b.node ? -1 : 1));
  live.reached = { cut, nodes: reached.map((r) => r.node) };
  return live.reached.nodes;
}

/**
 * The nodes of `nodes` (the module's) a halt or an abort plans back, taken before the step, which
 * forgets those planned anew: those the waves reached, those planned the new build anew, and any
 * whose plan was seen on another build than the last good one (a superseded build's). The others
 * are on the last good build (a node with no plan seen since the rollout began is, as
 * `compositionOf` reads it): composed again, their plans would not change, and at 50,000 nodes a
 * pass over every key took a second or more.
 */
export function plannedAhead(live: Live, nodes: readonly string[]): string[] {
  const { previous } = live.state;
  const reached = new Set(reachedNodes(live, nodes));
  const good = previous ? markOfComposition(previous) : undefined;
  return nodes.filter((node) => {
    const mark = live.marks.get(node);
    return reached.has(node) || live.anew.has(node) || (mark !== undefined && mark !== good);
  });
}

/**
 * The composition a node's plan is composed from, `current` being the newest: `reached` when the
 * node is planned the new build by a wave; undefined to keep the node's stored plan.
 */
export function compositionOf(
  live: Live,
  node: string,
  hasStoredPlan: boolean,
  current: Composition,
): { composition: Composition | undefined; reached: boolean } {
  const { state } = live;
  if (state.state === 'halted' || state.state === 'aborted') {
    // The last good composition never seen: every node keeps its plan, and a node with none (nothing to protect) gets the newest.
    if (!state.previous) return { composition: hasStoredPlan ? undefined : current, reached: false };
    return { composition: state.previous, reached: false };
  }
  if (state.state !== 'rolling') return { composition: current, reached: false };
  const hash = hashOf(live, node);
  // A node assigned anew, or one whose plan is gone, has nothing to protect: the newest build at once, uncounted.
  if (live.anew.has(node) || !hasStoredPlan) {
    if (!live.anew.has(node)) {
      live.anew.add(node);
      live.reached = undefined;
    }
    return { composition: current, reached: false };
  }
  const cut = reachedCut(live);
  if (cut !== undefined && hash <= cut) return { composition: current, reached: true };
  // Not reached yet: on the last good build it stays there (a placement change composed with it).
  const mark = live.marks.get(node);
  if (state.previous && (mark === undefined || mark === markOfComposition(state.previous))) return { composition: state.previous, reached: false };
  // On the new build already (assigned anew before the seat's restart) it keeps it, never planned backwards; on a
  // superseded build, or with no last good composition (a build published while the seat was down), it keeps its stored plan.
  return { composition: mark === markOfComposition(current) ? current : undefined, reached: false };
}

/**
 * A planned node's clock, started the first time it is asked for; `reportsSeen` is the newest report
 * revision seen. `wait` counts from the write of the node's new plan (DESIGN §12): for a plan
 * already holding the new build (a restarted seat), from when the bus stored it, so a seat
 * restarted more often than `wait` still halts a wave that never applies.
 */
export function clockOf(live: Live, node: string, now: number, reportsSeen: number): NodeClock {
  let clock = live.clocks.get(node);
  if (!clock) {
    // A node already holding the new build (a restarted seat, a node assigned anew) counts the reports it has.
    const holds = live.target !== undefined && live.marks.get(node) === markOfComposition(live.target);
    const written = holds ? live.planTimes.get(node) : undefined;
    clock = { since: written === undefined ? now : Math.min(now, written), after: holds ? 0 : reportsSeen, applied: false };
    live.clocks.set(node, clock);
  }
  return clock;
}
