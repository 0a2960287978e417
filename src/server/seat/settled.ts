// When the seat has handled all it was given: every change stored in the buckets it watches
// delivered to it, no pass running or asked, no rollout judgement asked and no state write running.
// A test asserts that something did NOT happen after this, not after a fixed sleep; a deadline or a
// retry still to come is not waited for (a test moves its clock for those).
import type { NatsConnection } from '@nats-io/transport-node';
import { bucketManager } from '../../shared/bus/bucket-bind.ts';
import { kvBucket, streamOf } from '../../shared/contract/bucket-spec.ts';

/** The newest revision the seat's watches delivered per bucket, and how many changes it has heard. */
export class Heard {
  readonly #revisions = new Map<string, number>();
  readonly #waiting = new Set<{ bucket: string; revision: number; resolve: () => void }>();
  #events = 0;

  /** The changes handed to the seat so far, and the passes ended: a round that moves neither is quiet. */
  get events(): number {
    return this.#events;
  }

  /** Takes a change of `bucket` the seat was handed, at `revision`. */
  saw(bucket: string, revision: number): void {
    this.#events++;
    this.#revisions.set(bucket, Math.max(revision, this.#revisions.get(bucket) ?? 0));
    for (const w of this.#waiting)
      if (w.bucket === bucket && revision >= w.revision) {
        this.#waiting.delete(w);
        w.resolve();
      }
  }

  /** Takes the end of a pass. */
  passed(): void {
    this.#events++;
  }

  /** Resolves once a change of `bucket` at `revision` or later was handed to the seat (at once for 0). */
  reached(bucket: string, revision: number): Promise<void> {
    if (revision <= (this.#revisions.get(bucket) ?? 0)) return Promise.resolve();
    return new Promise((resolve) => void this.#waiting.add({ bucket, revision, resolve }));
  }
}

/** What settling the seat waits on: its watches, its composer and its rollouts. */
export type SettleParts = {
  nc: NatsConnection;
  heard: Heard;
  /** The buckets watched, each with the watch's first full read. */
  watched: readonly { bucket: string; caughtUp: Promise<void> }[];
  /** Resolves when no pass runs or is asked. */
  passesIdle(): Promise<void>;
  /** Resolves when no judgement is asked and no state write runs. */
  rolloutsIdle(): Promise<void>;
};

/**
 * Resolves once a round finds every bucket's last revision already handed to the seat and heard
 * nothing new while its passes and rollouts went idle: what each does sets off the other (a state
 * stored asks a pass, a pass asks a judgement, a plan written comes back on its watch).
 */
export async function settleSeat(parts: SettleParts): Promise<void> {
  const { nc, heard, watched } = parts;
  await Promise.all(watched.map((w) => w.caughtUp));
  const jsm = await bucketManager(nc);
  for (;;) {
    const before = heard.events;
    const last = await Promise.all(watched.map(async (w) => (await jsm.streams.info(streamOf(kvBucket(w.bucket)))).state.last_seq));
    await Promise.all(watched.map((w, i) => heard.reached(w.bucket, last[i]!)));
    await parts.passesIdle();
    await parts.rolloutsIdle();
    await parts.passesIdle();
    if (heard.events === before) return;
  }
}
