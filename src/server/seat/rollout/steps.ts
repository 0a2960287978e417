// The steps of a rollout (DESIGN §12) as pure changes of its state: start, the next wave, done,
// halt, resume, abort, superseded; and the line each step is said with.
import type { Rollout } from '../../../shared/contract/rollout-schema.ts';
import type { Composition } from '../../../shared/contract/composition.ts';
import { isComposeFailure, type FailedNode } from './progress.ts';
import { clipFailedReason, MAX_FAILED_LISTED, type RolloutState } from '../../../shared/contract/rollout-state.ts';
import { reachedBy, wavesCuts } from '../../../shared/contract/waves.ts';

/** What a rollout starts from. */
export type RolloutStart = {
  /** The new composition. */
  target: Composition;
  /** The digest of what the new composition gives nodes. */
  digest: string;
  /** The last good build's composition, or only its name when the seat never saw it (published while it was down). */
  from: Composition | string;
  /** Its waves, halt and wait. */
  policy: Rollout;
  /** The nodes on an older plan, in wave order: N, and each wave's cut. */
  members: readonly string[];
  /** Now, in ms. */
  now: number;
};

/** A new rollout, its first wave planned. */
export function startRollout(start: RolloutStart): RolloutState {
  const { target, from, policy, members } = start;
  return {
    module: target.module,
    build: target.build,
    from: typeof from === 'string' ? from : from.build,
    state: 'rolling',
    wave: 1,
    waves: [...policy.waves],
    halt: policy.halt,
    wait: policy.wait,
    nodes: { total: members.length, planned: reachedBy(policy.waves, 1, members.length), applied: 0, failed: 0 },
    failed: [],
    since: new Date(start.now).toISOString(),
    ...(typeof from === 'string' ? {} : { previous: from }),
    digest: start.digest,
    cuts: wavesCuts(target.module, target.build, members, policy.waves),
  };
}

/** The failed nodes as a state keeps them: every one counted, the first MAX_FAILED_LISTED listed, each reason clipped. */
export function withFailed(state: RolloutState, failed: readonly FailedNode[]): RolloutState {
  const listed = failed.slice(0, MAX_FAILED_LISTED).map(({ node, reason }) => ({ node, reason: clipFailedReason(reason) }));
  return { ...state, failed: listed, nodes: { ...state.nodes, failed: failed.length } };
}

/**
 * The next wave planned, or the rollout done after the last: the new build is then the last good
 * one. The failed nodes below `halt` stay listed: they keep the new build, done with failures.
 */
export function nextWave(state: RolloutState, target: Composition, now: number): RolloutState {
  const since = new Date(now).toISOString();
  if (state.wave >= state.waves.length) return { ...state, state: 'done', since, previous: target };
  const wave = state.wave + 1;
  return { ...state, wave, since, nodes: { ...state.nodes, planned: reachedBy(state.waves, wave, state.nodes.total) } };
}

/** Halted by its failed nodes: every node on the new build goes back to the last good one. */
export function haltRollout(state: RolloutState, failed: readonly FailedNode[], now: number): RolloutState {
  return withFailed({ ...state, state: 'halted', since: new Date(now).toISOString() }, failed);
}

/**
 * A done rollout whose listed failed `nodes` have since reported the new build applied: each moved
 * out of `failed` and counted applied, so `rollout` says what `status` does.
 */
export function withRecovered(state: RolloutState, nodes: ReadonlySet<string>): RolloutState {
  const failed = state.failed.filter((f) => !nodes.has(f.node));
  const moved = state.failed.length - failed.length;
  return { ...state, failed, nodes: { ...state.nodes, applied: state.nodes.applied + moved, failed: state.nodes.failed - moved } };
}

/** A halt lifted by an operator: the failed nodes get the new build again with the next wave, the count starts again. */
export function resumeRollout(state: RolloutState, now: number): RolloutState {
  const wave = Math.min(state.wave + 1, state.waves.length);
  const planned = reachedBy(state.waves, wave, state.nodes.total);
  return { ...state, state: 'rolling', wave, since: new Date(now).toISOString(), failed: [], nodes: { ...state.nodes, planned, applied: 0, failed: 0 } };
}

/** Stopped by an operator: every node on the new build goes back to the last good one. */
export function abortRollout(state: RolloutState, now: number): RolloutState {
  return { ...state, state: 'aborted', since: new Date(now).toISOString() };
}

/** Replaced by a newer composition. */
export function supersedeRollout(state: RolloutState, now: number): RolloutState {
  return { ...state, state: 'superseded', since: new Date(now).toISOString() };
}

/** Why an operator's `resume` or `abort` is refused in this state; nothing when it is taken. */
export function refusal(state: RolloutState, op: 'resume' | 'abort'): string | undefined {
  const what = `the rollout of ${state.module} build ${state.build} is ${state.state}`;
  if (state.state === 'done') return `${what}: nothing to ${op}`;
  if (op === 'resume' && state.state === 'aborted') return `${what}, not halted: an aborted rollout is not resumed; publish a new build to roll out again`;
  if (op === 'resume' && state.state !== 'halted') return `${what}, not halted: only a halt is resumed`;
  if (op === 'abort' && state.state !== 'rolling' && state.state !== 'halted') return `${what}: only a rolling or halted rollout is aborted`;
  return undefined;
}

/** How many failed nodes a halt's line names at most. */
export const FAILED_NODES_SAID = 5;

/** The build of a node's stored plan, as the seat last saw it (undefined: not seen). */
export type PlanOf = (node: string) => string | undefined;

/**
 * The line a rollout's current state is said with, on `provisioner_health` and in the verb's
 * `health`; `planOf` tells which build a failed node the seat cannot compose is still on (else the
 * build the rollout started from).
 */
export function describeState(state: RolloutState, planOf: PlanOf = () => undefined): string {
  const head = `rollout of ${state.module} build ${state.build} from ${state.from}`;
  const { total, planned, applied } = state.nodes;
  // With no last good composition the nodes on the new build cannot be planned back: they keep it.
  const back = state.previous
    ? `planned back to ${state.from}`
    : `its nodes on ${state.build} keep it (the seat never saw ${state.from}'s composition: publish ${state.from} again to plan them back)`;
  const failed = failedSaid(state, planOf);
  switch (state.state) {
    case 'rolling': {
      const line = `${head}: wave ${state.wave} of ${state.waves.length} planned (${planned} of ${total} nodes, ${applied} applied)`;
      // Failed nodes below `halt` are a budget (DESIGN §12): the rollout goes on past them, and they keep the new build.
      if (state.nodes.failed === 0) return line;
      return `${line}; ${failed.text}, fewer than halt ${state.halt}: the rollout goes on${failed.kept}; fix them (\`status\` shows them failed), or \`rollout abort ${state.module}\``;
    }
    case 'halted':
      return `${head}: halted at wave ${state.wave} by ${failed.text}; ${back}; next: \`rollout resume ${state.module}\` (the failed nodes again, with the next wave), \`rollout abort ${state.module}\`, or publish a fixed build`;
    case 'done': {
      if (state.nodes.failed === 0) return `${head}: done, ${total} node(s) on ${state.build}`;
      const on = failed.uncomposed === 0 ? `${total}` : `${total - failed.uncomposed} of ${total}`;
      return `${head}: done with failures, ${on} node(s) on ${state.build}, ${failed.text} (fewer than halt ${state.halt})${failed.kept.replace(/^ and/, ';')}: fix them (\`status\` shows them failed)`;
    }
    case 'aborted':
      return `${head}: aborted by an operator; ${back}; publish a new build to roll out again`;
    case 'superseded':
      return `${head}: superseded by a newer composition`;
  }
}

/**
 * `2 failed node(s) (n1: why; n2 keeps its plan of b1: cannot compose b2: why)`: the count of every
 * failed node, the first few named (`rollout MODULE` lists the rest); a node the seat cannot compose
 * the new build for is said on the plan it keeps. `uncomposed` counts those of the listed still on
 * another build, and `kept` says who keeps the new build (` and they keep b2`, or nothing).
 */
function failedSaid(state: RolloutState, planOf: PlanOf): { text: string; uncomposed: number; kept: string } {
  const elsewhere = (node: string, reason: string): string | undefined => {
    if (!isComposeFailure(reason, state.build)) return undefined;
    const plan = planOf(node);
    return plan === state.build ? undefined : (plan ?? state.from);
  };
  const uncomposed = state.failed.filter((f) => elsewhere(f.node, f.reason) !== undefined).length;
  const shown = state.failed.slice(0, FAILED_NODES_SAID).map((f) => {
    const keeps = elsewhere(f.node, f.reason);
    return keeps === undefined ? `${f.node}: ${f.reason}` : `${f.node} keeps its plan of ${keeps}: ${f.reason}`;
  });
  const more = state.nodes.failed - shown.length;
  const text = `${state.nodes.failed} failed node(s) (${shown.join('; ')}${more > 0 ? `; and ${more} more` : ''})`;
  const kept = uncomposed === 0 ? ` and they keep ${state.build}` : uncomposed < state.nodes.failed ? ` and the others keep ${state.build}` : '';
  return { text, uncomposed, kept };
}

/** The level a step is logged at: a halt (and its rollback), failures left on the new build at warning; an operator's abort, a supersession at notice; the rest at info. */
export function levelOf(state: RolloutState): 'warn' | 'notice' | 'info' {
  if (state.state === 'halted' || (state.state === 'done' && state.nodes.failed > 0)) return 'warn';
  if (state.state === 'aborted' || state.state === 'superseded') return 'notice';
  return 'info';
}
