// The files the engine wrote, per module and path (DESIGN §7.12): kept in a state file, written
// atomically, so that a file whose declaration goes away is removed even across a restart.
import * as v from 'valibot';
import { NAME_PATTERN } from '../shared/contract/keys.ts';
import type { Logger } from '../shared/cli/log.ts';
import { decodeJson } from '../shared/contract/decode.ts';
import { FILE_MODES } from '../shared/contract/composition.ts';
import { writeAtomic } from './writer.ts';
import { errorText } from '../shared/base/errors.ts';
import { readRegularFileIfThere } from '../shared/base/regular-file.ts';

/** The permission bits of the state file: it names paths, which are nobody else's business. */
const STATE_FILE_MODE = 0o600;

/** The largest state file read: a line per file written, far past a node's; short of filling the engine's memory. */
export const MAX_STATE_BYTES = 64 * 1024 * 1024;

/** One file the engine took for a module: written, found unchanged, or a seed kept. */
export type WrittenFile = {
  /** The module whose request named it. */
  module: string;
  /** The path as the request named it (the declaration is matched against it the same way). */
  path: string;
  /** How it was written: what its removal does depends on it. */
  mode: (typeof FILE_MODES)[number];
  /** The comment leader of a `managed` block's BEGIN/END lines, when the request gave one. */
  comment?: string;
};

const StateSchema = v.object({
  files: v.array(
    v.object({
      module: v.pipe(v.string(), v.regex(NAME_PATTERN, 'is not a valid name')),
      path: v.pipe(v.string(), v.minLength(1, 'is empty')),
      mode: v.picklist(FILE_MODES),
      comment: v.optional(v.string()),
    }),
  ),
});

/** The state file beside the journal when --state does not name one; none without either (the record then lives in memory). */
export function defaultStateFile(journalFile: string | undefined): string | undefined {
  return journalFile === undefined ? undefined : `${journalFile}.files.json`;
}

/** The record of what was written, in memory, saved to `file` (when there is one) by flush(). */
export class WrittenRecord {
  readonly #files = new Map<string, WrittenFile>();
  #dirty = false;
  /** Those waiting for what was noted to be saved: the next flush lets them go. */
  #waiting: (() => void)[] = [];

  private constructor(
    private readonly file: string | undefined,
    private readonly log: Logger,
  ) {}

  /**
   * Loads the record from `file`. A missing file is an empty record; one unreadable or out of shape
   * is said and replaced by an empty record: what it named is then not removed, never wrongly removed.
   */
  static async load(file: string | undefined, log: Logger): Promise<WrittenRecord> {
    const record = new WrittenRecord(file, log);
    if (file === undefined) return record;
    // A regular file within its limit: a FIFO in its place must not hang the engine's start, nor a device fill it.
    const read = readRegularFileIfThere(file, MAX_STATE_BYTES);
    if (read.state === 'refused') log.warn(`state unreadable (${read.reason}): starting with an empty record`);
    if (read.state !== 'read') return record;
    const state = decodeJson(StateSchema, read.bytes, { maxBytes: MAX_STATE_BYTES });
    if (!state.ok) log.warn(`state ${file} out of shape (${state.reason}): starting with an empty record`);
    else for (const entry of state.value.files) record.#files.set(idOf(entry), entry);
    return record;
  }

  /** Notes a file a request took; the record changes (and flush writes) only when it is new or its mode or comment changed. */
  note(entry: WrittenFile): void {
    const id = idOf(entry);
    const known = this.#files.get(id);
    if (known && known.mode === entry.mode && known.comment === entry.comment) return;
    this.#files.set(id, { module: entry.module, path: entry.path, mode: entry.mode, ...(entry.comment === undefined ? {} : { comment: entry.comment }) });
    this.#dirty = true;
  }

  /** Drops a file that was removed (or left as a seed). */
  forget(entry: WrittenFile): void {
    if (this.#files.delete(idOf(entry))) this.#dirty = true;
  }

  /** Every file recorded, in path then module order. */
  list(): WrittenFile[] {
    return [...this.#files.values()].sort((a, b) => compare(a.path, b.path) || compare(a.module, b.module));
  }

  /**
   * Resolves once what was noted so far has been saved: by a flush now when `now`, else by the next
   * flush anyone makes. A request with others queued behind it waits for the last of them to save
   * the record once for all (a cold start's thousand requests rewrote the whole record a thousand
   * times: O(N²)); the one that finds none queued saves it at once.
   */
  saved(now: boolean): Promise<void> {
    const waiting = new Promise<void>((resolve) => this.#waiting.push(resolve));
    if (now) void this.flush();
    return waiting;
  }

  /** Saves the record atomically when it changed; a failure is said and tried again at the next flush, never thrown. */
  async flush(): Promise<void> {
    const waiting = this.#waiting;
    this.#waiting = [];
    try {
      if (!this.#dirty || this.file === undefined) return;
      this.#dirty = false;
      try {
        await writeAtomic(this.file, Buffer.from(JSON.stringify({ files: this.list() }) + '\n'), STATE_FILE_MODE);
      } catch (err) {
        this.#dirty = true;
        this.log.error(`state ${this.file} not saved: ${errorText(err)}`);
      }
    } finally {
      // A failed save is said, as before, and does not hold a reply: the record is saved again at the next flush.
      for (const resolve of waiting) resolve();
    }
  }
}

function idOf(entry: WrittenFile): string {
  return `${entry.module}\n${entry.path}`;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
