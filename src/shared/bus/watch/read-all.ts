// Reading a bucket once, whole: a watch run until it has caught up, then stopped.
import type { NatsConnection } from '@nats-io/transport-node';
import { watchKv } from './watch.ts';

/** How long a command a person runs waits for a bucket read whole. */
export const COMMAND_READ_TIMEOUT_MS = 10_000;

/**
 * Reads every key of a whole bucket (for the seat, which may read it whole), ignoring deletes. With
 * `timeoutMs` (a command a person waits on) a read not caught up by then is given up with an error
 * naming the bucket: a bus that makes no consumer (a cluster without a meta leader for long) leaves
 * the watch waiting, and the command hung with nothing said.
 */
export async function readAll(nc: NatsConnection, bucket: string, filter = '>', opts: { timeoutMs?: number } = {}): Promise<Map<string, Uint8Array>> {
  const all = new Map<string, Uint8Array>();
  const reading = (async () => {
    const watch = await watchKv(nc, bucket, filter, (event) => {
      if (event.value) all.set(event.key, event.value);
      else all.delete(event.key);
    });
    try {
      await watch.caughtUp;
    } finally {
      watch.stop();
    }
    return all;
  })();
  if (opts.timeoutMs === undefined) return reading;
  // The bound covers the watch's making too: while the cluster makes no consumer its first create is
  // never answered (the watch, made then, is left to its keeper and dropped).
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`reading ${bucket}: not read whole within ${opts.timeoutMs} ms; try again`)), opts.timeoutMs);
  });
  try {
    return await Promise.race([reading, late]);
  } finally {
    clearTimeout(timer);
  }
}
