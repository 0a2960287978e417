// The hub's side of leaf nodes (`bus-config --leaf-listen`): where sites' leaf servers connect, and
// which account each of their connections is bound to. A site's server opens one leaf connection per
// node, logged in as `leaf.<node>` and bound to that node's account, so a node reaches through its
// site exactly what its account imports on the hub and nothing of another node's.

/** The JetStream domain the hub names when it takes leaf connections, unless --js-domain says another. */
export const DEFAULT_JS_DOMAIN = 'mesh';

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
  /** The bcrypt hash of each node's leaf password, by node. */
  hashes: ReadonlyMap<string, string>;
};

/** The hub's `leafnodes` block: its listen address and one login per node, bound to the node's account. */
export function hubLeafLines(nodes: readonly string[], leaf: HubLeaf): string[] {
  const user = (n: string) => {
    const hash = leaf.hashes.get(n);
    if (!hash) throw new Error(`no leaf password hash for node ${n}`);
    return `      { user: ${q(`leaf.${n}`)}, password: ${q(hash)}, account: ${q(`provisioner.${n}`)} }`;
  };
  return [
    "# Sites' leaf servers (`bus-config --leaf SITE`): one connection per node, bound to the node's account.",
    '# nats-server 2.9 logs a leaf connection in by user and password only; only the hashes are kept here.',
    'leafnodes {',
    `  listen: ${q(leaf.listen)}`,
    ...(leaf.advertise
      ? [
          '  # The address sites reach this server at (behind NAT, a load balancer, a tunnel): nats-server tells it to every',
          `  # site, which then reconnects there, not to the listen address. `,
          `  advertise: ${q(leaf.advertise)}`,
        ]
      : []),
    '  authorization {',
    '    users: [',
    ...nodes.map(user),
    '    ]',
    '  }',
    '}',
  ];
}

/** Quotes a name or a hash: a `$` unquoted would be read as a config variable. */
function q(text: string): string {
  return JSON.stringify(text);
}
