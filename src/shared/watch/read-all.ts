// Reading a bucket once, whole: a watch run until it has caught up, then stopped.
import type { NatsConnection } from '@nats-io/transport-node';
import { watchKv } from './watch.ts';

/** Reads every key of a whole bucket (for the seat, which may read it whole), ignoring deletes. */
export async function readAll(nc: NatsConnection, bucket: string, filter = '>'): Promise<Map<string, Uint8Array>> {
  const all = new Map<string, Uint8Array>();
  const watch = await watchKv(nc, bucket, filter, (event) => {
    if (event.value) all.set(event.key, event.value);
    else all.delete(event.key);
  });
  await watch.caughtUp;
  watch.stop();
  return all;
}
