// One key's plan in a pass (DESIGN §4, §12): composed from the composition the rollouts choose for it,
// within the limit, and wanted only when it differs from the stored one.
import { MAX_PLAN_BYTES } from '../../shared/contract/limits.ts';
import type { Composition } from '../../shared/contract/composition.ts';
import { digestOf } from '../../shared/contract/digest.ts';
import { composePlan } from './compose.ts';
import { isUsable, type ComposerInputs } from './inputs.ts';
import type { PassHealth } from './pass-health.ts';
import type { PassSummary } from './pass-summary.ts';

/** What the composer asks the rollouts (DESIGN §12): the composition a key's plan is composed from, or undefined to keep its stored plan. */
export type CompositionSelector = {
  /** The composition `key`'s plan is composed from: the new build, the last good one, or undefined to keep its stored plan. */
  compositionFor(key: string, node: string, module: string, current: Composition): Composition | undefined;
};

/** A plan to write: its bytes and their digest. */
export type WantedPlan = { bytes: Uint8Array; digest: string };

/** What composing a key reads: the inputs, the health it says failures on, and the rollouts, when any. */
export type KeyPlanContext = { inputs: ComposerInputs; health: PassHealth; select: CompositionSelector | undefined };

/** Composes a key; one key's exception is said with the key and the pass goes on. */
export function wantedPlan(ctx: KeyPlanContext, summary: PassSummary, key: string): WantedPlan | undefined {
  try {
    return planOf(ctx, summary, key);
  } catch (err) {
    ctx.health.internalError(summary, key, err);
    return undefined;
  }
}

/** The plan of a key when it is to be written: composed, within the limit, and different from the stored one. */
function planOf({ inputs, health, select }: KeyPlanContext, summary: PassSummary, key: string): WantedPlan | undefined {
  const assignment = inputs.assignment(key);
  const c = assignment ? inputs.composition(assignment.module) : undefined;
  // A held module's keys keep their stored plans; the module is counted and said per pass.
  if (!assignment || !isUsable(c)) return undefined;
  const chosen: Composition | undefined = select ? select.compositionFor(key, assignment.node, assignment.module, c.parsed.value) : c.parsed.value;
  // A node a rollout has not reached, on a superseded build, keeps its stored plan until its wave.
  if (!chosen) return undefined;
  summary.composed.push(key);
  const plan = composePlan(assignment, chosen);
  // Buffer.from is the same UTF-8 as jsonBytes at less than half the cost, which counts at fleet size.
  const bytes = plan.ok ? Buffer.from(JSON.stringify(plan.value)) : undefined;
  const why = !plan.ok
    ? plan.reason
    : // A plan past the limit is one the bus or the client would refuse: refused here, with its size.
      bytes!.length > MAX_PLAN_BYTES
      ? `${bytes!.length} bytes, past the limit of ${MAX_PLAN_BYTES} bytes`
      : undefined;
  if (why !== undefined || !bytes) {
    const said = digestOf(`${JSON.stringify(assignment)}\n${c.digest}${chosen === c.parsed.value ? '' : `\n${chosen.build}`}`);
    health.fail(summary, key, said, { module: assignment.module, node: assignment.node, build: chosen.build, reason: `plan ${key}: ${why ?? ''}` }, why ?? '');
    return undefined;
  }
  health.clear(key);
  const digest = digestOf(bytes);
  return inputs.storedPlan(key)?.digest === digest ? undefined : { bytes, digest };
}
