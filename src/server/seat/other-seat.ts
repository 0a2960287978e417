// Whether another seat already serves this bus (DESIGN is silent; README: "once per mesh"): two
// seats write the same plans, and both would move a rollout. Asked once at start, said, not refused
// (a seat restarted while the old one still drains answers for a moment too).
import type { NatsConnection } from '@nats-io/transport-node';
import { jsonBytes } from '../../shared/base/bytes.ts';
import { PROVISIONING_VERB } from '../../shared/contract/subjects.ts';

/** How long the question waits: a bus with no seat answers "no responders" at once. */
export const OTHER_SEAT_TIMEOUT_MS = 1000;

/** Whether a seat answers the verb's health question on this connection's bus now. */
export async function anotherSeatAnswers(nc: NatsConnection): Promise<boolean> {
  try {
    await nc.request(PROVISIONING_VERB, jsonBytes({ what: 'health' }), { timeout: OTHER_SEAT_TIMEOUT_MS });
    return true;
  } catch {
    return false;
  }
}
