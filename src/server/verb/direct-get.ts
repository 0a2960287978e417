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
  /** The stream's first and last sequences, and one page of matching subjects when the request named a filter. */
  state?: { first_seq?: number; last_seq?: number; subjects?: Record<string, number> };
};

/** The stream info of a bucket, with `request` (a subjects filter and offset) when given. */
export async function streamInfo(nc: NatsConnection, bucket: string, request?: object): Promise<StreamInfoReply> {
  const msg = await nc.request(`$JS.API.STREAM.INFO.KV_${bucket}`, request ? jsonBytes(request) : Empty, { timeout: READ_TIMEOUT_MS });
  const reply = msg.json<StreamInfoReply>();
  if (reply.error) throw new BucketReadError(reply.error.description ?? `stream info error ${reply.error.code}`);
  return reply;
}

/** What a direct get's header block starts with when it answers a stored message, no status after it. */
const NO_STATUS = Buffer.from('NATS/1.0\r\n');
/** The header a bucket's delete and purge markers carry. */
const KV_OPERATION = Buffer.from('KV-Operation');

/**
 * A direct get's value; null when the key is gone (no message, or a delete or purge marker). An
 * answer whose header block has no status and no `KV-Operation` is a value, seen in its bytes:
 * decoding the headers (a string, its lines, a map) cost a tenth of the verb's walk of 20,000
 * reports, and every other answer is read through nats.js's headers as before.
 */
export function storedValue(msg: Msg): Uint8Array | null {
  const header = headerBytes(msg);
  if (
    header &&
    header.length >= NO_STATUS.length &&
    header.compare(NO_STATUS, 0, NO_STATUS.length, 0, NO_STATUS.length) === 0 &&
    !header.includes(KV_OPERATION)
  ) {
    return msg.data;
  }
  const code = msg.headers?.code ?? 0;
  if (code === 404) return null;
  if (code === 503) throw new BucketReadError('no responders: the bucket is missing or not granted to this account');
  if (code !== 0) throw new BucketReadError(`direct get: ${code} ${msg.headers?.description ?? ''}`.trim());
  const op = msg.headers?.get('KV-Operation');
  return op === 'DEL' || op === 'PURGE' ? null : msg.data;
}

/**
 * The header block of a message as nats.js received it (nats.js 3's message keeps it in `_rdata`
 * up to `_msg.hdr`, a field it does not publish); undefined when it has none or keeps it elsewhere,
 * and the caller reads `msg.headers` instead. test/verb-answer.test.ts fails if the fields go.
 */
export function headerBytes(msg: Msg): Buffer | undefined {
  const held = msg as unknown as { _rdata?: unknown; _msg?: { hdr?: unknown } };
  const data = held._rdata;
  const length = held._msg?.hdr;
  if (!(data instanceof Uint8Array) || typeof length !== 'number' || length < 0 || length > data.length) return undefined;
  return Buffer.from(data.buffer, data.byteOffset, length);
}
