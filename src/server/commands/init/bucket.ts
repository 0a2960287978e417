// One bucket of `init` (DESIGN §3, §11, §13): made when missing; when there, refused if it holds more
// than its bucket, and otherwise compared field by field with what was asked (drift.ts), each
// difference updated where nats-server takes the update and said, or said with what is there, what
// was asked and how to fix it.
import { JetStreamApiError, type JetStreamManager, type StreamConfig, type StreamInfo } from '@nats-io/jetstream';
import { bucketProblems, streamConfigOf, streamOf, type BucketSpec } from '../../../shared/contract/bucket-spec.ts';
import { errorText } from '../../../shared/base/errors.ts';
import { isStreamNotFound } from '../../../shared/bus/jetstream-errors.ts';
import { isTooManyReplicas } from '../../../shared/bus/replicas-hint.ts';
import { streamDrifts, type Asked, type Drift } from './drift.ts';

/** What a bucket holds now, as the closing summary counts it. */
export type Holding = { copies: number; maxConsumers: number };

/** What init did with one bucket. */
export type Outcome = {
  /** The lines said of it: what was made or updated, then each difference left. */
  lines: string[];
  /** `ready`: as asked; `differs`: used by every program, but not as asked; `refused`: no program uses it. */
  state: 'ready' | 'differs' | 'refused';
  /** What it holds now. */
  holding: Holding;
  /** Why the copies asked could not be had, for the closing hint (replicas-hint.ts). */
  tooManyReplicas?: string;
};

/** Creates one bucket, or brings the one there to what was asked where nats-server lets an update. */
export async function initBucket(jsm: JetStreamManager, spec: BucketSpec, asked: Asked): Promise<Outcome> {
  const stream = streamOf(spec);
  let info: StreamInfo;
  try {
    info = await jsm.streams.info(stream);
  } catch (err) {
    if (!isStreamNotFound(err)) throw err;
    await jsm.streams.add(streamConfigOf(spec, asked));
    const holding = { copies: asked.replicas, maxConsumers: asked.maxConsumers };
    return { lines: [`created bucket ${spec.name} (stream ${stream}): ${describeHolding(holding)}`], state: 'ready', holding };
  }
  const clustered = info.cluster !== undefined;
  const refused = bucketProblems(spec, info.config).filter((p) => !p.fixable);
  if (refused.length > 0) {
    return {
      lines: [
        `bucket ${spec.name} (stream ${stream}) ${refused.map((p) => p.text).join('; ')}: left as it is — it may hold what it captured; ` +
          `save what you need, remove the stream with the admin login (the NATS CLI's \`nats stream rm ${stream}\`) and run init again`,
      ],
      state: 'refused',
      holding: holdingOf(info.config, clustered),
    };
  }
  return bringToAsked(jsm, spec, info.config, asked, clustered);
}

/**
 * Asks an update for each difference in turn: one line says what was brought (or that nothing
 * needed to be), then one line each difference left, with what to do.
 */
async function bringToAsked(jsm: JetStreamManager, spec: BucketSpec, start: StreamConfig, asked: Asked, clustered: boolean): Promise<Outcome> {
  const named = `bucket ${spec.name} (stream ${streamOf(spec)})`;
  let config = start;
  const done: string[] = [];
  const left: string[] = [];
  let tooManyReplicas: string | undefined;
  for (const drift of streamDrifts(spec, asked, config, clustered)) {
    const tried = await tryUpdate(jsm, streamOf(spec), config, drift);
    if (tried.ok) {
      config = tried.config;
      done.push(drift.done);
      continue;
    }
    left.push(`${named} ${drift.text}: not changed — ${drift.stays ?? `nats-server refused the update (${tried.reason})`}; ${drift.fix}`);
    if (drift.tooManyReplicas || tried.tooManyReplicas) tooManyReplicas ??= tried.reason ?? 'replicas > 1 not supported in non-clustered mode';
  }
  const lines = done.length > 0 || left.length === 0 ? [`${named} ${done.join('; ') || 'is as it should be'}`, ...left] : left;
  const state = left.length > 0 ? 'differs' : 'ready';
  return { lines, state, holding: holdingOf(config, clustered), ...(tooManyReplicas !== undefined ? { tooManyReplicas } : {}) };
}

/** What asking a drift's update came to: the stream's new configuration, or why it stays. */
type Tried = { ok: true; config: StreamConfig } | { ok: false; reason?: string; tooManyReplicas?: boolean };

/** Asks one update; nats-server's refusal (a JetStream API error) is an answer, anything else is thrown. */
async function tryUpdate(jsm: JetStreamManager, stream: string, config: StreamConfig, drift: Drift): Promise<Tried> {
  if (!drift.update) return { ok: false };
  try {
    return { ok: true, config: (await jsm.streams.update(stream, { ...config, ...drift.update })).config };
  } catch (err) {
    if (!(err instanceof JetStreamApiError)) throw err;
    return { ok: false, reason: errorText(err), tooManyReplicas: isTooManyReplicas(err) };
  }
}

/** What a stream holds: one copy on a server outside a cluster, whatever its configuration records. */
function holdingOf(config: StreamConfig, clustered: boolean): Holding {
  return { copies: clustered ? config.num_replicas : 1, maxConsumers: config.max_consumers };
}

/** `3 copies, at most 464 consumers`, or `no bound on consumers`. */
export function describeHolding(holding: Holding): string {
  const copies = `${holding.copies} ${holding.copies === 1 ? 'copy' : 'copies'}`;
  return `${copies}, ${holding.maxConsumers > 0 ? `at most ${holding.maxConsumers} consumers` : 'no bound on consumers'}`;
}
