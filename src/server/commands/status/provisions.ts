// Whom a module's bound value waits on (DESIGN §4, §5): the registry knows the kind `bound` only as
// `<provider>_bound`; the module's plan names the provider and the node it runs on, and the
// provider's plan there says whether it serves the provision at all. A consumer whose provider is
// nowhere would otherwise wait with nothing saying why. Read for `status <node> [<module>]` only: a
// few keys of the plans by direct get, which the seat's login reads (not the assignments, which it
// only watches).
import type { NatsConnection } from '@nats-io/transport-node';
import { PLANS } from '../../../shared/contract/buckets.ts';
import { openKv } from '../../../shared/bus/bus.ts';
import { nodeModuleKey } from '../../../shared/contract/keys.ts';
import { decodeJson } from '../../../shared/contract/decode.ts';
import { PlanSchema, type Plan } from '../../../shared/contract/plan.ts';
import type { ModuleDetail, WaitedValue } from './detail.ts';
import { bindingOf } from './where.ts';

/** A consumer's provision as its plan gives it: the provider module, the node it runs on, the binding. */
export type PlannedProvision = Plan['provisions'][number];

/** What status learns of the provider a bound value waits on: the provisions its plan provides, or none planned. */
export type ProviderSeen = { planned: false } | { planned: true; provides: readonly string[] };

/** The provision a waited bound name (`<provision>[.<local>]:<key>`, DESIGN §5) reads; undefined when the plan requires none such. */
export function provisionOf(plan: Pick<Plan, 'provisions'>, name: string): PlannedProvision | undefined {
  const binding = bindingOf(name);
  return binding && plan.provisions.find((p) => p.provision === binding.provision && p.local === binding.local);
}

/**
 * The waited value with its provider's own bucket, and a note when no module binds it: none planned
 * on the provider's node (not assigned there, or held: `status <node> <provider>` says which), or one
 * planned that does not provide the provision.
 */
export function withProvider(waited: WaitedValue, p: PlannedProvision, seen: ProviderSeen): WaitedValue {
  const note = !seen.planned
    ? `no module ${p.provider} is planned on ${p.node}, so nothing binds it: assign ${p.provider} there (if it is, \`status ${p.node} ${p.provider}\` says why it has no plan), or correct the provisions of the module's composition`
    : !seen.provides.includes(p.provision)
      ? `${p.provider} on ${p.node} does not provide ${p.provision} (its plan provides ${seen.provides.length > 0 ? seen.provides.join(', ') : 'nothing'}), so nothing binds it`
      : undefined;
  return { ...waited, owner: p.provider, where: `${p.provider}_bound`, ...(note === undefined ? {} : { note }) };
}

/**
 * Resolves every bound value the modules wait on against their plans and their providers' plans. A
 * key the login may not read, or a bucket not there, leaves the value as the registry shows it:
 * this is a hint, never a failure of `status`.
 */
export async function resolveBoundWaits(nc: NatsConnection, modules: ModuleDetail[]): Promise<ModuleDetail[]> {
  if (!modules.some((m) => m.waiting.some((w) => w.kind === 'bound'))) return modules;
  const plans = await openKv(nc, PLANS).catch(() => undefined);
  if (!plans) return modules;
  /** A key's plan; null when there is none; undefined when it could not be read. */
  const planOf = async (key: string): Promise<Plan | null | undefined> => {
    const entry = await plans.get(key).catch(() => undefined);
    if (entry === undefined) return undefined;
    if (entry === null || entry.operation !== 'PUT') return null;
    const plan = decodeJson(PlanSchema, entry.value);
    return plan.ok ? plan.value : undefined;
  };
  const providers = new Map<string, Promise<ProviderSeen | undefined>>();
  const providerSeen = (key: string): Promise<ProviderSeen | undefined> => {
    let seen = providers.get(key);
    if (!seen) {
      seen = planOf(key).then((plan) =>
        plan === undefined ? undefined : plan === null ? { planned: false } : { planned: true, provides: plan.provides.map((p) => p.provision) },
      );
      providers.set(key, seen);
    }
    return seen;
  };
  return Promise.all(
    modules.map(async (m) => {
      if (!m.waiting.some((w) => w.kind === 'bound')) return m;
      const plan = await planOf(nodeModuleKey(m.node, m.module));
      if (!plan) return m;
      const waiting = await Promise.all(
        m.waiting.map(async (w) => {
          const p = w.kind === 'bound' ? provisionOf(plan, w.name) : undefined;
          const seen = p ? await providerSeen(nodeModuleKey(p.node, p.provider)) : undefined;
          return p && seen ? withProvider(w, p, seen) : w;
        }),
      );
      return { ...m, waiting };
    }),
  );
}
