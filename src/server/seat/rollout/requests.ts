// The seat's answer to an operator's `rollout resume|abort MODULE` (DESIGN §12): the seat is the only
// writer of the rollouts bucket, so the command asks it on ROLLOUT_VERB and it answers `{ok, reason?}`,
// only to an inbox, a bounded number at once, like the provisioning verb (DESIGN §11).
import type { Msg, NatsConnection } from '@nats-io/transport-node';
import * as v from 'valibot';
import { jsonBytes } from '../../../shared/base/bytes.ts';
import { errorText } from '../../../shared/base/errors.ts';
import { isInboxSubject } from '../../../shared/bus/inbox.ts';
import { NAME_PATTERN } from '../../../shared/contract/keys.ts';
import { MAX_JSON_DEPTH, parseBoundedJson } from '../../../shared/contract/limits.ts';
import type { Logger } from '../../../shared/cli/log.ts';
import type { Parsed } from '../../../shared/base/result.ts';
import { validate } from '../../../shared/contract/decode.ts';
import { ROLLOUT_VERB } from '../../../shared/contract/subjects.ts';
import type { RolloutDirector } from './director.ts';
import type { RolloutAnswer } from './operator.ts';

/** Requests answered at once at most; one past that is answered `busy`. */
export const MAX_ROLLOUT_REQUESTS = 4;
/** The largest request read: a module name and an op need far less. */
export const MAX_ROLLOUT_REQUEST_BYTES = 4096;

/** A request on ROLLOUT_VERB. */
export const RolloutRequestSchema = v.strictObject({
  /** `resume` lifts a halt; `abort` plans every node on the new build back. */
  op: v.picklist(['resume', 'abort'], 'must be "resume" or "abort"'),
  /** The module whose rollout it is. */
  module: v.pipe(v.string(), v.regex(NAME_PATTERN, 'is not a valid name')),
});
/** A request on ROLLOUT_VERB. */
export type RolloutRequest = v.InferOutput<typeof RolloutRequestSchema>;

/** Reads a request's bytes; the reason names the field. */
export function readRolloutRequest(data: Uint8Array): Parsed<RolloutRequest> {
  const raw = parseBoundedJson(data, { maxBytes: MAX_ROLLOUT_REQUEST_BYTES, maxDepth: MAX_JSON_DEPTH });
  return raw.ok ? validate(RolloutRequestSchema, raw.value) : raw;
}

/** Serves ROLLOUT_VERB until stopped. */
export function serveRolloutRequests(nc: NatsConnection, log: Logger, director: Pick<RolloutDirector, 'request'>): { stop(): Promise<void> } {
  const sub = nc.subscribe(ROLLOUT_VERB);
  const running = new Set<Promise<void>>();
  const answer = (msg: Msg, reply: RolloutAnswer | { ok: false; reason: string }) => {
    try {
      msg.respond(jsonBytes(reply));
    } catch (err) {
      log.warn(`${ROLLOUT_VERB}: could not answer: ${errorText(err)}`);
    }
  };
  const receive = (msg: Msg): void => {
    if (!msg.reply || !isInboxSubject(msg.reply)) return log.debug(`${ROLLOUT_VERB}: ignored a request without an inbox to answer`);
    const request = readRolloutRequest(msg.data);
    if (!request.ok) return answer(msg, { ok: false, reason: request.reason });
    if (running.size >= MAX_ROLLOUT_REQUESTS) return answer(msg, { ok: false, reason: 'busy' });
    const { op, module } = request.value;
    log.notice(`${ROLLOUT_VERB}: ${op} ${module} asked`);
    const work: Promise<void> = director
      .request(op, module)
      .catch((err: unknown) => ({ ok: false as const, reason: `internal: ${errorText(err)}` }))
      .then((reply) => answer(msg, reply))
      .finally(() => running.delete(work));
    running.add(work);
  };
  const loop = (async () => {
    for await (const msg of sub) {
      try {
        receive(msg);
      } catch (err) {
        log.error(`${ROLLOUT_VERB}: ${errorText(err)}`);
      }
    }
  })().catch((err: unknown) => log.error(`${ROLLOUT_VERB}: subscription ended: ${errorText(err)}`));
  return {
    async stop() {
      if (!sub.isClosed()) sub.unsubscribe();
      await loop;
      await Promise.allSettled([...running]);
    },
  };
}
