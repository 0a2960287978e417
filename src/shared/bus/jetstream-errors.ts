// JetStream's answers told by its error class and code (errors.ts is the vocabulary; this is apart so
// that what needs only core NATS, the SDK's asks, does not bundle the JetStream client).
import { JetStreamApiCodes, JetStreamApiError } from '@nats-io/jetstream';
import { inChain, isNoResponders, isTimeout } from '../base/errors.ts';

/** Whether a JetStream call was answered that its stream does not exist. */
export function isStreamNotFound(err: unknown): boolean {
  return inChain(err, (e) => e instanceof JetStreamApiError && e.code === JetStreamApiCodes.StreamNotFound);
}

/** nats-server's code for "JetStream system temporarily unavailable" (503): a cluster electing its meta leader, or left without one. */
export const JETSTREAM_UNAVAILABLE_CODE = 10008;

/**
 * Whether JetStream did not serve a call for now, which a daemon waits out and never exits for: a
 * 503 "temporarily unavailable", a call left unanswered (a cluster without a meta leader answers
 * some not at all), or no responders (a stream without a leader takes no write; a server whose
 * JetStream is still starting answers no API call).
 */
export function isJetStreamUnavailable(err: unknown): boolean {
  return isTimeout(err) || isNoResponders(err) || isTemporarilyUnavailable(err);
}

/** Whether a JetStream call was answered "JetStream system temporarily unavailable" (JETSTREAM_UNAVAILABLE_CODE). */
export function isTemporarilyUnavailable(err: unknown): boolean {
  return inChain(err, (e) => e instanceof JetStreamApiError && e.code === JETSTREAM_UNAVAILABLE_CODE);
}
