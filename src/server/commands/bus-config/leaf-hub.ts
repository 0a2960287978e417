// The hub's side of leaf nodes (`bus-config --leaf-listen`): where sites' leaf servers connect, and
// which account each of their connections is bound to. A site's server opens one leaf connection per
// node, logged in as `leaf.<node>` and bound to that node's account, so a node reaches through its
// site exactly what its account imports on the hub and nothing of another node's.
//
// nats-server 2.9 logs a leaf connection in by user and password only (a remote sends no nkey; a
// credentials file's JWT is checked only in operator mode), and refuses to reload any change of the
// `leafnodes` block ("config reload not supported for LeafNode"). So each node's leaf login is a
// user of the node's own account, which a reload does add, and the `leafnodes` block never changes
// with the nodes: a leaf connection that names no such user lands in an empty account of its own.

/** The JetStream domain the hub names when it takes leaf connections, unless --js-domain says another. */
export const DEFAULT_JS_DOMAIN = 'mesh';

/** The account a leaf connection without a login is bound to: it holds nothing and imports nothing. */
export const LEAF_STRANGERS = 'LEAF_STRANGERS';

/** The lines of that account in the hub's `accounts`. */
export const LEAF_STRANGERS_ACCOUNT = [
  '  # A leaf connection that names no node logs in here: no user, no JetStream, no import, no export.',
  `  ${LEAF_STRANGERS}: {}`,
];

/** What the hub needs to take leaf connections. */
export type HubLeaf = {
  /** `host:port` the hub listens on for leaf connections. */
  listen: string;
  /**
   * The hub's JetStream domain: nats-server keeps `$JS.API.>` and `$KV.>` from crossing a leaf
   * connection, and carries only `$JS.<domain>.API.…`, which it maps back on the hub's side.
   */
  domain: string;
  /** `host:port` sites reach this server's leaf port at, when not its listen address: nats-server sends a site this, and the site reconnects to it. */
  advertise?: string;
  /** The certificate and key files (on the hub's servers) its leaf port serves TLS with; absent: plain TCP, for a tunnel or a lab. */
  tls?: { cert: string; key: string };
  /** The bcrypt hash of each node's leaf password, by node. */
  hashes: ReadonlyMap<string, string>;
};

/** The user a node's leaf connection logs in as: a user of the node's account, with the account's rights and no more, on a leaf connection only. */
export function leafUserLines(node: string, leaf: HubLeaf): string[] {
  const hash = leaf.hashes.get(node);
  if (!hash) throw new Error(`no leaf password hash for node ${node}`);
  return [
    `      # leaf.${node}: the leaf connection of ${node}'s site (bus-config --leaf); only the hash is kept here.`,
    '      # A leaf connection only: the same password on the client port is refused (a client login is an nkey).',
    `      { user: ${q(`leaf.${node}`)}, password: ${q(hash)}, allowed_connection_types: ["LEAFNODE"] }`,
  ];
}

/** The hub's `leafnodes` block: the same for any nodes, so that adding one is a reload. */
export function hubLeafLines(leaf: HubLeaf): string[] {
  const advertise = leaf.advertise
    ? [
        '  # Where sites reach this server (NAT, a load balancer, a tunnel): nats-server tells every site, which reconnects there.',
        `  advertise: ${q(leaf.advertise)}`,
      ]
    : [];
  return [
    "# Sites' leaf servers (`bus-config --leaf SITE`): one connection per node, logged in as leaf.<node>.",
    'leafnodes {',
    `  listen: ${q(leaf.listen)}`,
    ...advertise,
    // Each site's password crosses the WAN in its CONNECT: TLS keeps it, and the traffic, off the wire.
    ...(leaf.tls ? [`  tls { cert_file: ${q(leaf.tls.cert)}, key_file: ${q(leaf.tls.key)} }`] : []),
    `  authorization { account: ${LEAF_STRANGERS} }`,
    '}',
  ];
}

/** Quotes a name or a hash: a `$` unquoted would be read as a config variable. */
function q(text: string): string {
  return JSON.stringify(text);
}
