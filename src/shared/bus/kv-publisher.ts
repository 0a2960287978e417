// Puts values in a KV bucket as pipelined JetStream publishes (DESIGN §4): the seat's plans, a
// client's needs and reports. A KV put through nats.js is a request: a mux entry, a timer and two captured stack traces per write, which
// at fleet size was most of the seat's CPU (50,000 puts: 2.3 s of CPU, against 0.4 s this way). Here
// each put is one publish with a reply subject under a single subscription, the acks matched by a
// counter, and one sweep fails any put the bus has not answered within the timeout.
import { createInbox, type Msg, type NatsConnection, type Subscription } from '@nats-io/transport-node';
import type { Parsed } from '../base/result.ts';
import { parseBoundedJson } from '../contract/limits.ts';
import { errorText } from '../base/errors.ts';

/** How long a put waits for the bus's ack, as nats.js's JetStream publish waits by default. */
export const DEFAULT_ACK_TIMEOUT_MS = 5000;

/** How a KvPublisher reaches the bus. */
export type KvPublisherOptions = {
  /** The inbox prefix the connection was made with (`_INBOX` unless the connection says otherwise). */
  inboxPrefix?: string;
  /** How long a put waits for its ack (DEFAULT_ACK_TIMEOUT_MS). */
  timeoutMs?: number;
};

/** A put the bus refused or did not answer: the key and the reason. */
export class PutRefusedError extends Error {
  override readonly name = 'PutRefusedError';

  constructor(
    readonly key: string,
    reason: string,
    options?: { cause?: unknown },
  ) {
    super(`put of ${key}: ${reason}`, options);
  }
}

type Waiting = { key: string; at: number; resolve(revision: number): void; reject(err: Error): void };

/** Puts values under keys of one bucket, any number in flight, each resolving with its revision. */
export class KvPublisher {
  readonly #pending = new Map<number, Waiting>();
  readonly #inbox: string;
  readonly #timeoutMs: number;
  #sub: Subscription | undefined;
  #sweeper: NodeJS.Timeout | undefined;
  #next = 0;

  constructor(
    private readonly nc: NatsConnection,
    private readonly bucket: string,
    options: KvPublisherOptions = {},
  ) {
    this.#inbox = createInbox(options.inboxPrefix);
    this.#timeoutMs = options.timeoutMs ?? DEFAULT_ACK_TIMEOUT_MS;
  }

  /** Puts `value` under `key` (a key already in the bucket's shape); resolves with its revision. */
  put(key: string, value: Uint8Array): Promise<number> {
    this.#sub ??= this.nc.subscribe(`${this.#inbox}.*`, {
      callback: (err, msg) => {
        if (!err) return this.#receive(msg);
        // The subscription is gone (refused, or closed): every put waiting fails, the next one subscribes again.
        this.#sub = undefined;
        this.#fail(() => true, `no acks: ${err.message}`);
      },
    });
    const id = ++this.#next;
    return new Promise<number>((resolve, reject) => {
      this.#pending.set(id, { key, at: Date.now(), resolve, reject });
      try {
        this.nc.publish(`$KV.${this.bucket}.${key}`, value, { reply: `${this.#inbox}.${id}` });
      } catch (err) {
        this.#pending.delete(id);
        return reject(new PutRefusedError(key, `not sent: ${errorText(err)}`, { cause: err }));
      }
      this.#sweeper ??= setInterval(() => this.#sweep(), Math.max(1, Math.floor(this.#timeoutMs / 4))).unref();
    });
  }

  /** Stops listening for acks; every put still waiting is refused. */
  close(): void {
    this.#sub?.unsubscribe();
    this.#sub = undefined;
    this.#fail(() => true, 'the publisher was closed');
  }

  #receive(msg: Msg): void {
    const id = Number(msg.subject.slice(this.#inbox.length + 1));
    const waiting = this.#pending.get(id);
    if (!waiting) return;
    this.#pending.delete(id);
    const ack = parsePublishAck(msg);
    if (ack.ok) waiting.resolve(ack.value);
    else waiting.reject(new PutRefusedError(waiting.key, ack.reason));
    // The sweeper is left to stop itself at its next sweep (#fail): a client's every change puts one
    // report, and an interval made and cleared per put was a timer's work a change.
  }

  #sweep(): void {
    const oldest = Date.now() - this.#timeoutMs;
    this.#fail((w) => w.at <= oldest, `no ack within ${this.#timeoutMs} ms`);
  }

  #fail(which: (w: Waiting) => boolean, reason: string): void {
    for (const [id, w] of this.#pending) {
      if (!which(w)) continue;
      this.#pending.delete(id);
      w.reject(new PutRefusedError(w.key, reason));
    }
    this.#idle();
  }

  #idle(): void {
    if (this.#pending.size > 0 || !this.#sweeper) return;
    clearInterval(this.#sweeper);
    this.#sweeper = undefined;
  }
}

/** The largest publish ack read: the server's own, a stream name, a sequence and perhaps an error. */
const MAX_ACK_BYTES = 64 * 1024;

/**
 * Reads a JetStream publish ack: the stream sequence (the key's new revision), or why the message
 * was not stored: the stream's error, or a status without a body (503: no stream listens).
 */
export function parsePublishAck(msg: Pick<Msg, 'data' | 'headers'>): Parsed<number> {
  if (msg.data.length === 0)
    return {
      ok: false,
      reason: `status ${msg.headers?.code ?? 'unknown'}${msg.headers?.code === 503 ? ': no stream listens (the bucket is missing, or its cluster is choosing a leader)' : ''}`,
    };
  const parsed = parseBoundedJson(msg.data, { maxBytes: MAX_ACK_BYTES });
  if (!parsed.ok) return { ok: false, reason: parsed.reason.startsWith('not JSON') ? 'the ack is not JSON' : `the ack is ${parsed.reason}` };
  const ack = parsed.value as { seq?: unknown; error?: { description?: unknown; code?: unknown } } | null;
  if (ack?.error) return { ok: false, reason: `refused: ${String(ack.error.description ?? 'no description')} (${String(ack.error.code ?? '?')})` };
  if (typeof ack?.seq !== 'number') return { ok: false, reason: 'the ack names no sequence' };
  return { ok: true, value: ack.seq };
}
