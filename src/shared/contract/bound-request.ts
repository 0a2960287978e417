// What a bound entry answers (DESIGN §3): the consumer's whole provision entry as its plan holds it,
// named by `for` — `sha256:` and the hex sha256 of its canonical JSON. The provider helper writes it
// on each entry it serves or refuses; a node's client and `status` compare it with the plan's
// provision, so a new build is never judged on what the provider served the build before it.
import { createHash } from 'node:crypto';
import { canonicalJson } from './canonical-json.ts';

/** A consumer's provision entry as its plan holds it (DESIGN §4): the provider's node resolved. */
export type ProvisionRequest = {
  provider: string;
  provision: string;
  node: string;
  local?: string | undefined;
  name?: string | undefined;
  values?: Record<string, unknown> | undefined;
};

/** What `for` looks like: `sha256:` and 64 lowercase hex digits. */
export const REQUEST_DIGEST_PATTERN = /^sha256:[0-9a-f]{64}$/;

/** The entry's own fields, those absent left out: a field a newer plan adds is not part of the request. */
export function provisionRequest(p: ProvisionRequest): ProvisionRequest {
  return {
    provider: p.provider,
    provision: p.provision,
    node: p.node,
    ...(p.local !== undefined ? { local: p.local } : {}),
    ...(p.name !== undefined ? { name: p.name } : {}),
    ...(p.values !== undefined ? { values: p.values } : {}),
  };
}

/** The `for` of a bound entry answering the provision entry `p`. */
export function requestDigest(p: ProvisionRequest): string {
  return `sha256:${createHash('sha256')
    .update(canonicalJson(provisionRequest(p)), 'utf8')
    .digest('hex')}`;
}
