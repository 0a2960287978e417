// The JetStream requests the verb reads a bucket with (DESIGN §6), and what their answers mean: a
// stream info and a direct get, each bounded by READ_TIMEOUT_MS, a failure thrown as BucketReadError.
import { Empty, type Msg, type NatsConnection } from '@nats-io/transport-node';
import { jsonBytes } from '../../shared/base/bytes.ts';
import { READ_TIMEOUT_MS } from '../../shared/contract/verb.ts';

/** A read of a bucket that failed on the bus (the stream missing, no answer); the page is refused. */
export class BucketReadError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'BucketReadError';
  }
}

/** The subject of a direct get on a bucket's stream. */
export function directGetSubject(bucket: string): string {
  return `$JS.API.DIRECT.GET.KV_${bucket}`;
}

/** What a bucket's stream subjects start with, before the key. */
export function keyPrefix(bucket: string): string {
  return `$KV.${bucket}.`;
}

/** A stream info answer, as far as the verb reads it. */
export type StreamInfoReply = {
  /** Set when the server refused the request. */
  error?: { code?: number; description?: string };
  /** When the stream was made: a stream made again starts its sequences anew. */
  created?: string;
  /** Subjects matching the filter in all, when the request named one. */
  total?: number;
  /** The stream's last sequence, and one page of matching subjects when the request named a filter. */
  state?: { last_seq?: number; subjects?: Record<string, number> };
};

/** The stream info of a bucket, with `request` (a subjects filter and offset) when given. */
export async function streamInfo(nc: NatsConnection, bucket: string, request?: object): Promise<StreamInfoReply> {
  const msg = await nc.request(`$JS.API.STREAM.INFO.KV_${bucket}`, request ? jsonBytes(request) : Empty, { timeout: READ_TIMEOUT_MS });
  const reply = msg.json<StreamInfoReply>();
  if (reply.error) throw new BucketReadError(reply.error.description ?? `stream info error ${reply.error.code}`);
  return reply;
}

/** A direct get's value; null when the key is gone (no message, or a delete or purge marker). */
export function storedValue(msg: Msg): Uint8Array | null {
  const code = msg.headers?.code ?? 0;
  if (code === 404) return null;
  if (code === 503) throw new BucketReadError('no responders: the bucket is missing or not granted to this account');
  if (code !== 0) throw new BucketReadError(`direct get: ${code} ${msg.headers?.description ?? ''}`.trim());
  const op = msg.headers?.get('KV-Operation');
  return op === 'DEL' || op === 'PURGE' ? null : msg.data;
}
