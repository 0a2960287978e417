// What the seat reads of a stored plan and of a report to follow a rollout: which build (and which
// archive of it) a node's plan holds, and a report's state, build and reason.
import { MAX_PLAN_BYTES } from '../../../shared/contract/limits.ts';
import { decodeJson } from '../../../shared/contract/decode.ts';
import { ReportSchema } from '../../../shared/contract/report.ts';
import type { Composition } from '../../../shared/contract/composition.ts';
import type { SeenReport } from './progress.ts';

/** The build a composition gives nodes, with its archive's digest: a build re-published with another archive is another mark. */
export function markOfComposition(c: Pick<Composition, 'build' | 'archive'>): string {
  return `${c.build}\n${c.archive?.digest ?? ''}`;
}

/**
 * How a plan the seat wrote begins (compose.ts's order): its node, module, build and archive. A JSON
 * string is `"…"` with `\\` escapes; node and module names have none (DESIGN §2).
 */
const PLAN_HEAD =
  /^\{"node":"[a-z0-9-]*","module":"[a-z0-9-]*","build":("(?:[^"\\]|\\.)*"),"archive":\{"ref":"(?:[^"\\]|\\.)*","digest":("(?:[^"\\]|\\.)*")\}[,}]/;
/** The bytes of a plan's head the fast path reads: its fixed keys and an archive reference of any usual length. */
const HEAD_BYTES = 4096;

/**
 * The mark of a stored plan's bytes (`markOfComposition` of what it was composed from); empty when
 * they are not a plan. A plan the seat wrote is read from its head alone: a restarted seat marks
 * every stored plan, and parsing each whole was an eighth of its restart's CPU at 50,000 plans
 * (bench/seat-scale.ts). Anything else (another order, a longer head) is parsed whole.
 */
export function markOfPlan(bytes: Uint8Array): string {
  return markOfPlanHead(bytes) ?? markOfWholePlan(bytes);
}

/** `markOfPlan` read from the head of a plan the seat wrote; undefined when the bytes do not begin as one does. */
export function markOfPlanHead(bytes: Uint8Array): string | undefined {
  const head = PLAN_HEAD.exec(Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(bytes.byteLength, HEAD_BYTES)).toString('utf8'));
  if (!head) return undefined;
  try {
    return markOfComposition({ build: JSON.parse(head[1]!) as string, archive: { ref: '', digest: JSON.parse(head[2]!) as string } });
  } catch {
    // Not JSON after all (a raw control character, say): the whole plan's parse says what it is.
    return undefined;
  }
}

/** `markOfPlan` by parsing every byte. */
export function markOfWholePlan(bytes: Uint8Array): string {
  try {
    const plan = JSON.parse(Buffer.from(bytes).toString('utf8')) as { build?: unknown; archive?: { digest?: unknown } };
    if (typeof plan.build !== 'string') return '';
    return markOfComposition({ build: plan.build, archive: typeof plan.archive?.digest === 'string' ? { ref: '', digest: plan.archive.digest } : undefined });
  } catch {
    return '';
  }
}

/** How many waited values a report's mark keeps. */
const WAITED_SAID = 3;

/** A report's bytes as a rollout follows them; undefined when they do not validate (the verb says those). */
export function readSeenReport(bytes: Uint8Array, revision: number): SeenReport | undefined {
  const report = decodeJson(ReportSchema, bytes, { maxBytes: MAX_PLAN_BYTES });
  if (!report.ok) return undefined;
  const { state, build, reason, waiting } = report.value;
  // The first few values it waits for: a timed-out node's reason names them (progress.ts).
  const waited = waiting.slice(0, WAITED_SAID).map((w) => `${w.kind}:${w.name}`);
  if (waiting.length > WAITED_SAID) waited.push(`${waiting.length - WAITED_SAID} more`);
  return { state, build, revision, ...(reason === undefined ? {} : { reason }), ...(waited.length > 0 ? { waited } : {}) };
}
