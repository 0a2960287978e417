// A provision's credential in a consumer's file (DESIGN §7 point 9): the engine fills it from the
// vault, but the file waits for the provider's bound entry and is handed again each time the
// provider marks that it set the credential in its service (`values["credential-set"]`), so a
// consumer is never filled with a credential its provider has not set yet.
import type { Plan } from '../../shared/contract/plan.ts';
import { parseVaultName } from '../../shared/contract/vault-names.ts';
import { boundDependency, credentialSetWanted } from '../sources/bound.ts';
import { bindingName } from '../../module/plan-names.ts';
import type { Found, ValueLookup } from '../sources/source.ts';

/**
 * What the secret `name` of the plan reads on the client's side: for a provision's credential, its
 * provider's mark of having set it (waiting until the provider's entry is there); undefined for a
 * module's own secret, which no provider sets and no value of the client's refills.
 */
export function credentialMark(plan: Plan, name: string, sources: ValueLookup): Found | undefined {
  const vault = plan.secrets.find((s) => s.name === name)?.vault;
  const parsed = vault === undefined ? undefined : parseVaultName(vault);
  if (!parsed?.ok || parsed.value.kind !== 'pair') return undefined;
  const { provider, provision, local } = parsed.value;
  const bound = plan.provisions.find((p) => p.provider === provider && p.provision === provision && p.local === local);
  if (bound) return sources.lookup(plan, credentialSetWanted(bound));
  const binding = bindingName({ provision, ...(local === undefined ? {} : { local }) });
  return {
    state: 'failed',
    reason: `secret "${name}" is the credential of ${provider} ${binding}, which the plan does not require`,
    dependency: boundDependency(plan.module, binding),
  };
}
