// Whether the node asking the vault may have a credential (DESIGN §11): the asker comes from the
// subject its account's import maps the ask to (`mesh-vault.credential.<node>`), never from the
// payload, and the plans say what it may have. Shared by the test stand-in and the reference vault.
import * as v from 'valibot';
import { nodeModuleKey } from '../shared/keys.ts';
import { parseVaultName } from '../shared/vault-names.ts';
import { decodeJson, PlanSchema, type Plan } from '../shared/schemas.ts';
import { VAULT_CREDENTIAL } from '../shared/subjects.ts';

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
 * Says why `asker` may not have the credential `name`, or nothing when it may: a module's own secret
 * only to a node with a plan of that module; a pair credential
 * `pair/<provider>/<provision>/<node>/<module>[/<local>]` only to the node where `<provider>` is
 * planned for that consumer — the consumer's plan (`<node>.<module>`) holds a provision of that
 * provider, provision and local bound on the asker, and the asker has a plan of module `<provider>`
 * that provides `<provision>` (DESIGN §11; a provider is a module name, §2); a name out of its
 * grammar to nobody. `plan` reads a plan by `<node>.<module>` (null when there is none; it throws
 * when the plans cannot be read, which is no answer either way).
 */
export async function askerRefusal(name: string, asker: string, plan: (key: string) => Promise<Plan | null>): Promise<string | undefined> {
  const parsed = parseVaultName(name);
  if (!parsed.ok) return `vault name ${parsed.reason}`;
  const vault = parsed.value;
  if (vault.kind === 'module') return (await plan(nodeModuleKey(asker, vault.module))) ? undefined : `node ${asker} has no plan of module ${vault.module}`;
  const { provider, provision, node, module, local } = vault;
  const consumer = await plan(nodeModuleKey(node, module));
  const binds = consumer?.provisions.some((p) => p.provider === provider && p.provision === provision && p.local === local && p.node === asker);
  if (!binds) return `node ${asker} does not serve ${provider} ${provision} to ${node}.${module}`;
  // The consumer's plan alone names a node its composition chose (by default its own): the provider must be planned there too.
  const served = await plan(nodeModuleKey(asker, provider));
  if (served?.provides.some((p) => p.provision === provision)) return undefined;
  return `${provider} is not planned on node ${asker}: it has no plan of module ${provider} providing ${provision}`;
}

/** Decodes a stored plan for the check; one out of shape counts as none. */
export function planOf(bytes: Uint8Array | null | undefined): Plan | null {
  if (!bytes) return null;
  const decoded = decodeJson(PlanSchema, bytes);
  return decoded.ok ? decoded.value : null;
}
