// Vault names (DESIGN §4, §9): built only from names of two grammars, and parsed back segment by
// segment, so whoever holds one can tell whose secret it names and that it leaves no directory.
import { checkName, checkSegment } from './keys.ts';
import { fail, type Parsed } from '../base/result.ts';

/** The vault name of a module's own secret. */
export function moduleSecretVault(module: string, name: string): string {
  return `module/${module}/${name}`;
}

/** The vault name of a provision's credential. */
export function pairVault(p: { provider: string; provision: string; node: string; module: string; local?: string }): string {
  const base = `pair/${p.provider}/${p.provision}/${p.node}/${p.module}`;
  return p.local === undefined ? base : `${base}/${p.local}`;
}

/** A vault name (DESIGN §4): a module's own secret, or a provision's credential for a consumer. */
export type VaultName =
  { kind: 'module'; module: string; name: string } | { kind: 'pair'; provider: string; provision: string; node: string; module: string; local?: string };

/** Longest vault name read, in characters: a pair name of the grammars is at most 455. */
const MAX_VAULT_NAME_CHARS = 1024;

/**
 * Parses a vault name, every segment in its grammar (so none is empty, `.` or `..`); the reason
 * says which segment is not. Never reads past MAX_VAULT_NAME_CHARS.
 */
export function parseVaultName(vault: string): Parsed<VaultName> {
  if (vault.length > MAX_VAULT_NAME_CHARS) return fail(`is ${vault.length} characters, past the limit of ${MAX_VAULT_NAME_CHARS}`);
  const segments = vault.split('/');
  const odd = segments.find((segment) => segment === '' || segment === '.' || segment === '..');
  if (odd !== undefined) return fail(odd === '' ? 'has an empty segment' : `has a "${odd}" segment`);
  const [kind, ...rest] = segments;
  if (kind === 'module' && rest.length === 2) {
    const [module, name] = rest as [string, string];
    const bad = checkName('module', module) ?? checkSegment('name', name);
    return bad ? fail(bad) : { ok: true, value: { kind, module, name } };
  }
  if (kind === 'pair' && (rest.length === 4 || rest.length === 5)) {
    const [provider, provision, node, module, local] = rest as [string, string, string, string, string?];
    const bad =
      checkName('provider', provider) ??
      checkSegment('provision', provision) ??
      checkName('node', node) ??
      checkName('module', module) ??
      (local === undefined ? undefined : checkSegment('local', local));
    if (bad) return fail(bad);
    return { ok: true, value: { kind, provider, provision, node, module, ...(local === undefined ? {} : { local }) } };
  }
  return fail('is neither module/<module>/<name> nor pair/<provider>/<provision>/<node>/<module>[/<local>]');
}

/** Whose a vault name must be: a module's, and, for a plan, its node and the secret's own name. */
export type VaultOwner = { module: string; node?: string; name?: string };

/**
 * Says why a vault name does not belong to `owner` (DESIGN §4, §9): out of shape, or another
 * module's (or, for a pair, another node's) secret; a module's own secret must also be the one of
 * the name asked, when `owner.name` is given. Nothing when it belongs.
 */
export function vaultOwnerProblem(vault: string, owner: VaultOwner): string | undefined {
  const parsed = parseVaultName(vault);
  if (!parsed.ok) return parsed.reason;
  const v = parsed.value;
  if (v.module !== owner.module) return `belongs to module ${v.module}, not ${owner.module}`;
  if (v.kind === 'pair' && owner.node !== undefined && v.node !== owner.node) return `belongs to node ${v.node}, not ${owner.node}`;
  if (v.kind === 'module' && owner.name !== undefined && v.name !== owner.name)
    return `is not the secret ${owner.name}'s own (${moduleSecretVault(owner.module, owner.name)})`;
  return undefined;
}
