// What `lint --plan FILE` judges the templates against: a plan (DESIGN §4, the seat's value for
// one node) or a composition (the catalogue's value, or the file `publish` takes), told apart by
// shape — a plan names its `node`, a composition never does.
import { MAX_PLAN_BYTES, parseBoundedJson } from '../shared/contract/limits.ts';
import { CompositionFileSchema, CompositionSchema } from '../shared/contract/composition.ts';
import { PlanSchema, type Plan } from '../shared/contract/plan.ts';
import { validate } from '../shared/contract/decode.ts';
import { errorText } from '../shared/base/errors.ts';
import { readFileWithin } from './read-file.ts';
import type { Parsed } from '../shared/base/result.ts';
import { planOfComposition, type ComposedFields } from './composition-plan.ts';

/** What the file was read as: its plan (a composition's made without placement), and what is wrong with it besides. */
export type LintTarget = {
  /** A plan, or a composition. */
  kind: 'plan' | 'composition';
  /** The plan to judge the templates against. */
  plan: Plan;
  /** Whether the plan has a node's placement (a composition has none). */
  placed: boolean;
  /** What fails every plan composed from the composition. */
  problems: string[];
  /** The archive digest the file names, to compare with the archive's. */
  digest?: string;
};

/** The target, or why the file does not validate (`kind` says as what it was read); `usage` when it cannot be read at all. */
export type ReadTarget = { ok: true; value: LintTarget } | { ok: false; kind: LintTarget['kind']; reason: string } | { usage: string };

/** Reads `path` as a plan or a composition, within the limits of a plan (DESIGN §3). */
export async function readLintTarget(path: string): Promise<ReadTarget> {
  let bytes: Uint8Array;
  try {
    bytes = await readFileWithin(path, MAX_PLAN_BYTES);
  } catch (e) {
    return { usage: `--plan: cannot read ${path}: ${errorText(e, { cause: true })}` };
  }
  const raw = parseBoundedJson(bytes, { maxBytes: MAX_PLAN_BYTES });
  if (!raw.ok) return { ok: false, kind: 'plan', reason: raw.reason };
  return judgeTarget(raw.value);
}

/** A JSON value as a plan when it names a `node`, else as a composition (with `archive`: the bucket's value; without: `publish`'s file). */
export function judgeTarget(raw: unknown): ReadTarget {
  const fields = typeof raw === 'object' && raw !== null ? raw : {};
  if (Object.hasOwn(fields, 'node')) {
    const plan = validate(PlanSchema, raw);
    return plan.ok
      ? { ok: true, value: { kind: 'plan', plan: plan.value, placed: true, problems: [], digest: plan.value.archive.digest } }
      : { ...plan, kind: 'plan' };
  }
  const composition: Parsed<ComposedFields> = Object.hasOwn(fields, 'archive') ? validate(CompositionSchema, raw) : validate(CompositionFileSchema, raw);
  if (!composition.ok) return { ...composition, kind: 'composition' };
  const { plan, problems } = planOfComposition(composition.value);
  const digest = composition.value.archive?.digest;
  return { ok: true, value: { kind: 'composition', plan, placed: false, problems, ...(digest === undefined ? {} : { digest }) } };
}
