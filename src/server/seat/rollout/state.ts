// A rollout's state as the seat keeps it in `mesh-provisioner_rollouts`, key `<module>` (DESIGN §12),
// and its schema: what a restarted seat reads to go on where it was.
import * as v from 'valibot';
import { NAME_PATTERN } from '../../../shared/keys.ts';
import { CompositionSchema, decodeJson, type Composition } from '../../../shared/schemas.ts';
import type { Parsed } from '../../../shared/result.ts';

/** Where a rollout stands, as a const object and the union it names. */
export const ROLLOUT_STATES = { rolling: 'rolling', halted: 'halted', done: 'done', aborted: 'aborted', superseded: 'superseded' } as const;
/** Where a rollout stands. */
export type RolloutStateName = (typeof ROLLOUT_STATES)[keyof typeof ROLLOUT_STATES];

/** The biggest state value the seat reads: a composition (1 MiB at most) plus the member list of a large fleet. */
export const MAX_ROLLOUT_STATE_BYTES = 4 * 1024 * 1024;

const name = v.pipe(v.string(), v.regex(NAME_PATTERN, 'is not a valid name'));
const count = v.pipe(v.number(), v.integer(), v.minValue(0));

/** A value of `mesh-provisioner_rollouts`. */
export const RolloutStateSchema = v.object({
  /** The module rolled out. */
  module: name,
  /** The new build. */
  build: v.string(),
  /** The last good build, the rollout started from. */
  from: v.string(),
  /** Where it stands. */
  state: v.picklist(Object.values(ROLLOUT_STATES)),
  /** The wave planned now, from 1. */
  wave: v.pipe(v.number(), v.integer(), v.minValue(1)),
  /** The cumulative fractions of the waves. */
  waves: v.array(v.number()),
  /** Failed nodes that halt it. */
  halt: v.pipe(v.number(), v.integer(), v.minValue(1)),
  /** Seconds a node has, from its new plan, to report the new build applied. */
  wait: v.pipe(v.number(), v.gtValue(0)),
  /** Counts over the rollout's nodes: all of them, those planned the new build, those that applied it, those that failed. */
  nodes: v.object({ total: count, planned: count, applied: count, failed: count }),
  /** Each failed node, with why. */
  failed: v.array(v.object({ node: name, reason: v.string() })),
  /** ISO time this state began. */
  since: v.string(),
  /**
   * The last good build's whole composition (the new build's once the rollout is done); absent when
   * the seat never saw it (a build published while it was down, no rollout stored): nodes keep their plans.
   */
  previous: v.optional(CompositionSchema),
  /** The digest of what the new build gives nodes (its composition without `rollout`): a re-published build with other content is a new rollout. */
  digest: v.string(),
  /** The nodes on an older plan when the rollout started, in wave order: N and the waves are fixed by them. */
  members: v.array(name),
});
/** A value of `mesh-provisioner_rollouts`. */
export type RolloutState = v.InferOutput<typeof RolloutStateSchema>;

/** Decodes a stored state under its key; the reason names the field, or the key the value disagrees with. */
export function readRolloutState(key: string, bytes: Uint8Array): Parsed<RolloutState> {
  const decoded = decodeJson(RolloutStateSchema, bytes, { maxBytes: MAX_ROLLOUT_STATE_BYTES });
  if (decoded.ok && decoded.value.module !== key) return { ok: false, reason: `field "module" names ${decoded.value.module}` };
  return decoded;
}

/** Whether a rollout still moves or holds nodes back: rolling or halted. */
export function isOpen(state: RolloutState): boolean {
  return state.state === 'rolling' || state.state === 'halted';
}

/** What the nodes of a module get from a composition: everything but its `rollout`, as a digest-able text. */
export function contentOf(composition: Composition): string {
  const { rollout: _rollout, ...content } = composition;
  return JSON.stringify(content);
}

/** The entry of the verb's `health` for a rollout not done (DESIGN §12). */
export type RolloutHealth = { module: string; build: string; state: RolloutStateName; wave: number; reason: string; since: string };
