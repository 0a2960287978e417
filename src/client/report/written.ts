// The record of the keys a node's client wrote (issue 34): its needs (with their values), its items
// and the modules it reported, kept in its cache directory, so that a start deletes what modules gone
// while it was down left behind by key — where a read of `<node>.>` from sequence 1 would scan every
// subject of the stream on nats-server 2.9 (docs/decisions.md).
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as v from 'valibot';
import { errorText } from '../../shared/base/errors.ts';
import type { Logger } from '../../shared/cli/log.ts';

/** A record past this many bytes is not kept (the next start reads the node's keys once instead). */
export const MAX_RECORD_BYTES = 16 * 1024 * 1024;

/** How long after a write the record is saved: the writes of one burst are saved once. */
export const RECORD_SAVE_MS = 200;

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

/** Reads `node`'s record; undefined when there is none, or it is unreadable or out of shape (said). */
export async function readRecord(cacheDir: string, node: string, log: Logger): Promise<Written | undefined> {
  const path = recordPath(cacheDir, node);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') log.warn(`${path}: cannot read the record of written keys: ${errorText(err)}`);
    return undefined;
  }
  let parsed: v.SafeParseResult<typeof RecordSchema>;
  try {
    parsed = v.safeParse(RecordSchema, JSON.parse(text));
  } catch {
    parsed = { success: false } as v.SafeParseResult<typeof RecordSchema>;
  }
  if (!parsed.success || parsed.output.node !== node) {
    log.warn(`${path}: the record of written keys is out of shape; this start reads ${node}'s keys instead`);
    return undefined;
  }
  const { needs, collect, applied } = parsed.output;
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
 * renamed over it) RECORD_SAVE_MS after it, a key recorded before its write is asked and forgotten
 * once its delete is done, so a key on the bus is never missing from a saved record.
 */
export class WrittenRecord {
  readonly #written: Written;
  #timer: NodeJS.Timeout | undefined;
  #saving: Promise<void> = Promise.resolve();
  #tooLarge = false;

  constructor(
    private readonly cacheDir: string,
    private readonly node: string,
    private readonly log: Logger,
    from?: Written,
  ) {
    this.#written = from ?? { needs: new Map(), collect: new Set(), applied: new Set() };
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
  async flush(): Promise<void> {
    if (this.#timer) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
      this.#saving = this.#saving.then(() => this.#save());
    }
    await this.#saving;
  }

  #changed(): void {
    this.#timer ??= setTimeout(() => {
      this.#timer = undefined;
      this.#saving = this.#saving.then(() => this.#save());
    }, RECORD_SAVE_MS);
  }

  async #save(): Promise<void> {
    const path = recordPath(this.cacheDir, this.node);
    const { needs, collect, applied } = this.#written;
    const text = JSON.stringify({ node: this.node, needs: Object.fromEntries(needs), collect: [...collect], applied: [...applied] });
    try {
      if (Buffer.byteLength(text) > MAX_RECORD_BYTES) {
        if (!this.#tooLarge)
          this.log.warn(`${path}: the record of written keys is past ${MAX_RECORD_BYTES} bytes; not kept (the next start reads ${this.node}'s keys instead)`);
        this.#tooLarge = true;
        return await rm(path, { force: true });
      }
      this.#tooLarge = false;
      await mkdir(join(this.cacheDir, 'written'), { recursive: true });
      const temp = `${path}.${process.pid}.tmp`;
      await writeFile(temp, text);
      await rename(temp, path);
    } catch (err) {
      this.log.warn(`${path}: cannot save the record of written keys: ${errorText(err)}`);
    }
  }
}
