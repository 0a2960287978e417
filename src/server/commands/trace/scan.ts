// The newest revision of every key of a bucket a pattern matches (DESIGN §14): one filtered,
// headers-only consumer delivering the last entry of each key — revisions, times and operations,
// never a value — read until nothing is pending.
import type { NatsConnection } from '@nats-io/transport-node';
import { DeliverPolicy, jetstream, type JsMsg } from '@nats-io/jetstream';
import type { Newest } from '../why/judge.ts';
import type { KeyPattern } from './pattern.ts';

/** How long the keys' newest entries may take to arrive, past a verb page's own wait (query's DEFAULT_QUERY_TIMEOUT_MS). */
export const SCAN_TIMEOUT_MS = 30_000;

/** The header a KV entry's delete or purge carries (nats.js's `kvOperationHdr`). */
const KV_OPERATION = 'KV-Operation';

/** Reads the newest entry of every key `pattern` matches, by key. */
export async function scanNewest(nc: NatsConnection, { bucket, pattern }: KeyPattern): Promise<Map<string, Newest>> {
  const prefix = `$KV.${bucket}.`;
  const consumer = await jetstream(nc).consumers.getPushConsumer(`KV_${bucket}`, {
    filter_subjects: `${prefix}${pattern}`,
    deliver_policy: DeliverPolicy.LastPerSubject,
    headers_only: true,
  });
  const found = new Map<string, Newest>();
  const pending = (await consumer.info(true)).num_pending;
  if (pending === 0) return (await consumer.delete().catch(() => false), found);
  const messages = await consumer.consume({
    callback: (m: JsMsg) => {
      found.set(m.subject.slice(prefix.length), newestOf(m));
      if (m.info.pending === 0) messages.stop();
    },
  });
  // A bus that stops delivering (a lost server, a stream cut short) must not hold an operator's command for ever.
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      messages.stop();
      reject(new Error(`the newest entries of ${pending} keys did not all arrive within ${SCAN_TIMEOUT_MS} ms (${found.size} did)`));
    }, SCAN_TIMEOUT_MS);
  });
  try {
    await Promise.race([messages.closed(), late]);
  } finally {
    clearTimeout(timer);
  }
  return found;
}

function newestOf(m: JsMsg): Newest {
  const op = m.headers?.get(KV_OPERATION);
  return { rev: m.seq, at: new Date(Math.floor(m.info.timestampNanos / 1e6)).toISOString(), op: op === 'DEL' || op === 'PURGE' ? op : 'PUT' };
}
