// A fleet for the seat's fault tests: nodes × modules assignments and their compositions written to
// the input buckets, the exact plan bytes the seat should write for them, and the plans bucket as
// the bus holds it, kept by a watch (each key's revision and bytes).
import type { KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { jsonBytes } from '../../src/shared/base/bytes.ts';
import { watchKv } from '../../src/shared/bus/watch/watch.ts';
import { PLANS } from '../../src/shared/contract/buckets.ts';
import { assignment, composition } from './seat.ts';

/** What a fleet wrote: compositions by module, assignments by key, as bytes. */
export type Fleet = { compositions: Map<string, Uint8Array>; assignments: Map<string, Uint8Array> };

/** Puts every entry with at most 256 puts unacknowledged. */
export async function putAll(kv: KV, entries: Iterable<[string, Uint8Array]>): Promise<void> {
  const inFlight = new Set<Promise<unknown>>();
  for (const [key, value] of entries) {
    const put: Promise<unknown> = kv.put(key, value).finally(() => inFlight.delete(put));
    inFlight.add(put);
    if (inFlight.size >= 256) await Promise.race(inFlight);
  }
  await Promise.all(inFlight);
}

/** Writes `modules` compositions (m0…) and an assignment of each to `nodes` nodes (n000…). */
export async function putFleet(inputs: { assignments: KV; modules: KV }, nodes: number, modules: number): Promise<Fleet> {
  const moduleNames = Array.from({ length: modules }, (_, j) => `m${j}`);
  const nodeNames = Array.from({ length: nodes }, (_, i) => `n${String(i).padStart(3, '0')}`);
  const compositions = new Map(moduleNames.map((m) => [m, jsonBytes(composition(m))]));
  const assignments = new Map<string, Uint8Array>(nodeNames.flatMap((n) => moduleNames.map((m) => [`${n}.${m}`, jsonBytes(assignment(n, m))] as const)));
  await putAll(inputs.modules, compositions);
  await putAll(inputs.assignments, assignments);
  return { compositions, assignments };
}

/**
 * The plan bytes the seat writes for each assignment of the fleet, written out here from DESIGN §4's
 * example for the fleet's one shape of composition (seat.ts `composition`, `assignment`): the
 * composition's fields in the contract's order, the `${dir:config}` of its file resolved from the
 * placement, its secret given its vault name — not composed by the seat's code under test.
 */
export function expectedPlans(fleet: Fleet): Map<string, Uint8Array> {
  return new Map(
    [...fleet.assignments].map(([key, bytes]) => {
      const a = JSON.parse(Buffer.from(bytes).toString('utf8')) as ReturnType<typeof assignment>;
      const c = JSON.parse(Buffer.from(fleet.compositions.get(a.module)!).toString('utf8')) as ReturnType<typeof composition>;
      const [file] = c.provisioning.files;
      const plan = {
        node: a.node,
        module: a.module,
        build: c.build,
        archive: c.archive,
        files: [{ ...file!, path: file!.path.replace('${dir:config}', a.placement.dir.config) }],
        placement: a.placement,
        secrets: c.provisioning.secrets.map((s) => ({ name: s.name, vault: `module/${a.module}/${s.name}` })),
        provisions: [],
        provides: [],
        items: [],
        collections: [],
      };
      return [key, Buffer.from(JSON.stringify(plan))];
    }),
  );
}

/** A stored plan: its revision and bytes. */
export type StoredPlan = { revision: number; bytes: Uint8Array };

/** The plans bucket as the bus holds it, kept current by a watch until stopped. */
export type PlansMirror = { plans: Map<string, StoredPlan>; stop(): void };

/** Watches the whole plans bucket; resolves once it holds what was stored when it began. */
export async function mirrorPlans(nc: NatsConnection): Promise<PlansMirror> {
  const plans = new Map<string, StoredPlan>();
  const watch = await watchKv(nc, PLANS, '>', (e) => {
    if (e.value) plans.set(e.key, { revision: e.revision, bytes: e.value });
    else plans.delete(e.key);
  });
  await watch.caughtUp;
  return { plans, stop: () => watch.stop() };
}
