// Renders the multi-account isolation configuration of /work/shared/reference/nats-isolation.example.conf
// (verified on nats-server 2.9.10) for any node names: buckets in account MESH, each node its own
// account importing exactly its subjects. Without `listen` and `jetstream`: test/helpers/nats.ts writes those.

/** One node of the mesh and how its client logs in. */
export type IsolatedNode = {
  /** The node's name (`na`): its client is `provisioner.<node>` with inbox prefix `_INBOX_<node>`. */
  node: string;
  /** The password of `provisioner.<node>`. */
  password: string;
};

/** What the rendered configuration holds beyond the example. */
export type IsolationConfOptions = {
  nodes: IsolatedNode[];
  /** The password of MESH's `admin` user (full permissions: the test's writes and the seat). */
  adminPassword: string;
  /** Extra `service` imports from MESH for a node's account, subjects exactly as written. */
  extraNodeImports?: (node: string) => string[];
};

/** The account a node's client logs in to. */
export function nodeAccount(node: string): string {
  return `NODE_${node.toUpperCase().replace(/-/g, '_')}`;
}

/** The user a node's client logs in as. */
export function nodeUser(node: string): string {
  return `provisioner.${node}`;
}

/** The inbox prefix a node's client must use. */
export function nodeInbox(node: string): string {
  return `_INBOX_${node}`;
}

/**
 * Beyond the example: a node's read of the registry (DESIGN §5: clients read it to learn where a
 * kind's values live), read-only and with a filtered consumer only — no direct get (the client
 * only watches it) and never the unfiltered consumer create. The registry holds nothing per node.
 */
export const REGISTRY_READ_IMPORTS: readonly string[] = [
  '$JS.API.CONSUMER.CREATE.KV_mesh-provisioner_registry.*.$KV.mesh-provisioner_registry.>',
  '$JS.FC.KV_mesh-provisioner_registry.>',
];

/** Quotes a subject: every `$` subject must be quoted or the config parser takes it for a variable. */
const q = (s: string) => JSON.stringify(s);

/** The service imports the example grants a node's account (`nodeA` replaced by the node's name). */
export function exampleNodeImports(node: string): string[] {
  return [
    '$JS.API.INFO',
    `$KV.mesh-provisioner_needs.${node}.>`,
    `$KV.mesh-provisioner_applied.${node}.>`,
    `$KV.mesh-provisioner_collect.${node}.>`,
    '$JS.API.DIRECT.GET.KV_mesh-provisioner_plans',
    '$JS.API.DIRECT.GET.KV_mesh-provisioner_plans.>',
    '$JS.API.CONSUMER.CREATE.KV_mesh-provisioner_plans',
    '$JS.API.CONSUMER.CREATE.KV_mesh-provisioner_plans.>',
    `$JS.API.DIRECT.GET.KV_mesh-config_resolved.$KV.mesh-config_resolved.${node}.>`,
    `$JS.API.CONSUMER.CREATE.KV_mesh-config_resolved.*.$KV.mesh-config_resolved.${node}.>`,
    `$JS.API.DIRECT.GET.KV_mesh-provisioner_collect.$KV.mesh-provisioner_collect.${node}.>`,
    `$JS.API.CONSUMER.CREATE.KV_mesh-provisioner_collect.*.$KV.mesh-provisioner_collect.${node}.>`,
    '$JS.FC.KV_mesh-provisioner_plans.>',
    '$JS.FC.KV_mesh-config_resolved.>',
    '$JS.FC.KV_mesh-provisioner_collect.>',
  ];
}

const SEAT_BUCKETS = ['registry', 'plans', 'needs', 'applied', 'collect'].map((b) => `mesh-provisioner_${b}`);

/** The example's seat user `provisioner` of MESH, kept as the example has it. */
function seatUser(): string {
  const publish = [
    '$JS.API.INFO',
    ...SEAT_BUCKETS.flatMap((b) => [`$JS.API.STREAM.CREATE.KV_${b}`, `$JS.API.STREAM.INFO.KV_${b}`]),
    ...SEAT_BUCKETS.flatMap((b) => [`$JS.API.DIRECT.GET.KV_${b}`, `$JS.API.DIRECT.GET.KV_${b}.>`]),
    ...SEAT_BUCKETS.flatMap((b) => [`$JS.API.CONSUMER.CREATE.KV_${b}`, `$JS.API.CONSUMER.CREATE.KV_${b}.>`]),
    '$KV.mesh-provisioner_registry.>',
    '$KV.mesh-provisioner_plans.>',
  ];
  const subscribe = ['_INBOX_provisioner.>', 'mesh-provisioner.provisioning', 'prov.applied.>', 'prov.changed.>'];
  return `{ user: provisioner, password: prov-secret, permissions: {
          publish: { allow: [ ${publish.map(q).join(', ')} ] }
          subscribe: { allow: [ ${subscribe.map(q).join(', ')} ] }
          allow_responses: true } }`;
}

function nodeBlock(n: IsolatedNode, extra: string[]): string {
  const imports = [...exampleNodeImports(n.node), ...extra].map((s) => `      { service: { account: MESH, subject: ${q(s)} } }`);
  return `  ${nodeAccount(n.node)}: {
    users: [
      { user: ${q(nodeUser(n.node))}, password: ${q(n.password)},
        permissions: { subscribe: { allow: [ ${q(`${nodeInbox(n.node)}.>`)}, ${q(`prov.ask.${n.node}`)} ] } } }
    ]
    exports: [ { stream: ${q(`prov.applied.${n.node}.>`)} }, { stream: ${q(`prov.changed.${n.node}.>`)} } ]
    imports: [
${imports.join('\n')}
      { stream: { account: MESH, subject: ${q(`${nodeInbox(n.node)}.>`)} } }
    ]
  }`;
}

/** The configuration text: MESH (admin, the example's seat user, broad exports) and one account per node. */
export function renderIsolationConf(opts: IsolationConfOptions): string {
  const inboxExports = opts.nodes.map((n) => `{ stream: ${q(`${nodeInbox(n.node)}.>`)}, accounts: [${nodeAccount(n.node)}] }`);
  const meshImports = opts.nodes.flatMap((n) => ['applied', 'changed'].map((s) => `{ stream: { account: ${nodeAccount(n.node)}, subject: ${q(`prov.${s}.${n.node}.>`)} } }`));
  return `accounts {
  MESH: {
    jetstream: enabled
    users: [
      { user: admin, password: ${q(opts.adminPassword)} }
      ${seatUser()}
    ]
    exports: [
      { service: "$JS.API.INFO" }, { service: "$JS.API.DIRECT.GET.>" }, { service: "$JS.API.CONSUMER.CREATE.>" },
      { service: "$JS.FC.>" },
      { service: "$KV.mesh-provisioner_needs.>" }, { service: "$KV.mesh-provisioner_applied.>" }, { service: "$KV.mesh-provisioner_collect.>" },
      ${inboxExports.join(', ')}
    ]
    imports: [
      ${meshImports.join('\n      ')}
    ]
  }

${opts.nodes.map((n) => nodeBlock(n, opts.extraNodeImports?.(n.node) ?? [])).join('\n\n')}
}
`;
}
