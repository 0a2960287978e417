// `mesh-provisioner rollout [MODULE] [--json]` reads the rollouts bucket; `rollout resume|abort MODULE`
// asks the seat, the bucket's only writer, on ROLLOUT_VERB (DESIGN §12).
import type { NatsConnection } from '@nats-io/transport-node';
import { JetStreamApiCodes } from '@nats-io/jetstream';
import { ROLLOUTS } from '../../../shared/contract/buckets.ts';
import { jsonBytes } from '../../../shared/base/bytes.ts';
import { describeBusError, errorText, isNoResponders, isPermissionViolation, isTimeout } from '../../../shared/base/errors.ts';
import { parseBoundedJson } from '../../../shared/contract/limits.ts';
import { safeJson } from '../../../shared/cli/safe-text.ts';
import { ROLLOUT_VERB } from '../../../shared/contract/subjects.ts';
import { COMMAND_READ_TIMEOUT_MS, readAll } from '../../../shared/bus/watch/read-all.ts';
import { readRolloutState, type RolloutState } from '../../../shared/contract/rollout-state.ts';
import type { RolloutOptions } from '../../options.ts';
import { formatRollout, publicState } from './format.ts';
import { missingBucketLine, seatWaitsForInit } from '../before-init.ts';
import { busIsolates } from '../input-bucket.ts';

/** How long the seat has to answer a resume or an abort. */
export const ROLLOUT_REQUEST_TIMEOUT_MS = 10_000;

/** Runs `rollout`; returns the exit code: 0 done, 1 refused or not reached. */
export async function runRollout(nc: NatsConnection, opts: RolloutOptions, out: (line: string) => void, err: (line: string) => void): Promise<number> {
  if (opts.op === 'show') return showRollouts(nc, opts, out, err);
  let data: Uint8Array;
  try {
    data = (await nc.request(ROLLOUT_VERB, jsonBytes({ op: opts.op, module: opts.module }), { timeout: ROLLOUT_REQUEST_TIMEOUT_MS })).data;
  } catch (e) {
    const beforeInit = isNoResponders(e) ? await seatWaitsForInit(nc) : undefined;
    const why =
      beforeInit ??
      (isNoResponders(e) || isTimeout(e) ? 'the seat did not answer (is it running?)' : isPermissionViolation(e) ? notAdmin(e) : describeBusError(e));
    return (err(`rollout ${opts.op} ${opts.module}: ${why}`), 1);
  }
  const reply = parseBoundedJson(data, { maxBytes: 64 * 1024 });
  const value = (reply.ok ? reply.value : {}) as { ok?: unknown; reason?: unknown };
  if (value.ok === true) return (out(`rollout of ${opts.module}: ${opts.op === 'resume' ? 'resumed' : 'aborted'}`), 0);
  const reason = typeof value.reason === 'string' ? value.reason : 'the seat answered something unreadable';
  return (err(`rollout ${opts.op} ${opts.module}: ${reason}`), 1);
}

async function showRollouts(nc: NatsConnection, opts: RolloutOptions, out: (line: string) => void, err: (line: string) => void): Promise<number> {
  let stored: Map<string, Uint8Array>;
  try {
    // A watch whose deliveries this login may not receive would wait for them for ever: refused first.
    const info = await nc.request(`$JS.API.STREAM.INFO.KV_${ROLLOUTS}`, undefined, { timeout: ROLLOUT_REQUEST_TIMEOUT_MS }).catch((e: unknown) => {
      if (isPermissionViolation(e)) throw e;
    });
    // Before `init` (or the seat's first start, without logins): the line the input commands give.
    if (info && isStreamNotFoundReply(info.data)) return (err(`rollout: ${missingBucketLine(ROLLOUTS, busIsolates(nc))}`), 1);
    stored = await readAll(nc, ROLLOUTS, opts.module ?? '>', { timeoutMs: COMMAND_READ_TIMEOUT_MS });
  } catch (e) {
    return (err(`rollout: reading ${ROLLOUTS}: ${isPermissionViolation(e) ? notAdmin(e) : describeBusError(e)}`), 1);
  }
  const states: RolloutState[] = [];
  const unreadable: { key: string; reason: string }[] = [];
  for (const [key, bytes] of [...stored].sort(([a], [b]) => (a < b ? -1 : 1))) {
    const read = readRolloutState(key, bytes);
    if (read.ok) states.push(read.value);
    else unreadable.push({ key, reason: read.reason });
  }
  if (opts.json) out(safeJson({ rollouts: states.map(publicState), outOfShape: unreadable }));
  else {
    for (const state of states) for (const line of formatRollout(state)) out(line);
    for (const u of unreadable) out(`${u.key}: out of shape: ${u.reason}`);
    if (states.length + unreadable.length === 0) out(opts.module ? `no rollout of ${opts.module}` : 'no rollouts');
  }
  return opts.module !== undefined && states.length === 0 ? 1 : 0;
}

/** Whether a JetStream API reply says its stream does not exist. */
function isStreamNotFoundReply(data: Uint8Array): boolean {
  const reply = parseBoundedJson(data, { maxBytes: 64 * 1024 });
  const error =
    (reply.ok && typeof reply.value === 'object' && reply.value !== null ? (reply.value as { error?: { err_code?: unknown } }).error : undefined) ?? {};
  return error.err_code === JetStreamApiCodes.StreamNotFound;
}

/** A login the bus refuses (the seat's, a node's), told to use admin's, as the input commands tell theirs. */
function notAdmin(e: unknown): string {
  return `this login may not do it: rollout needs the admin login (its seed, admin.nk, as --nkey); the bus said: ${errorText(e)}`;
}
