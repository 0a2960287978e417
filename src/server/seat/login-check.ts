// Whether the bus lets this login be the seat (issue 22): another login's seed (a node's, the
// runner's, the vault's) is refused the seat's inbox, and the seat would wait for its buckets
// forever at notice while systemd waits for a ready that never comes. As the client's own check.
import type { NatsConnection } from '@nats-io/transport-node';
import { isPermissionViolation } from '../../shared/errors.ts';

/** How long the check waits for an answer; an unanswered check is no refusal, and the start goes on. */
export const SEAT_LOGIN_CHECK_TIMEOUT_MS = 5000;

/** The bus refused the seat's first request to this login: a configuration error, said at once. */
export class SeatLoginRefusedError extends Error {
  constructor(
    /** The server's refusal. */
    readonly refusal: Error,
    /** The login as `whichLogin` names it (its key, the seed to give). */
    login: string,
  ) {
    super(`the bus refuses the seat's requests (${refusal.message}) for ${login}`, { cause: refusal });
    this.name = 'SeatLoginRefusedError';
  }
}

/**
 * Asks JetStream's account info, as the seat's every bucket call does (through its inbox), and
 * throws SeatLoginRefusedError when the server refuses it to this login. No JetStream, no answer or
 * any other error is no refusal: the bucket waits say those.
 */
export async function checkSeatLogin(nc: NatsConnection, login: string): Promise<void> {
  try {
    await nc.request('$JS.API.INFO', undefined, { timeout: SEAT_LOGIN_CHECK_TIMEOUT_MS });
  } catch (err) {
    if (isPermissionViolation(err)) throw new SeatLoginRefusedError(err as Error, login);
  }
}
