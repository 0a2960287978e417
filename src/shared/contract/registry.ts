// Which domain answers each placeholder kind (DESIGN §5), compiled in and written by the seat.
import { VAULT_CHANGED, VAULT_CREDENTIAL } from './subjects.ts';

/** Where a client finds the values of a kind kept in a bucket. */
export type BucketEntry = {
  /** The module (domain) that owns the values. */
  owner: string;
  /** The KV bucket holding them. */
  bucket: string;
  /** The key shape inside the bucket. */
  key: string;
  /** The field of the value holding them, when not the whole value. */
  field?: string;
};

/** Where a client (or the engine) asks for the values of a kind served by a verb. */
export type VerbEntry = {
  /** The module (domain) that owns the values. */
  owner: string;
  /** The request/reply subject answering them. */
  verb: string;
  /** The subject saying a value changed, when there is one. */
  changes?: string;
  /** A word for operators. */
  note?: string;
};

/** One registry entry. */
export type RegistryEntry = BucketEntry | VerbEntry;

const COLLECT: BucketEntry = {
  owner: 'mesh-provisioner',
  bucket: 'mesh-provisioner_collect',
  key: '<node>.<collection>.<contributor>',
};

function placement(kind: string): BucketEntry {
  return { owner: 'mesh-provisioner', bucket: 'mesh-provisioner_plans', key: '<node>.<module>', field: `placement.${kind}` };
}

/** The placement kinds, resolved by the seat into paths and carried in a plan's `placement`. */
export const PLACEMENT_KINDS = ['dir', 'access', 'port', 'seat', 'machine'] as const;
/** A placement kind. */
export type PlacementKind = (typeof PLACEMENT_KINDS)[number];

/** The registry as the seat writes it: kind → entry. */
export const REGISTRY: Readonly<Record<string, RegistryEntry>> = {
  config: { owner: 'mesh-config', bucket: 'mesh-config_resolved', key: '<node>.<module>.<key>' },
  secret: { owner: 'mesh-vault', verb: VAULT_CREDENTIAL, note: 'filled by the node-engine, never by the client' },
  consumers: { owner: 'mesh-vault', verb: VAULT_CREDENTIAL, changes: VAULT_CHANGED },
  bound: { owner: '<provider>', bucket: '<provider>_bound', key: '<node>.<module>.<provision>[.<local>]' },
  collected: COLLECT,
  shell: COLLECT,
  environment: COLLECT,
  contribution: COLLECT,
  dir: placement('dir'),
  access: placement('access'),
  port: placement('port'),
  seat: placement('seat'),
  machine: placement('machine'),
};

/** Every kind a client fills (DESIGN §8). */
export const KNOWN_KINDS: readonly string[] = Object.keys(REGISTRY);

/** Whether `kind` is one of the placement kinds. */
export function isPlacementKind(kind: string): kind is PlacementKind {
  return (PLACEMENT_KINDS as readonly string[]).includes(kind);
}
