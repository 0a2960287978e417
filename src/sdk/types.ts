// The contract between the node client, a provider module and its adapter (DESIGN §1, §7 points
// 8–9): what the consumers file holds, what an adapter is handed and returns, what is published in
// `<provider>_bound`.
import type { ProvisionRequest } from '../shared/contract/bound-request.ts';

/**
 * One entry of a provider's consumers file (`${consumers:<provision>}`, DESIGN §7 point 8): a
 * consumer module bound to this provider's provision. The file is a JSON list of these, in the
 * order of the plans' keys and, within a plan, of its `provisions`.
 */
export type ConsumerEntry = {
  /** The consumer's node. */
  consumer: string;
  /** The consumer's module. */
  module: string;
  /** The consumer's local name for the binding, when it has several of one provision (or null). */
  local: string | null;
  /** The credential the vault minted for this consumer: the provider sets it, never invents one. */
  credential: string;
  /** The consumer's values served to the provider (its provision's `values`, e.g. `{name: "web"}`). */
  value: Record<string, unknown>;
  /**
   * The consumer's whole provision entry as its plan holds it (`{provider, provision, node, local?,
   * name?, values?}`, DESIGN §4): the request the bound entry answers, named in it as `for` (DESIGN
   * §3). Absent in a file an older client filled: the entry is then published without `for`.
   */
  provision?: ProvisionRequest;
};

/** What an adapter is handed to serve one consumer. */
export type Grant = {
  /** The login the helper derived for the consumer: stable, unique per consumer, safe as an identifier. */
  as: string;
  /** The credential to set for that login. */
  credential: string;
  /** The consumer's values. */
  values: Record<string, unknown>;
  /** Who the consumer is (for names and logs; never log the credential). */
  consumer: { node: string; module: string; local: string | null };
};

/** What an adapter served: the user to connect as and the values the consumer reads with `${bound:…}`. */
export type Served = {
  /** The user the consumer connects as (often `as` itself). */
  user: string;
  /** Connection values: host, port, database… (strings or numbers; never the credential). */
  values: Record<string, string | number>;
};

/**
 * A value of `<provider>_bound` (DESIGN §3): what was served, or why the consumer was refused, each
 * with `for`, the request it answers (`sha256:` and the hex sha256 of the provision entry's canonical
 * JSON), when the consumers file gave the entry.
 */
export type BoundValue = ({ as: string; user: string; values: Record<string, string | number> } | { refused: string }) & { for?: string };

/**
 * The per-service half a provider module writes; the helper does the rest. Every call is handed an
 * AbortSignal, aborted when the helper gives up on the call (its timeout, `callTimeoutMs`) or stops:
 * an adapter should then end what the call started on its service (cancel the query, end the
 * connection) and settle soon. Until a call settles, no other call is made for the same consumer.
 */
export type Adapter = {
  /**
   * Brings the consumer's resource into being under `grant.as` with `grant.credential`, or updates
   * it (a rotated credential, changed values). Throws Refused with a reason to refuse; any other
   * error is a failure tried again later. `signal`: aborted when the helper gives up on this call.
   */
  create(grant: Grant, signal: AbortSignal): Promise<Served>;
  /**
   * Withdraws what was served to the login `as` (the consumer is gone). Also called for a login
   * that may not exist or that the adapter did not make (a refused consumer, a create that failed
   * half-way): then it does nothing. `signal`: aborted when the helper gives up on this call.
   */
  remove(as: string, signal: AbortSignal): Promise<void>;
  /**
   * Checks that what was served is still so (a grant is not a check): true when it is, false when
   * it drifted and `create` must run again. Optional; without it nothing is re-checked, and after a
   * restart every consumer is created again. After a restart the helper knows what it published but
   * not which credential it set, so a check should also say whether `grant.credential` is the one
   * in force (e.g. by logging in with it); one that cannot tell leaves a rotation made while the
   * helper was down unapplied until the credential changes again. `signal`: aborted when the helper
   * gives up on this call.
   */
  check?(grant: Grant, served: Served, signal: AbortSignal): Promise<boolean>;
};

/**
 * Thrown by an adapter to refuse a consumer: the reason is published as `{refused}` and fails the
 * consumer. A reason holding the consumer's credential in any form is not published (DESIGN §3).
 */
export class Refused extends Error {
  override name = 'Refused';
}

/**
 * Thrown by an adapter when its service cannot be reached (refused, timed out, not taking
 * connections), its message naming the address: the helper says the outage once at warning, each
 * retry at debug, and its end at notice, where any other failure is said at error on every try.
 */
export class Unavailable extends Error {
  override name = 'Unavailable';
}
