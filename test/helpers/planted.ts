// A plan written straight into the plans bucket, as a compromised seat or a buggy writer could: the
// hostile and binding suites plant them to see what a client does with what the seat never composes.
import type { KV } from '@nats-io/kv';
import { jsonBytes } from '../../src/shared/base/bytes.ts';

/** An archive no store holds: a planted plan that never gets as far as its templates. */
export const NO_ARCHIVE = { ref: 'obj://mesh-catalog_archives/none.tar', digest: 'sha256:' + 'a'.repeat(64) };

/** A plan of `module` on `node`, empty but for `fields`, naming an archive no store holds. */
export function emptyPlan(node: string, module: string, fields: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    node,
    module,
    build: '1',
    archive: NO_ARCHIVE,
    files: [],
    placement: {},
    secrets: [],
    provisions: [],
    provides: [],
    items: [],
    collections: [],
    ...fields,
  };
}

/**
 * Plants the plan of `module` on `node`: empty but for `fields`, its assignment kept (with no
 * placement) and its composition absent, so the seat holds the plan rather than write over it.
 */
export async function plantPlan(kv: { assignments: KV; plans: KV }, node: string, module: string, fields: Record<string, unknown>): Promise<void> {
  await kv.assignments.put(`${node}.${module}`, JSON.stringify({ node, module, placement: {} }));
  await kv.plans.put(`${node}.${module}`, jsonBytes(emptyPlan(node, module, fields)));
}
