// The read-only verb `mesh-provisioner.provisioning` (DESIGN §6): answered only to an inbox, at most
// MAX_CONCURRENT_REQUESTS at once, a seat bucket read from the cursor in key order (server/verb/read.ts),
// checked key by key and cut into a page while reading, so that no reply exceeds the max payload.
import { keyDisagreement } from '../../shared/contract/keys.ts';
import { PROVISIONING_VERB } from '../../shared/contract/subjects.ts';
import type { Msg, NatsConnection } from '@nats-io/transport-node';
import { jsonBytes } from '../../shared/base/bytes.ts';
import { isInboxSubject } from '../../shared/bus/inbox.ts';
import { MAX_JSON_DEPTH, parseBoundedJson } from '../../shared/contract/limits.ts';
import type { Logger } from '../../shared/cli/log.ts';
import { validate } from '../../shared/contract/decode.ts';
import { BUSY, DEFAULT_MAX_PAYLOAD, SEAT_READ_FAILURE, type VerbReply, type VerbRequest } from '../../shared/contract/verb.ts';
import { answerHealth, type HealthSource } from './health.ts';
import { Page, REPLY_HEADROOM, type Row } from './page.ts';
import { parseVerbRequest, SHAPES, watchFilter, type BucketWhat, type Shape } from './request.ts';
import { BucketReadError } from './direct-get.ts';
import { readerOf, type VerbReader } from './read.ts';
import { errorText } from '../../shared/base/errors.ts';

export { compareKeys } from '../../shared/contract/keys.ts';
export { REPLY_HEADROOM } from './page.ts';

/** Requests answered at once at most; one past that is answered BUSY at once (DESIGN §11). */
export const MAX_CONCURRENT_REQUESTS = 16;

/** Where the verb counts what it answers (the seat's `--metrics`); by default nowhere. */
export type VerbCounter = {
  /** A request to an inbox came in: `what` it asked, or `invalid` when it is out of shape. */
  request(what: string): void;
  /** A request was answered BUSY. */
  busy(): void;
};

const NOT_COUNTED: VerbCounter = { request: () => {}, busy: () => {} };

/**
 * Serves mesh-provisioner.provisioning until stopped; `reader` is the connection's own, made with its
 * inbox prefix (`readerOf(nc, inboxPrefix)`; the default reader assumes `_INBOX`); `health` is the
 * seat's memory of held and failed plans (without it, `health` is refused); `counter` hears of each
 * request and each busy answer.
 */
export function serveProvisioning(
  nc: NatsConnection,
  log: Logger,
  reader: VerbReader = readerOf(nc),
  health?: HealthSource,
  alive?: HealthSource,
  counter: VerbCounter = NOT_COUNTED,
): { stop(): Promise<void> } {
  const sub = nc.subscribe(PROVISIONING_VERB);
  const inFlight = new InFlight(log);
  const receive = (msg: Msg): void => {
    // A reply published with the seat's rights to a subject the asker chose would be a write the
    // asker is not granted ($KV.…, $JS.…): only an inbox is answered (DESIGN §11).
    if (!msg.reply || !isInboxSubject(msg.reply)) {
      log.debug(`provisioning: ignored a request with reply subject ${JSON.stringify((msg.reply ?? '').slice(0, 200))}`);
      return;
    }
    const request = parseVerbRequest(msg.data);
    counter.request(request.ok ? request.value.what : 'invalid');
    if (!request.ok) return respond(msg, { error: request.reason }, log);
    const admitted = inFlight.admit(() =>
      answerRequest(reader, { health, alive }, request.value, maxPayloadOf(nc))
        .catch((err: unknown) => ({ error: `internal: ${errorText(err)}` }))
        .then((reply) => respond(msg, reply, log)),
    );
    if (admitted) return;
    counter.busy();
    respond(msg, { error: BUSY }, log);
  };
  const loop = (async () => {
    for await (const msg of sub) {
      // One request that throws must not end the subscription for all the others.
      try {
        receive(msg);
      } catch (err) {
        log.error(`provisioning: ${errorText(err)}`);
      }
    }
  })().catch((err: unknown) => log.error(`provisioning: subscription ended: ${errorText(err)}`));
  log.info(`provisioning: serving ${PROVISIONING_VERB}`);
  return {
    async stop() {
      if (!sub.isClosed()) sub.unsubscribe();
      await loop;
      await inFlight.settled();
    },
  };
}

/** The requests being answered, at most MAX_CONCURRENT_REQUESTS, and how many were shed meanwhile. */
class InFlight {
  readonly #running = new Set<Promise<void>>();
  #shed = 0;

  constructor(private readonly log: Logger) {}

  /** Starts `work` and says true when a slot is free; says false (the request is shed) when none is. */
  admit(work: () => Promise<void>): boolean {
    if (this.#running.size >= MAX_CONCURRENT_REQUESTS) {
      if (this.#shed++ === 0) this.log.warn(`provisioning: ${this.#running.size} requests in flight; answering ${BUSY} until one ends`);
      return false;
    }
    const running: Promise<void> = work().finally(() => {
      this.#running.delete(running);
      if (this.#running.size > 0 || this.#shed === 0) return;
      this.log.notice(`provisioning: answered ${this.#shed} requests ${BUSY}`);
      this.#shed = 0;
    });
    this.#running.add(running);
    return true;
  }

  /** Resolves once every request started has been answered. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.#running]);
  }
}

function maxPayloadOf(nc: NatsConnection): number {
  return nc.info?.max_payload ?? DEFAULT_MAX_PAYLOAD;
}

/** A page of a bucket as the UTF-8 of its JSON text (page.ts), sent as it is. */
type PageText = { bytes: Uint8Array };

/** What a request is answered with. */
type Answer = VerbReply | PageText | { error: string };

function respond(msg: Msg, reply: Answer, log: Logger): void {
  if ('error' in reply && reply.error !== BUSY) log.info(`provisioning: answered {error}: ${reply.error.slice(0, 500)}`);
  try {
    msg.respond('bytes' in reply ? reply.bytes : jsonBytes(reply));
  } catch (err) {
    log.warn(`provisioning: could not answer: ${errorText(err)}`);
  }
}

/** Answers one request body (exported for tests): `{error}` for a bad one, else the page asked for. */
export async function answerProvisioning(
  nc: NatsConnection,
  body: Uint8Array,
  maxPayload: number,
  reader: VerbReader = readerOf(nc),
  health?: HealthSource,
): Promise<VerbReply | { error: string }> {
  const request = parseVerbRequest(body);
  if (!request.ok) return { error: request.reason };
  const answer = await answerRequest(reader, { health }, request.value, maxPayload);
  return 'bytes' in answer ? (JSON.parse(Buffer.from(answer.bytes).toString()) as VerbReply) : answer;
}

async function answerRequest(
  reader: VerbReader,
  memory: { health?: HealthSource | undefined; alive?: HealthSource | undefined },
  request: VerbRequest,
  maxPayload: number,
): Promise<Answer> {
  if (request.what === 'health' || request.what === 'alive') {
    const source = memory[request.what];
    return source ? answerHealth(source, request, maxPayload) : { error: `what: ${request.what} is not kept by this server` };
  }
  return answerBucket(reader, { ...request, what: request.what }, maxPayload);
}

async function answerBucket(reader: VerbReader, request: VerbRequest & { what: BucketWhat }, maxPayload: number): Promise<PageText | { error: string }> {
  const { what, limit, after } = request;
  const shape = SHAPES[what];
  const filter = watchFilter(request);
  if (!filter.ok) return { error: filter.reason };
  const page = new Page(what, limit ?? Infinity, maxPayload - REPLY_HEADROOM);
  try {
    read: for await (const run of reader.entries(shape.bucket, filter.value, after, maxPayload, page)) {
      for (const { key, data } of run) if (!page.add(classify(shape, key, data, maxPayload))) break read;
    }
    return { bytes: page.bytes() };
  } catch (err) {
    if (err instanceof BucketReadError) return { error: `${SEAT_READ_FAILURE}${shape.bucket}: ${err.message}` };
    return { error: `internal: ${errorText(err)}` };
  }
}

/** An entry, or out of shape when the key, the value, or their agreement fails. */
function classify(shape: Shape, key: string, data: Uint8Array, maxBytes: number): Row {
  const parsedKey = shape.parseKey(key);
  if (!parsedKey.ok) return { key, reason: `key: ${parsedKey.reason}` };
  // At most MAX_JSON_DEPTH, so that the reply around it stays within what `query` reads (+ REPLY_NESTING).
  const parsed = parseBoundedJson(data, { maxBytes, maxDepth: MAX_JSON_DEPTH });
  if (!parsed.ok) return { key, reason: `value: ${parsed.reason}` };
  const value = parsed.value;
  const checked = validate(shape.schema, value);
  if (!checked.ok) return { key, reason: `value: ${checked.reason}` };
  const disagreement =
    typeof parsedKey.value === 'object' && parsedKey.value !== null ? keyDisagreement(parsedKey.value, value as Record<string, unknown>) : undefined;
  return disagreement ? { key, reason: `value: ${disagreement}` } : { key, value };
}
