// The record of the keys a node's client wrote (issue 34): its needs (with their values), its items
// and the modules it reported, kept in its cache directory, so that a start deletes what modules gone
// while it was down left behind by key — where a read of `<node>.>` from sequence 1 would scan every
// subject of the stream on nats-server 2.9 (docs/decisions.md).
import { join } from 'node:path';
import * as v from 'valibot';
import type { Logger } from '../../shared/cli/log.ts';
import { readRecordFile, RecordFile, type RecordName } from './record-file.ts';

const RecordSchema = v.object({
  node: v.string(),
  needs: v.record(v.string(), v.string()),
  collect: v.array(v.string()),
  applied: v.array(v.string()),
});

/** What a record holds: needs key → value, collect keys, modules reported. */
export type Written = { needs: Map<string, string>; collect: Set<string>; applied: Set<string> };

/** Where `node`'s record is kept under the cache directory: a file of its own per node. */
export function recordPath(cacheDir: string, node: string): string {
  return join(cacheDir, 'written', `${node}.json`);
}

/** The record of `node`'s written keys, as log lines name it. */
const recordName = (cacheDir: string, node: string): RecordName => ({
  path: recordPath(cacheDir, node),
  what: 'the record of written keys',
  instead: `reads ${node}'s keys instead`,
});

/** Reads `node`'s record; undefined when there is none, or it is unreadable or out of shape (said). */
export async function readRecord(cacheDir: string, node: string, log: Logger): Promise<Written | undefined> {
  const record = await readRecordFile(recordName(cacheDir, node), RecordSchema, node, log);
  if (!record) return undefined;
  const { needs, collect, applied } = record;
  return { needs: new Map(Object.entries(needs)), collect: new Set(collect), applied: new Set(applied) };
}

/**
 * Adds `key` to `set` (`on`) or takes it out; says whether that changed the set. A module's every
 * report puts the same key again: the record, unchanged, is not saved again for it.
 */
function markIn(set: Set<string>, key: string, on: boolean): boolean {
  if (set.has(key) === on) return false;
  if (on) set.add(key);
  else set.delete(key);
  return true;
}

/**
 * Keeps the record of `node`'s written keys current: each change saved (atomically: a temp file
 * renamed over it, record-file.ts) RECORD_SAVE_MS after it, a key recorded before its write is asked and forgotten
 * once its delete is done, so a key on the bus is never missing from a saved record.
 */
export class WrittenRecord {
  readonly #written: Written;
  readonly #file: RecordFile;

  constructor(cacheDir: string, node: string, log: Logger, from?: Written) {
    this.#written = from ?? { needs: new Map(), collect: new Set(), applied: new Set() };
    const { needs, collect, applied } = this.#written;
    this.#file = new RecordFile(
      recordName(cacheDir, node),
      () => JSON.stringify({ node, needs: Object.fromEntries(needs), collect: [...collect], applied: [...applied] }),
      log,
    );
  }

  /** A need put (`value`) or deleted (undefined). */
  need(key: string, value: string | undefined): void {
    const needs = this.#written.needs;
    if (value === undefined ? !needs.has(key) : needs.get(key) === value) return;
    if (value === undefined) needs.delete(key);
    else needs.set(key, value);
    this.#changed();
  }

  /** An item put (`on`) or deleted. */
  item(key: string, on: boolean): void {
    if (markIn(this.#written.collect, key, on)) this.#changed();
  }

  /** A module's report put (`on`) or deleted. */
  report(module: string, on: boolean): void {
    if (markIn(this.#written.applied, module, on)) this.#changed();
  }

  /** Saves what is pending now; resolves once saved. */
  flush(): Promise<void> {
    return this.#file.flush();
  }

  #changed(): void {
    this.#file.changed();
  }
}
