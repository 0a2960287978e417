// The nats-server configuration of a mesh (DESIGN §11): the buckets in account MESH, each node an
// account of its own importing exactly its subjects. Pure: users are given by their public nkeys,
// so the text holds no secret and the same mesh always renders the same bytes.
import { APPLIED, ASSIGNMENTS, COLLECT, CONFIG, MODULES, NEEDS, PLANS, REGISTRY_BUCKET, ROLLOUTS, SEAT_BUCKETS } from '../../../shared/contract/buckets.ts';
import { INBOX_PREFIXES } from '../../../shared/bus/inbox.ts';
import { boundBucket } from '../../../shared/contract/keys.ts';
import {
  HEALTH_SUBJECT,
  PROVIDER_SERVES,
  PROVISIONING_VERB,
  ROLLOUT_VERB,
  VAULT_CHANGED,
  VAULT_CREDENTIAL,
  vaultCredentialOf,
} from '../../../shared/contract/subjects.ts';

import { hubLeafLines, LEAF_STRANGERS_ACCOUNT, leafUserLines, type HubLeaf } from './leaf-hub.ts';

export { boundBucket, INBOX_PREFIXES };

/** The account holding the buckets and the mesh's own services. */
export const MESH_ACCOUNT = 'MESH';

/** Every user the configuration names, by role; each logs in with the nkey of its name. */
export const USERS = {
  /** Full rights in MESH: the programs writing the inputs (controller, catalogue, mesh-config) and operators. */
  admin: 'admin',
  /** The seat. */
  seat: 'provisioner',
  /** The vault's credential verb and change notices. */
  vault: 'vault',
  /** A provider module writing its `<provider>_bound` bucket. */
  provider: (name: string) => `provider.${name}`,
  /** A node's client. */
  client: (node: string) => `provisioner.${node}`,
  /** A node's tool runner: asks its own node, nothing else. */
  runner: (node: string) => `runner.${node}`,
} as const;

/** The account of a node's client and runner. */
export function nodeAccount(node: string): string {
  return `provisioner.${node}`;
}

/** What a mesh is made of. Names are checked by the caller; order and repeats do not matter. */
export type MeshShape = {
  nodes: readonly string[];
  providers: readonly string[];
  /** The object-store bucket of archives. */
  archives: string;
  /** `host:port` the server listens on. */
  listen: string;
  /** Where JetStream keeps its files. */
  storeDir: string;
  /** The public nkey (`U…`) of each user, by user name (see USERS). */
  publicKeys: ReadonlyMap<string, string>;
  /** Sites' leaf servers connect here (leaf.ts); absent: the hub takes no leaf connection and names no JetStream domain. */
  leaf?: HubLeaf;
};

/** One service a node imports from MESH, with what it is for; `to` is the subject the node uses when it differs. */
type Grant = { subject: string; why: string; to?: string };

/** Every user the shape names, in the order the configuration lists them. */
export function usersOf(shape: Pick<MeshShape, 'nodes' | 'providers'>): string[] {
  return [
    USERS.admin,
    USERS.seat,
    USERS.vault,
    ...sorted(shape.providers).map(USERS.provider),
    ...sorted(shape.nodes).flatMap((n) => [USERS.client(n), USERS.runner(n)]),
  ];
}

/** The inbox prefix each user of the shape must use (admin's grants are whole; it uses its own). */
export function inboxPrefixesOf(shape: Pick<MeshShape, 'nodes' | 'providers'>): Map<string, string> {
  return new Map([
    [USERS.admin, INBOX_PREFIXES.admin],
    [USERS.seat, INBOX_PREFIXES.seat],
    [USERS.vault, INBOX_PREFIXES.vault],
    ...sorted(shape.providers).map((p) => [USERS.provider(p), INBOX_PREFIXES.provider(p)] as const),
    ...sorted(shape.nodes).flatMap(
      (n) =>
        [
          [USERS.client(n), INBOX_PREFIXES.node(n)],
          [USERS.runner(n), INBOX_PREFIXES.runner(n)],
        ] as const,
    ),
  ]);
}

/**
 * Says two logins of the shape that would share a user name (and so a seed file), an inbox prefix
 * or an account, naming both; nothing when every login is its own. The roles' qualified prefixes
 * make a clash impossible for valid names: this refuses one should a name ever slip through.
 */
export function loginCollision(shape: Pick<MeshShape, 'nodes' | 'providers'>): string | undefined {
  const claims: [what: string, value: string, who: string][] = [['account', MESH_ACCOUNT, 'the mesh']];
  for (const [user, prefix] of inboxPrefixesOf(shape)) claims.push(['user name', user, `login ${user}`], ['inbox prefix', prefix, `login ${user}`]);
  for (const n of sorted(shape.nodes)) claims.push(['account', nodeAccount(n), `node ${n}`]);
  const owners = new Map<string, string>();
  for (const [what, value, who] of claims) {
    const key = `${what}\0${value.toLowerCase()}`;
    const had = owners.get(key);
    if (had !== undefined && had !== who) return `${had} and ${who} would share the ${what} ${JSON.stringify(value)}`;
    owners.set(key, who);
  }
  return undefined;
}

/** The configuration text; the same shape renders the same bytes. */
export function renderBusConfig(shape: MeshShape): string {
  const nodes = sorted(shape.nodes);
  const providers = sorted(shape.providers);
  const key = (user: string): string => {
    const k = shape.publicKeys.get(user);
    if (!k) throw new Error(`no public key for user ${user}`);
    return k;
  };
  const lines = [
    '# nats-server configuration of a mesh-provisioner mesh, generated by `node server.js bus-config`.',
    '# Re-run it to add a node or a provider; the same input gives the same bytes. Users log in with the',
    '# nkey seed of their name (kept, mode 0600, in the credentials directory), never a password.',
    '# Only admin creates, updates, deletes or purges a stream: run `node server.js init` with its seed.',
    `listen: ${q(shape.listen)}`,
    `jetstream { store_dir: ${q(shape.storeDir)}${shape.leaf ? `, domain: ${q(shape.leaf.domain)}` : ''} }`,
    '',
    'accounts {',
    ...meshAccount(nodes, providers, shape.archives, key),
    ...nodes.flatMap((n) => ['', ...nodeAccountBlock(n, providers, shape.archives, key, shape.leaf)]),
    ...(shape.leaf ? ['', ...LEAF_STRANGERS_ACCOUNT] : []),
    '}',
    '',
    ...(shape.leaf ? [...hubLeafLines(shape.leaf), ''] : []),
  ];
  return lines.join('\n');
}

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

function meshAccount(nodes: string[], providers: string[], archives: string, key: (u: string) => string): string[] {
  const user = (name: string, body: string) => [`      # ${name}`, `      { nkey: ${q(key(name))}${body} }`];
  // One subject a line, so adding a node or a grant is a diff of whole lines.
  const list = (subjects: string[]) => `[\n${subjects.map((x) => `            ${q(x)}`).join('\n')}\n          ]`;
  const perms = (pub: string[], sub: string[], responses: boolean) =>
    `, permissions: {\n          publish: { allow: ${list(pub)} }\n          subscribe: { allow: ${list(sub)} }${responses ? '\n          allow_responses: true' : ''} }`;
  const providerUsers = providers.flatMap((p) => user(USERS.provider(p), perms(providerPublish(p), providerSubscribe(p), true)));
  const toNode = (n: string) => `{ stream: ${q(`${INBOX_PREFIXES.node(n)}.>`)}, accounts: [${q(nodeAccount(n))}] }`;
  const vaultOf = (n: string) => `{ service: ${q(vaultCredentialOf(n))}, accounts: [${q(nodeAccount(n))}] }`;
  const nodeNames = nodes.map((n) => q(nodeAccount(n))).join(', ');
  const exports = [
    '{ service: "$JS.API.INFO" }',
    '{ service: "$JS.API.DIRECT.GET.>" }',
    '{ service: "$JS.API.CONSUMER.CREATE.>" }',
    '{ service: "$JS.FC.>" }',
    `{ service: ${q(`$JS.API.STREAM.INFO.KV_${PLANS}`)} }`,
    `{ service: ${q(`$JS.API.STREAM.INFO.KV_${REGISTRY_BUCKET}`)} }`,
    `{ service: ${q(`$JS.API.STREAM.INFO.OBJ_${archives}`)} }`,
    ...[NEEDS, APPLIED, COLLECT].map((b) => `{ service: ${q(`$KV.${b}.>`)} }`),
    `{ stream: ${q(VAULT_CHANGED)} }`,
    ...nodes.map(vaultOf),
    ...nodes.map(toNode),
  ];
  const imports = nodes.flatMap((n) => ['applied', 'changed'].map((s) => `{ stream: { account: ${q(nodeAccount(n))}, subject: ${q(`prov.${s}.${n}.>`)} } }`));
  return [
    `  ${MESH_ACCOUNT}: {`,
    '    jetstream: enabled',
    '    users: [',
    ...user(USERS.admin, ''),
    ...user(USERS.seat, perms(seatPublish(archives), [`${INBOX_PREFIXES.seat}.>`, PROVISIONING_VERB, ROLLOUT_VERB], true)),
    ...user(USERS.vault, perms(vaultPublish(), vaultSubscribe(), true)),
    ...providerUsers,
    '    ]',
    `    # Broad on purpose: what a node gets is decided by its own imports${nodes.length > 0 ? ` (${nodeNames})` : ''}.`,
    '    exports: [',
    ...exports.map((e) => `      ${e}`),
    '    ]',
    '    imports: [',
    ...imports.map((i) => `      ${i}`),
    '    ]',
    '  }',
  ];
}

/** The lines of a node account's `users` list: its client and its runner, each with what it may do; the hub and a site's leaf server name the same. */
export function nodeUserLines(node: string, key: (user: string) => string): string[] {
  const client = USERS.client(node);
  const runner = USERS.runner(node);
  const subs = (list: string[]) => `subscribe: { allow: [ ${list.map(q).join(', ')} ] }`;
  return [
    `      # ${client}: its inbox prefix must be ${INBOX_PREFIXES.node(node)}`,
    `      { nkey: ${q(key(client))}, permissions: { ${subs([`${INBOX_PREFIXES.node(node)}.>`, `prov.ask.${node}`, VAULT_CHANGED])} } }`,
    `      # ${runner}: asks its own node only; its inbox prefix must be ${INBOX_PREFIXES.runner(node)}`,
    `      { nkey: ${q(key(runner))}, permissions: { publish: { allow: [ ${q(`prov.ask.${node}`)} ] }, ${subs([`${INBOX_PREFIXES.runner(node)}.>`, `prov.changed.${node}.>`])} } }`,
  ];
}

function nodeAccountBlock(node: string, providers: string[], archives: string, key: (u: string) => string, leaf: HubLeaf | undefined): string[] {
  const service = (g: Grant) => `      { service: { account: ${MESH_ACCOUNT}, subject: ${q(g.subject)} }${g.to ? `, to: ${q(g.to)}` : ''} }  # ${g.why}`;
  return [
    `  ${q(nodeAccount(node))}: {`,
    '    users: [',
    ...nodeUserLines(node, key),
    ...(leaf ? leafUserLines(node, leaf) : []),
    '    ]',
    `    exports: [ { stream: ${q(`prov.applied.${node}.>`)} }, { stream: ${q(`prov.changed.${node}.>`)} } ]`,
    '    imports: [',
    ...nodeImports(node, providers, archives).map(service),
    `      { stream: { account: ${MESH_ACCOUNT}, subject: ${q(`${INBOX_PREFIXES.node(node)}.>`)} } }  # deliveries and replies to its inbox`,
    `      { stream: { account: ${MESH_ACCOUNT}, subject: ${q(VAULT_CHANGED)} } }  # the vault's change notices`,
    '    ]',
    '  }',
  ];
}

/** Quotes a subject or name: a `$` subject unquoted would be read as a config variable. */
export function q(text: string): string {
  return JSON.stringify(text);
}

export function sorted(names: readonly string[]): string[] {
  return [...new Set(names)].sort();
}
