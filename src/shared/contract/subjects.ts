// Every subject of DESIGN §3 and its builders, in one place: nothing else in src/ joins subjects.

/** The seat's read-only verb. */
export const PROVISIONING_VERB = 'mesh-provisioner.provisioning';
/** The seat's rollout requests (DESIGN §12): `{op: "resume"|"abort", module}` → `{ok, reason?}`, from the admin login only. */
export const ROLLOUT_VERB = 'mesh-provisioner.rollout';
/** Where the seat says held and failed modules. */
export const HEALTH_SUBJECT = 'provisioner_health';
/** The vault's credential verb. */
export const VAULT_CREDENTIAL = 'mesh-vault.credential';
/** Where the vault says a credential changed. */
export const VAULT_CHANGED = 'mesh-vault.changed';

/** Subject of a module's report. */
export function appliedSubject(node: string, module: string): string {
  return `prov.applied.${node}.${module}`;
}

/** Subject a node's client answers runtime asks on. */
export function askSubject(node: string): string {
  return `prov.ask.${node}`;
}

/** Subject a node's client says a changed value on. */
export function changedSubject(node: string, module: string): string {
  return `prov.changed.${node}.${module}`;
}

/** The subject a node's ask of VAULT_CREDENTIAL reaches the vault on, through its account's import (DESIGN §11). */
export function vaultCredentialOf(node: string): string {
  return `${VAULT_CREDENTIAL}.${node}`;
}

/** Where the providers of one name say they serve (`mesh-provider.<provider>.>`): one provider a provision at once (issue 31 item 19). */
export const PROVIDER_SERVES = 'mesh-provider';

/** The subject the provider helper serving `provision` of `provider` answers on, so that a second one started knows and stops. */
export function providerServesSubject(provider: string, provision: string): string {
  return `${PROVIDER_SERVES}.${provider}.${provision}`;
}

/** Where the seat hears every client's alive message (DESIGN §14). */
export const ALIVE_ALL = 'prov.alive.*';

/** Subject a node's client says it is alive on (DESIGN §3, §14). */
export function aliveSubject(node: string): string {
  return `prov.alive.${node}`;
}
