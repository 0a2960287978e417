// The bus's floor of the verb's walk (bench/seat-scale.ts): the same bytes the seat reads for it,
// read by a bare client with no decoding — the bucket's keys listed from its stream's subjects,
// then every value by direct get, pipelined in the verb's window on one inbox.
import { createInbox, type NatsConnection } from '@nats-io/transport-node';
import { MAX_IN_FLIGHT } from '../src/server/verb/value-fetch.ts';

/** Direct gets in flight at once, as the verb's page fetch. */
const WINDOW = MAX_IN_FLIGHT;

/** Lists `bucket`'s keys and direct-gets every value; resolves with the keys and the bytes read. */
export async function readBucketBare(nc: NatsConnection, bucket: string): Promise<{ keys: number; bytes: number }> {
  const keys = await listSubjects(nc, bucket);
  const inbox = createInbox();
  let arrived = 0;
  let bytes = 0;
  let wake: (() => void) | undefined;
  const sub = nc.subscribe(`${inbox}.*`, {
    callback: (_err, msg) => {
      arrived++;
      bytes += msg.data.length;
      wake?.();
    },
  });
  try {
    for (let issued = 0; issued < keys.length || arrived < keys.length;) {
      for (; issued < keys.length && issued - arrived < WINDOW; issued++) {
        nc.publish(`$JS.API.DIRECT.GET.KV_${bucket}`, new TextEncoder().encode(JSON.stringify({ last_by_subj: keys[issued] })), {
          reply: `${inbox}.${issued}`,
        });
      }
      if (arrived < keys.length) await new Promise<void>((resolve) => (wake = resolve));
      wake = undefined;
    }
  } finally {
    sub.unsubscribe();
  }
  return { keys: keys.length, bytes };
}

/** Every subject of the bucket's stream, by stream info pages of subjects (as the verb's key index lists them). */
async function listSubjects(nc: NatsConnection, bucket: string): Promise<string[]> {
  const subjects: string[] = [];
  for (;;) {
    const body = new TextEncoder().encode(JSON.stringify({ subjects_filter: `$KV.${bucket}.>`, offset: subjects.length }));
    const info = (await nc.request(`$JS.API.STREAM.INFO.KV_${bucket}`, body, { timeout: 30_000 })).json<{
      total?: number;
      state?: { subjects?: Record<string, number> };
    }>();
    const page = Object.keys(info.state?.subjects ?? {});
    subjects.push(...page);
    if (page.length === 0 || subjects.length >= (info.total ?? 0)) return subjects.sort();
  }
}
