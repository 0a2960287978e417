// Whether the node asking the vault may have a credential (DESIGN §11): the asker comes from the
// subject its account's import maps the ask to (`mesh-vault.credential.<node>`), never from the
// payload, and the plans say what it may have. Shared by the test stand-in and the reference vault.
import * as v from 'valibot';
import { nodeModuleKey } from '../shared/contract/keys.ts';
import { parseVaultName } from '../shared/contract/vault-names.ts';
import { decodeJson } from '../shared/contract/decode.ts';
import { PlanSchema, type Plan } from '../shared/contract/plan.ts';
import { VAULT_CREDENTIAL } from '../shared/contract/subjects.ts';

/** A credential request: `{name}`, nothing else. */
export const CredentialRequestSchema = v.strictObject({ name: v.pipe(v.string(), v.maxLength(1024, 'is longer than 1,024 characters')) });

/** The most bytes a credential request may hold. */
export const MAX_CREDENTIAL_REQUEST_BYTES = 4096;

/** Decodes a credential request within the limits of DESIGN §3; the reason names what is wrong. */
export function decodeCredentialRequest(data: Uint8Array): { ok: true; name: string } | { ok: false; reason: string } {
  const decoded = decodeJson(CredentialRequestSchema, data, { maxBytes: MAX_CREDENTIAL_REQUEST_BYTES });
  return decoded.ok ? { ok: true, name: decoded.value.name } : decoded;
}

/** The node a request's subject names, `null` for the bare subject (a bus without isolation), undefined for any other. */
export function askerOf(subject: string): string | null | undefined {
  if (subject === VAULT_CREDENTIAL) return null;
  const prefix = `${VAULT_CREDENTIAL}.`;
  if (!subject.startsWith(prefix)) return undefined;
  const node = subject.slice(prefix.length);
  return node.includes('.') || node === '' ? undefined : node;
}

/**
 * Says why `asker` may not have the credential `name`, or nothing when it may. A module's own secret
 * goes only to a node with a plan of that module. A pair credential
 * `pair/<provider>/<provision>/<node>/<module>[/<local>]` goes only where `<provider>` is planned
 * for it (DESIGN §11): the consumer's plan `<node>.<module>` holds a provision of that provider,
 * provision and local, the node that provision names has a plan of module `<provider>` (a provider
 * is a module name, §2) providing `<provision>`, and the asker is one of the pair — the consumer's
 * node (its engine fills the secret) or the provider's (its client fills `${consumers:…}`). A name out
 * of its grammar goes to nobody. `plan` reads a plan by `<node>.<module>` (null when there is none;
 * it throws when the plans cannot be read, which is no answer either way).
 */
export async function askerRefusal(name: string, asker: string, plan: (key: string) => Promise<Plan | null>): Promise<string | undefined> {
  const parsed = parseVaultName(name);
  if (!parsed.ok) return `vault name ${parsed.reason}`;
  const vault = parsed.value;
  if (vault.kind === 'module') return (await plan(nodeModuleKey(asker, vault.module))) ? undefined : `node ${asker} has no plan of module ${vault.module}`;
  const { provider, provision, node, module, local } = vault;
  const consumer = await plan(nodeModuleKey(node, module));
  const bound = consumer?.provisions.find((p) => p.provider === provider && p.provision === provision && p.local === local);
  if (!bound) return `${node}.${module} has no plan binding ${provider} ${provision}${local === undefined ? '' : ` ${local}`}`;
  if (asker !== node && asker !== bound.node)
    return `node ${asker} is neither the consumer (${node}) nor where ${node}.${module} binds ${provider} (${bound.node})`;
  // The consumer's plan alone names a node its composition chose (by default its own): the provider must be planned there.
  const served = await plan(nodeModuleKey(bound.node, provider));
  if (served?.provides.some((p) => p.provision === provision)) return undefined;
  return `${provider} is not planned on node ${bound.node}: it has no plan of module ${provider} providing ${provision}`;
}

/** Decodes a stored plan for the check; one out of shape counts as none. */
export function planOf(bytes: Uint8Array | null | undefined): Plan | null {
  if (!bytes) return null;
  const decoded = decodeJson(PlanSchema, bytes);
  return decoded.ok ? decoded.value : null;
}
