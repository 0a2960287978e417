// The verb `mesh-provisioner.provisioning` (DESIGN §10): its requests and replies, and a health line.
import * as v from 'valibot';
import { nameField as name, tokenNameField as tokenName, checked, keyProblem } from './fields.ts';

/** What the verb answers: a seat bucket read, or (`health`, `alive`: each node's last word, DESIGN §14) the seat's memory. */
export const VERB_WHATS = ['registry', 'needs', 'applied', 'collect', 'health', 'alive'] as const;
/** A request of `mesh-provisioner.provisioning`. */
export const VerbRequestSchema = v.strictObject({
  what: v.optional(v.picklist(VERB_WHATS, `must be one of ${VERB_WHATS.join(', ')}`), 'registry'),
  node: v.optional(name),
  module: v.optional(name),
  contributor: v.optional(name),
  collection: v.optional(tokenName),
  limit: v.optional(v.pipe(v.number(), v.integer('is not an integer'), v.minValue(1, 'must be at least 1'))),
  after: v.optional(checked(keyProblem)),
});
/** A request of the verb. */
export type VerbRequest = v.InferOutput<typeof VerbRequestSchema>;

/** A reply of the verb. */
export type VerbReply = {
  what: string;
  entries: { key: string; value: unknown }[];
  outOfShape: { key: string; reason: string }[];
  next?: string;
};

/** The max payload assumed when the connection has not said its own (the nats-server default): no reply is larger. */
export const DEFAULT_MAX_PAYLOAD = 1024 * 1024;
/** The `{error}` of a request past the requests the seat answers at once (DESIGN §11): the seat busy, not the request refused. */
export const BUSY = 'busy';
/** How the verb's `{error}` begins when the seat could not read a bucket (the bus, not the request). */
export const SEAT_READ_FAILURE = 'reading ';
/** The levels a reply wraps around a stored value (`{entries: [{value}]}`): a reader allows this much more depth. */
export const REPLY_NESTING = 3;
/** How long the seat's read of a bucket waits for the server: whoever asks the verb waits past it, to hear the seat's answer naming the bucket. */
export const READ_TIMEOUT_MS = 5000;

/** A line on `provisioner_health`. */
export type Health = { module: string; node?: string; build: string; reason: string; passes: number };
/**
 * A node's own health (DESIGN §14): silent, or its engine down. An entry of the verb's `health` keyed
 * `<node>`, and a line on `provisioner_health` when it begins and when it ends (no `module`).
 */
export type NodeHealth = { node: string; reason: string };
