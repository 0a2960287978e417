// A rollout's state as the seat keeps it in `mesh-provisioner_rollouts`, key `<module>` (DESIGN §12),
// and its schema: what a restarted seat reads to go on where it was.
import * as v from 'valibot';
import { NAME_PATTERN } from './keys.ts';
import { parseBoundedJson } from './limits.ts';
import { CompositionSchema, type Composition } from './composition.ts';
import { validate } from './decode.ts';
import type { Parsed } from '../base/result.ts';
import { wavesCuts, waveOrder } from './waves.ts';

/** Where a rollout stands, as a const object and the union it names. */
export const ROLLOUT_STATES = { rolling: 'rolling', halted: 'halted', done: 'done', aborted: 'aborted', superseded: 'superseded' } as const;
/** Where a rollout stands. */
export type RolloutStateName = (typeof ROLLOUT_STATES)[keyof typeof ROLLOUT_STATES];

/**
 * The biggest state value the seat reads: a composition (1 MiB at most) and the rest, which no
 * longer grows with the fleet; room is left for a state an older seat wrote with its member list.
 */
export const MAX_ROLLOUT_STATE_BYTES = 4 * 1024 * 1024;

/** Failed nodes a state lists at most (DESIGN §12); `nodes.failed` counts every one. */
export const MAX_FAILED_LISTED = 100;
/** How many bytes a failed node's reason takes in a state at most (as JSON, UTF-8), so 100 of them stay within 40 KiB. */
export const MAX_FAILED_REASON_BYTES = 300;

/** A failed node's reason cut to MAX_FAILED_REASON_BYTES as the state writes it, with `…` where it was cut. */
export function clipFailedReason(reason: string): string {
  const fits = (text: string) => Buffer.byteLength(JSON.stringify(text)) <= MAX_FAILED_REASON_BYTES;
  if (fits(reason)) return reason;
  // A reason of control characters takes six bytes each as JSON, and one of CJK three: cut until it fits.
  for (let cut = Math.min(reason.length, MAX_FAILED_REASON_BYTES); cut > 0; cut = Math.floor(cut * 0.8)) {
    const at = /[\uD800-\uDBFF]/.test(reason[cut - 1] ?? '') ? cut - 1 : cut;
    const clipped = `${reason.slice(0, at)}…`;
    if (fits(clipped)) return clipped;
  }
  return '…';
}

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
  /** The first failed nodes (MAX_FAILED_LISTED), with why. */
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
  /** Each wave's cut, the hex sha256 of its last node at the start: wave k is every node on an older plan hashed at most its cut. */
  cuts: v.array(v.pipe(v.string(), v.regex(/^[0-9a-f]{64}$/, 'is not a hex sha256'))),
});
/** A value of `mesh-provisioner_rollouts`. */
export type RolloutState = v.InferOutput<typeof RolloutStateSchema>;

/** A state as an older seat wrote it: its member list, in wave order, in place of the cuts. */
const LegacyStateSchema = v.object({ ...v.omit(RolloutStateSchema, ['cuts']).entries, members: v.array(name) });

/**
 * Decodes a stored state under its key; the reason names the field, or the key the value disagrees
 * with. A state an older seat wrote with `members` is read with the cuts they give, so a seat
 * upgraded mid-rollout goes on where it was (its next write drops the list).
 */
export function readRolloutState(key: string, bytes: Uint8Array): Parsed<RolloutState> {
  const raw = parseBoundedJson(bytes, { maxBytes: MAX_ROLLOUT_STATE_BYTES });
  if (!raw.ok) return raw;
  const legacy = typeof raw.value === 'object' && raw.value !== null && !('cuts' in raw.value) && 'members' in raw.value;
  const read = legacy ? fromMembers(validate(LegacyStateSchema, raw.value)) : validate(RolloutStateSchema, raw.value);
  if (read.ok && read.value.module !== key) return { ok: false, reason: `field "module" names ${read.value.module}` };
  return read;
}

/** A state an older seat wrote, with the cuts its member list gives (the list was in wave order; ordered again should a hand have written it). */
function fromMembers(read: Parsed<v.InferOutput<typeof LegacyStateSchema>>): Parsed<RolloutState> {
  if (!read.ok) return read;
  const { members, ...rest } = read.value;
  return { ok: true, value: { ...rest, cuts: wavesCuts(rest.module, rest.build, waveOrder(rest.module, rest.build, members), rest.waves) } };
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

/**
 * The entry of the verb's `health` for a rollout not done (DESIGN §12), or done with failed nodes;
 * `failed` lists the nodes that keep the new build failed (rolling, or done and not applied since).
 */
export type RolloutHealth = {
  module: string;
  build: string;
  state: RolloutStateName;
  wave: number;
  reason: string;
  since: string;
  failed?: { node: string; reason: string }[];
};
