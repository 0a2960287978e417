// The logins of a mesh (DESIGN §11): each user's name by role, the account each belongs to, the
// inbox prefix each must use, and the refusal of two logins that would share any of them.
import { INBOX_PREFIXES } from '../../../shared/bus/inbox.ts';

/** Who a mesh's logins are for: its nodes and its providers (names checked by the caller; order and repeats do not matter). */
export type MeshNames = { nodes: readonly string[]; providers: readonly string[] };

/** The account holding the buckets and the mesh's own services. */
export const MESH_ACCOUNT = 'MESH';

/** The server's system account: its events of node accounts are exported to MESH for the seat (DESIGN §14). */
export const SYSTEM_ACCOUNT = '$SYS';

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

/** Every user the shape names, in the order the configuration lists them. */
export function usersOf(shape: MeshNames): string[] {
  return [
    USERS.admin,
    USERS.seat,
    USERS.vault,
    ...sorted(shape.providers).map(USERS.provider),
    ...sorted(shape.nodes).flatMap((n) => [USERS.client(n), USERS.runner(n)]),
  ];
}

/** The inbox prefix each user of the shape must use (admin's grants are whole; it uses its own). */
export function inboxPrefixesOf(shape: MeshNames): Map<string, string> {
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
export function loginCollision(shape: MeshNames): string | undefined {
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

/** The names given, each once, sorted: order and repeats in a mesh's shape do not matter. */
export function sorted(names: readonly string[]): string[] {
  return [...new Set(names)].sort();
}
