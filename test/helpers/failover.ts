// When a cluster that lost a server has failed over, as the fault suites measure it: it takes a write
// again (a put acked) and makes a consumer again (a create answered). A watch's consumer can be made
// again no sooner, however soon writes are taken.
import { AckPolicy, jetstreamManager } from '@nats-io/jetstream';
import { nanos, type NatsConnection } from '@nats-io/transport-node';
import { parsePublishAck } from '../../src/shared/bus/kv-publisher.ts';

/** How long the bus may take to fail over, and each later step: nats-server 2.9's elections took 4–9 s here, and two may run in a row. */
export const FAILOVER_MS = 45_000;

/**
 * Tries `attempt` every 100 ms, each try running on while later ones start, until one succeeds;
 * resolves with when the first did (the tries still running are left to end on their own).
 */
export function firstSuccess(what: string, attempt: () => Promise<boolean>, ms = FAILOVER_MS): Promise<number> {
  return new Promise((resolve, reject) => {
    const until = Date.now() + ms;
    let done = false;
    let last = '';
    const timer = setInterval(() => {
      if (done) return clearInterval(timer);
      if (Date.now() > until) {
        done = true;
        clearInterval(timer);
        return reject(new Error(`${what}: not within ${ms} ms (last: ${last})`));
      }
      attempt().then(
        (ok) => {
          if (!ok || done) return;
          done = true;
          clearInterval(timer);
          resolve(Date.now());
        },
        (err: Error) => void (last = err.message),
      );
    }, 100);
  });
}

/** Puts `bytes` under `key` of `bucket` until the bus acks a put (each try waiting up to 2 s); resolves with when it first did. */
export function putUntilAcked(nc: NatsConnection, bucket: string, key: string, bytes: Uint8Array): Promise<number> {
  return firstSuccess(`a put of ${bucket} ${key} acked`, async () => {
    const ack = parsePublishAck(await nc.request(`$KV.${bucket}.${key}`, bytes, { timeout: 2000 }));
    if (!ack.ok) throw new Error(ack.reason);
    return true;
  });
}

/**
 * Asks the bus for a consumer on `stream` until one is made (each try waiting up to 1 s); resolves
 * with when the first was. A cluster that lost its JetStream meta leader takes writes on streams led
 * elsewhere but makes no consumer until it has a new one.
 */
export async function consumerUntilMade(nc: NatsConnection, stream: string): Promise<number> {
  // Not checked at once: asking whether JetStream is there needs the meta leader this waits for.
  const jsm = await jetstreamManager(nc, { timeout: 1000, checkAPI: false });
  // A pull consumer nobody pulls from: the server deletes it 5 s after it was made.
  return firstSuccess(`a consumer on ${stream}`, async () =>
    Boolean(await jsm.consumers.add(stream, { ack_policy: AckPolicy.None, inactive_threshold: nanos(5000) })),
  );
}
