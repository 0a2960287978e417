// JetStream's answers told by its error class and code (errors.ts is the vocabulary; this is apart so
// that what needs only core NATS, the SDK's asks, does not bundle the JetStream client).
import { JetStreamApiCodes, JetStreamApiError } from '@nats-io/jetstream';
import { inChain } from './errors.ts';

/** Whether a JetStream call was answered that its stream does not exist. */
export function isStreamNotFound(err: unknown): boolean {
  return inChain(err, (e) => e instanceof JetStreamApiError && e.code === JetStreamApiCodes.StreamNotFound);
}

/** nats-server's status for a JetStream call made while its cluster, or the group it asks, has no leader. */
const TEMPORARILY_UNAVAILABLE = 503;

/**
 * Whether a JetStream call was answered "JetStream system temporarily unavailable": the meta group or
 * the stream's group is choosing a leader, and the same call asked again is answered once it has one.
 */
export function isChoosingLeader(err: unknown): boolean {
  return inChain(err, (e) => e instanceof JetStreamApiError && e.status === TEMPORARILY_UNAVAILABLE);
}
