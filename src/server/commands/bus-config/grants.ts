// What each login of a mesh may publish and subscribe (DESIGN §11): a node's imports from MESH,
// the seat's, a provider's and the vault's grants, each exactly what that program does.
import { APPLIED, ASSIGNMENTS, COLLECT, CONFIG, MODULES, NEEDS, PLANS, REGISTRY_BUCKET, ROLLOUTS, SEAT_BUCKETS } from '../../../shared/contract/buckets.ts';
import { INBOX_PREFIXES } from '../../../shared/bus/inbox.ts';
import { boundBucket } from '../../../shared/contract/keys.ts';
import { HEALTH_SUBJECT, PROVIDER_SERVES, PROVISIONING_VERB, VAULT_CHANGED, VAULT_CREDENTIAL, vaultCredentialOf } from '../../../shared/contract/subjects.ts';

/** One service a node imports from MESH, with what it is for; `to` is the subject the node uses when it differs. */
export type Grant = { subject: string; why: string; to?: string };

/** The services a node's account imports from MESH, each said once, in a fixed order. */
export function nodeImports(node: string, providers: readonly string[], archives: string): Grant[] {
  const own = (bucket: string) => `$KV.${bucket}.${node}.>`;
  const readOwn = (bucket: string, what: string): Grant[] => [
    { subject: `$JS.API.DIRECT.GET.KV_${bucket}.${own(bucket)}`, why: `read its own keys of ${what}` },
    { subject: `$JS.API.CONSUMER.CREATE.KV_${bucket}.*.${own(bucket)}`, why: `watch its own keys of ${what} (filtered consumers only)` },
    { subject: `$JS.FC.KV_${bucket}.>`, why: `flow control of those watches` },
  ];
  // Only of the buckets a node reads whole: a shared bucket's stream info lists every node's keys.
  const check = (stream: string, what: string): Grant => ({ subject: `$JS.API.STREAM.INFO.${stream}`, why: `check that ${what} holds only its own subject` });
  return [
    { subject: '$JS.API.INFO', why: 'JetStream is there' },
    ...[NEEDS, APPLIED, COLLECT].map((b) => ({ subject: own(b), why: `write its own keys of ${b}` })),
    check(`KV_${PLANS}`, PLANS),
    { subject: `$JS.API.DIRECT.GET.KV_${PLANS}`, why: 'read every plan (plans hold no secret)' },
    { subject: `$JS.API.DIRECT.GET.KV_${PLANS}.>`, why: 'read every plan' },
    { subject: `$JS.API.CONSUMER.CREATE.KV_${PLANS}`, why: 'watch every plan' },
    { subject: `$JS.API.CONSUMER.CREATE.KV_${PLANS}.>`, why: 'watch every plan' },
    { subject: `$JS.FC.KV_${PLANS}.>`, why: 'flow control of the plan watches' },
    check(`KV_${REGISTRY_BUCKET}`, 'the registry'),
    { subject: `$JS.API.CONSUMER.CREATE.KV_${REGISTRY_BUCKET}.*.$KV.${REGISTRY_BUCKET}.>`, why: 'watch the registry (filtered consumer)' },
    { subject: `$JS.FC.KV_${REGISTRY_BUCKET}.>`, why: 'flow control of the registry watch' },
    ...readOwn(CONFIG, 'mesh-config_resolved'),
    ...readOwn(COLLECT, COLLECT),
    ...readOwn(NEEDS, `${NEEDS} (stale needs deleted after a restart)`),
    {
      subject: `$JS.API.DIRECT.GET.KV_${APPLIED}.${own(APPLIED)}`,
      why: `read its own reports by key (a start without its record of written keys: whether the node is new)`,
    },
    ...providers.flatMap((p) => readOwn(boundBucket(p), boundBucket(p))),
    check(`OBJ_${archives}`, 'the archives store'),
    { subject: `$JS.API.DIRECT.GET.OBJ_${archives}`, why: 'fetch archives by direct get (archives are not per node)' },
    { subject: `$JS.API.DIRECT.GET.OBJ_${archives}.>`, why: 'fetch archives by direct get' },
    {
      subject: vaultCredentialOf(node),
      to: VAULT_CREDENTIAL,
      why: `ask the vault for its consumers' credentials: asked on ${VAULT_CREDENTIAL}, it reaches the vault as ${vaultCredentialOf(node)}`,
    },
  ];
}

/** What the seat's user may publish: exactly what it does (DESIGN §11), never an admin; it creates no stream. */
export function seatPublish(archives: string): string[] {
  // Its watches: filtered consumers only, and the delete nats.js's ordered consumer sends for the one
  // it replaces on each reset (refused, that one lingers until its 5-minute inactive threshold).
  const watch = (b: string) => [`$JS.API.CONSUMER.CREATE.KV_${b}.*.$KV.${b}.>`, `$JS.API.CONSUMER.DELETE.KV_${b}.*`];
  const own = SEAT_BUCKETS.flatMap((b) => [`$JS.API.STREAM.INFO.KV_${b}`, `$JS.API.DIRECT.GET.KV_${b}`, `$JS.API.DIRECT.GET.KV_${b}.>`, ...watch(b)]);
  const inputs = [ASSIGNMENTS, MODULES].flatMap((b) => [`$JS.API.STREAM.INFO.KV_${b}`, ...watch(b)]);
  return [
    '$JS.API.INFO',
    ...own,
    ...inputs,
    `$JS.API.STREAM.INFO.OBJ_${archives}`,
    ...[REGISTRY_BUCKET, PLANS, ROLLOUTS].map((b) => `$KV.${b}.>`),
    HEALTH_SUBJECT,
    // `query` runs with the seat's login (its inbox prefix too): it asks the verb the seat serves.
    PROVISIONING_VERB,
  ];
}

/**
 * What a provider's user may publish: its bound bucket's entries, reads and watches (no stream
 * rights), and its asks of who else serves its provisions (`mesh-provider.<provider>.>`).
 */
export function providerPublish(provider: string): string[] {
  const b = boundBucket(provider);
  return [
    '$JS.API.INFO',
    `$JS.API.STREAM.INFO.KV_${b}`,
    `$JS.API.DIRECT.GET.KV_${b}`,
    `$JS.API.DIRECT.GET.KV_${b}.>`,
    `$JS.API.CONSUMER.CREATE.KV_${b}.*.$KV.${b}.>`,
    `$JS.API.CONSUMER.DELETE.KV_${b}.*`,
    `$KV.${b}.>`,
    providerServes(provider),
  ];
}

/** What a provider's user may subscribe: its inboxes, and the subject its helpers say they serve on, so that a second one stops (src/sdk/sole-provider.ts). */
export function providerSubscribe(provider: string): string[] {
  return [`${INBOX_PREFIXES.provider(provider)}.>`, providerServes(provider)];
}

/** Every provision's subject of `provider`'s helpers (`mesh-provider.<provider>.>`). */
function providerServes(provider: string): string {
  return `${PROVIDER_SERVES}.${provider}.>`;
}

/** What the vault's user may publish: its change notices, and plan reads to learn whether the asking node may have a credential. */
export function vaultPublish(): string[] {
  return [VAULT_CHANGED, '$JS.API.INFO', `$JS.API.DIRECT.GET.KV_${PLANS}`, `$JS.API.DIRECT.GET.KV_${PLANS}.>`];
}

/**
 * What the vault's user may subscribe: its inboxes, each node's asks (`mesh-vault.credential.<node>`),
 * and the bare subject, which only an admin of MESH can publish, so that such an ask is refused
 * with its reason rather than left without a responder.
 */
export function vaultSubscribe(): string[] {
  return [`${INBOX_PREFIXES.vault}.>`, `${VAULT_CREDENTIAL}.*`, VAULT_CREDENTIAL];
}
