// What the seat reads of a stored plan and of a report to follow a rollout: which build (and which
// archive of it) a node's plan holds, and a report's state, build and reason.
import { MAX_PLAN_BYTES } from '../../../shared/limits.ts';
import { decodeJson, ReportSchema, type Composition } from '../../../shared/schemas.ts';
import type { SeenReport } from './progress.ts';

/** The build a composition gives nodes, with its archive's digest: a build re-published with another archive is another mark. */
export function markOfComposition(c: Pick<Composition, 'build' | 'archive'>): string {
  return `${c.build}\n${c.archive?.digest ?? ''}`;
}

/** The mark of a stored plan's bytes (`markOfComposition` of what it was composed from); empty when they are not a plan. */
export function markOfPlan(bytes: Uint8Array): string {
  try {
    const plan = JSON.parse(Buffer.from(bytes).toString('utf8')) as { build?: unknown; archive?: { digest?: unknown } };
    if (typeof plan.build !== 'string') return '';
    return markOfComposition({ build: plan.build, archive: typeof plan.archive?.digest === 'string' ? { ref: '', digest: plan.archive.digest } : undefined });
  } catch {
    return '';
  }
}

/** A report's bytes as a rollout follows them; undefined when they do not validate (the verb says those). */
export function readSeenReport(bytes: Uint8Array, revision: number): SeenReport | undefined {
  const report = decodeJson(ReportSchema, bytes, { maxBytes: MAX_PLAN_BYTES });
  if (!report.ok) return undefined;
  const { state, build, reason } = report.value;
  return { state, build, revision, ...(reason === undefined ? {} : { reason }) };
}
