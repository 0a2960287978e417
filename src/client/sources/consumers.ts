// Consumers (`${consumers:<provision>}`, DESIGN §7 point 8): for a provider module of this node,
// every consumer bound to its provision across every node's plans (one read-only watch of the whole
// plans bucket, opened while a plan of this node provides something), each with the credential the
// vault hands for the pair. Credentials live in memory for the fill only: never logged or stored.
import type { NatsConnection } from '@nats-io/transport-node';
import { provisionRequest, type ProvisionRequest } from '../../shared/contract/bound-request.ts';
import { watchBucket } from '../../shared/bus/watch/bucket.ts';
import type { Watch } from '../../shared/bus/watch/types.ts';
import { PLANS } from '../../shared/contract/buckets.ts';
import { compareKeys, parseNodeModuleKey } from '../../shared/contract/keys.ts';
import { pairVault } from '../../shared/contract/vault-names.ts';
import type { Logger } from '../../shared/cli/log.ts';
import { decodeJson } from '../../shared/contract/decode.ts';
import { PlanSchema, type Plan } from '../../shared/contract/plan.ts';
import { VAULT_CHANGED } from '../../shared/contract/subjects.ts';
import { VaultCredentials } from './vault.ts';
import { vaultNoticeReader } from './vault-notice.ts';
import type { Found, Lookup, OnChange, Source, Wanted } from './source.ts';

/**
 * One consumer of a provision, as the plans say it (the credential is the vault's), with its whole
 * provision entry: the request the provider's bound entry answers (DESIGN §3, `for`).
 */
type Consumer = { consumer: string; module: string; local: string | null; vault: string; value: Record<string, unknown>; provision: ProvisionRequest };

/** The dependency key of a provider module's `${consumers:<provision>}`. */
export function consumersDependency(module: string, provision: string): string {
  return `consumers:${module}:${provision}`;
}

/** The consumers bound to `provision` of provider module `provider` on `node`, in plan key order, then provision order. */
export function consumersOf(plans: ReadonlyMap<string, Plan>, node: string, provider: string, provision: string): Consumer[] {
  const out: Consumer[] = [];
  for (const key of [...plans.keys()].sort(compareKeys)) {
    const plan = plans.get(key)!;
    for (const p of plan.provisions) {
      if (p.provider !== provider || p.node !== node || p.provision !== provision) continue;
      const vault = pairVault({ provider, provision, node: plan.node, module: plan.module, ...(p.local !== undefined ? { local: p.local } : {}) });
      out.push({ consumer: plan.node, module: plan.module, local: p.local ?? null, vault, value: p.values ?? {}, provision: provisionRequest(p) });
    }
  }
  return out;
}

/** The providers' dependencies a plan's provisions touch on `node`. */
function touched(plan: Plan | undefined, node: string): string[] {
  return (plan?.provisions ?? []).filter((p) => p.node === node).map((p) => consumersDependency(p.provider, p.provision));
}

/** Starts the consumers source of `node`; the plans watch opens once a plan of the node provides something. */
export function consumersSource(nc: NatsConnection, node: string, log: Logger, onChange: OnChange): Source {
  const plans = new Map<string, Plan>();
  let watch: Watch | undefined;
  let caught = false;
  const credentials = new VaultCredentials(nc, log, (vault) => {
    // A credential came or changed: refill the providers whose consumers hold it.
    const deps = new Set<string>();
    for (const plan of plans.values())
      for (const p of plan.provisions) {
        if (p.node !== node) continue;
        const name = pairVault({
          provider: p.provider,
          provision: p.provision,
          node: plan.node,
          module: plan.module,
          ...(p.local !== undefined ? { local: p.local } : {}),
        });
        if (name === vault) deps.add(consumersDependency(p.provider, p.provision));
      }
    onChange([...deps]);
  });
  const readNotice = vaultNoticeReader(log, (name) => credentials.changed(name));
  const changes = nc.subscribe(VAULT_CHANGED, {
    callback: (err, msg) => {
      if (!err) readNotice(msg.data);
    },
  });
  const lookupConsumers = (plan: Plan, wanted: Wanted): Lookup => {
    if (!plan.provides.some((p) => p.provision === wanted.name)) return { state: 'failed', reason: `the plan does not provide "${wanted.name}"` };
    if (!caught) return { state: 'waiting' };
    const entries = [];
    // Each consumer's credential in the file is an input: its vault name, no revision (DESIGN §14).
    const from: { kind: string; key: string }[] = [];
    let pending = false;
    for (const c of consumersOf(plans, node, plan.module, wanted.name)) {
      const credential = credentials.get(c.vault);
      if (credential.state === 'pending') pending = true;
      if (credential.state !== 'value') continue;
      entries.push({ consumer: c.consumer, module: c.module, local: c.local, credential: credential.value, value: c.value, provision: c.provision });
      from.push({ kind: 'consumers', key: c.vault });
    }
    return pending ? { state: 'waiting' } : { state: 'value', text: JSON.stringify(entries), from };
  };
  const open = () =>
    watchBucket(
      nc,
      PLANS,
      '>',
      (e) => {
        const key = parseNodeModuleKey(e.key);
        if (!key.ok) return;
        const before = plans.get(e.key);
        let after: Plan | undefined;
        if (e.value !== null) {
          const decoded = decodeJson(PlanSchema, e.value);
          if (decoded.ok && decoded.value.node === key.value.node && decoded.value.module === key.value.module) after = decoded.value;
        }
        if (after) plans.set(e.key, after);
        else plans.delete(e.key);
        const deps = new Set([...touched(before, node), ...touched(after, node)]);
        if (deps.size > 0) onChange([...deps]);
      },
      log,
    );

  return {
    name: 'consumers',
    lookup(plan: Plan, wanted: Wanted): Found {
      return { ...lookupConsumers(plan, wanted), dependency: consumersDependency(plan.module, wanted.name) };
    },
    plansChanged(own) {
      const provides = [...own.values()].some((p) => p.provides.length > 0);
      if (provides && !watch) {
        watch = open();
        void watch.caughtUp.then(() => {
          caught = true;
          onChange([...own.values()].flatMap((p) => p.provides.map((x) => consumersDependency(p.module, x.provision))));
        });
      } else if (!provides && watch) {
        watch.stop();
        watch = undefined;
        caught = false;
        plans.clear();
      }
    },
    stop() {
      watch?.stop();
      changes.unsubscribe();
      credentials.stop();
    },
  };
}
