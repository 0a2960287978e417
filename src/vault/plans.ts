// The plans as the vault reads them to check an asker (DESIGN §11): by `<node>.<module>` with direct
// get, the vault's grants. A plan that is not there is none; plans that cannot be read (the bus's
// JetStream not answering: a cluster without a meta leader, a stream without a leader) are no answer
// either way: the read throws, and the ask is answered `busy`, to be asked again (serve.ts), never
// refused for want of a plan it could not read (issue 31).
import type { NatsConnection } from '@nats-io/transport-node';
import { openKv } from '../shared/bus/bus.ts';
import { PLANS } from '../shared/contract/buckets.ts';
import { errorText } from '../shared/base/errors.ts';
import { isJetStreamUnavailable, isStreamNotFound } from '../shared/bus/jetstream-errors.ts';
import type { Logger } from '../shared/cli/log.ts';
import type { Plan } from '../shared/contract/plan.ts';
import { planOf } from './asker.ts';

/** The plans could not be read for want of JetStream: the ask is answered busy. */
export class PlansUnreadableError extends Error {
  override name = 'PlansUnreadableError';
}

/**
 * Reads a plan by `<node>.<module>`: null when there is none (or the bucket is not there); throws
 * PlansUnreadableError when the bus's JetStream does not answer, said once at warning until a read
 * succeeds again (said at notice), and any other failure as it is.
 */
export function planReader(nc: NatsConnection, log: Pick<Logger, 'warn' | 'notice'>): (key: string) => Promise<Plan | null> {
  let kv: ReturnType<typeof openKv> | undefined;
  let unreadableSince: number | undefined;
  return async (key) => {
    // Opened on first use and again after a failure: the seat may make the bucket after the vault starts.
    kv ??= openKv(nc, PLANS);
    let bytes: Uint8Array | null;
    try {
      const entry = await (await kv).get(key);
      bytes = entry?.operation === 'PUT' ? entry.value : null;
    } catch (err) {
      kv = undefined;
      if (isStreamNotFound(err)) return null;
      if (!isJetStreamUnavailable(err)) throw err;
      if (unreadableSince === undefined) log.warn(`${PLANS} cannot be read (${errorText(err)}): every ask is answered busy, to be asked again, until it can`);
      unreadableSince ??= Date.now();
      throw new PlansUnreadableError(errorText(err), { cause: err });
    }
    if (unreadableSince !== undefined) log.notice(`${PLANS} can be read again, after ${((Date.now() - unreadableSince) / 1000).toFixed(1)} s`);
    unreadableSince = undefined;
    return planOf(bytes);
  };
}
