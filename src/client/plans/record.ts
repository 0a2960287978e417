// The record of a node's plans (issue 34): every plan its watch delivered, with its revision, and the
// stream sequence they were read up to, kept in its cache directory. A start over it delivers them
// and watches only what was stored after that sequence, where a read of `<node>.*` from sequence 1
// scans every subject of the plans stream on nats-server 2.9: a fleet restarted at once costs the bus
// what changed while it was down, not N² (docs/decisions.md).
import { join } from 'node:path';
import * as v from 'valibot';
import type { Logger } from '../../shared/cli/log.ts';
import type { Resumed } from '../../shared/bus/watch/watch.ts';
import type { WatchEvent } from '../../shared/bus/watch/types.ts';
import { PLANS } from '../../shared/contract/buckets.ts';
import { readRecordFile, RecordFile, type RecordName } from '../report/record-file.ts';

const EntrySchema = v.object({ revision: v.pipe(v.number(), v.integer(), v.minValue(1)), at: v.optional(v.number()), value: v.string() });

const RecordSchema = v.object({
  node: v.string(),
  /** The plans stream's creation time: a stream made again is another stream. */
  stream: v.string(),
  /** Every message of the node's filter up to this stream sequence is in `plans`. */
  after: v.pipe(v.number(), v.integer(), v.minValue(0)),
  /** Key → the last revision delivered of it (base64 of the value's bytes); a deleted key is absent. */
  plans: v.record(v.string(), EntrySchema),
});

type Entry = v.InferOutput<typeof EntrySchema>;

/**
 * How long a record whose only change is the watch's progress waits to be saved, at most: a
 * record of 1,000 plans is megabytes, and a moving stream would have it written at every 30 s
 * heartbeat. A start after a crash resumes from at most this much further back.
 */
export const PROGRESS_SAVE_MS = 5 * 60_000;

/** Where `node`'s record of plans is kept under the cache directory: a file of its own per node. */
export function plansRecordPath(cacheDir: string, node: string): string {
  return join(cacheDir, 'plans', `${node}.json`);
}

/** The record of `node`'s plans, as log lines name it. */
const plansRecordName = (cacheDir: string, node: string): RecordName => ({
  path: plansRecordPath(cacheDir, node),
  what: 'the record of plans',
  instead: `reads ${node}'s plans whole`,
});

/**
 * The record of one node's plans: read at start, told every event of the plans watch and its
 * progress, saved (atomically: a temp file renamed over it) RECORD_SAVE_MS after a change.
 */
export class PlansRecord {
  /** The stream the plans were read from (its creation time); undefined until the record was read or the watch said it. */
  #stream: string | undefined;
  #after = 0;
  readonly #plans = new Map<string, Entry>();
  readonly #file: RecordFile;
  #forgotten = false;

  private constructor(
    cacheDir: string,
    private readonly node: string,
    private readonly log: Logger,
  ) {
    this.#file = new RecordFile(
      plansRecordName(cacheDir, node),
      () => JSON.stringify({ node, stream: this.#stream, after: this.#after, plans: Object.fromEntries(this.#plans) }),
      log,
    );
  }

  /** Reads `node`'s record; one that is missing, unreadable or out of shape (said) is empty. */
  static async read(cacheDir: string, node: string, log: Logger): Promise<PlansRecord> {
    const record = new PlansRecord(cacheDir, node, log);
    const kept = await readRecordFile(plansRecordName(cacheDir, node), RecordSchema, node, log);
    if (!kept) return record;
    for (const [key, entry] of Object.entries(kept.plans)) if (entry.revision <= kept.after) record.#plans.set(key, entry);
    record.#stream = kept.stream;
    record.#after = kept.after;
    return record;
  }

  /**
   * The watch's `resume` (shared/bus/watch/watch.ts): the plans held when they were read from this
   * stream (`created`), else undefined and the record starts anew for it. Asked again by a watch
   * that failed to begin, it answers what it holds then: the same plans, or those read since.
   */
  resume(created: string): Resumed | undefined {
    if (this.#stream === created && this.#after > 0) {
      this.log.debug(`${PLANS}: ${this.#plans.size} plans from the record, read up to sequence ${this.#after}; watching what is stored after it`);
      return {
        after: this.#after,
        events: [...this.#plans].map(([key, e]) => ({ key, revision: e.revision, at: e.at, value: Buffer.from(e.value, 'base64') })),
      };
    }
    if (this.#stream !== undefined && this.#stream !== created)
      this.log.info(`${PLANS}: the stream was made again since the record of plans was kept; reading ${this.node}'s plans whole`);
    this.#stream = created;
    this.#plans.clear();
    this.#after = 0;
    return undefined;
  }

  /** An event the watch delivered (a put, or a delete). */
  note(event: WatchEvent): void {
    // The events a start resumes from come back through the watch: already kept.
    if (this.#plans.get(event.key)?.revision === event.revision) return;
    if (event.value === null) this.#plans.delete(event.key);
    else this.#plans.set(event.key, { revision: event.revision, at: event.at, value: Buffer.from(event.value).toString('base64') });
    if (event.revision > this.#after) this.#after = event.revision;
    this.#changed();
  }

  /** The watch delivered every message of its filter up to `seq` (each idle heartbeat): saved within PROGRESS_SAVE_MS, or with the next change. */
  progress(seq: number): void {
    if (seq <= this.#after) return;
    this.#after = seq;
    this.#changed(PROGRESS_SAVE_MS);
  }

  /** The stream came back holding less than the watch saw: the record says nothing of the new one and is removed. */
  forget(): void {
    this.#forgotten = true;
    this.#file.remove();
  }

  /** Saves what is pending now; resolves once saved. */
  flush(): Promise<void> {
    return this.#file.flush();
  }

  #changed(within?: number): void {
    if (!this.#forgotten && this.#stream !== undefined) this.#file.changed(within);
  }
}
