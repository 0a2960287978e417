// One stream loaded from its snapshot by nats-server (`$JS.API.STREAM.RESTORE`): the server is told
// the stream's configuration and state and answers with a subject; each chunk of the data is a
// request there, acknowledged; an empty request ends it, and the server answers with the stream made.
// The stream keeps its messages and their sequence numbers: a KV entry's revision is what it was.
import type { NatsConnection } from '@nats-io/transport-node';
import { apiAnswer, type SnapshotMeta } from './snapshot.ts';

/** How long the server may take to acknowledge a chunk. */
export const RESTORE_CHUNK_MS = 10_000;
/** How long the server may take to make the stream once it has every chunk (it unpacks and checks it). */
export const RESTORE_FINISH_MS = 120_000;

/** What a restored stream holds, as the server says once it made it. */
export type Restored = { messages: number; lastSeq: number; replicas: number };

/**
 * Loads one stream: `meta` as the backup holds it, with `replicas` copies in place of its own when
 * given, and `chunks` its data in order. Rejects with JetStreamRefusal when the server refuses
 * (10130: a stream of that name is there).
 */
export async function restoreStream(nc: NatsConnection, meta: SnapshotMeta, chunks: AsyncIterable<Uint8Array>, replicas?: number): Promise<Restored> {
  const config = replicas === undefined ? meta.config : { ...meta.config, num_replicas: replicas };
  const name = String(config['name']);
  const opened = await nc.request(`$JS.API.STREAM.RESTORE.${name}`, JSON.stringify({ config, state: meta.state }), { timeout: RESTORE_CHUNK_MS });
  const deliver = apiAnswer(opened.data)['deliver_subject'];
  if (typeof deliver !== 'string') throw new Error('nats-server named no subject to send the data to');
  for await (const chunk of chunks) {
    const ack = await nc.request(deliver, chunk, { timeout: RESTORE_CHUNK_MS });
    if (ack.data.length > 0) apiAnswer(ack.data);
  }
  const made = apiAnswer((await nc.request(deliver, new Uint8Array(0), { timeout: RESTORE_FINISH_MS })).data);
  const state = (made['state'] ?? {}) as { messages?: unknown; last_seq?: unknown };
  const madeConfig = (made['config'] ?? {}) as { num_replicas?: unknown };
  return { messages: Number(state.messages ?? 0), lastSeq: Number(state.last_seq ?? 0), replicas: Number(madeConfig.num_replicas ?? 1) };
}
