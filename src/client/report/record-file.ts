// A record the client keeps in its cache directory (the keys it wrote, report/written.ts; its plans,
// plans/record.ts): a JSON text saved RECORD_SAVE_MS after a change and on flush, atomically (a temp
// file renamed over it), never past MAX_RECORD_BYTES, a failing save said once until one works again.
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import * as v from 'valibot';
import { errorText } from '../../shared/base/errors.ts';
import type { Logger } from '../../shared/cli/log.ts';

/** A record past this many bytes is not kept (the next start reads from the bus instead). */
export const MAX_RECORD_BYTES = 16 * 1024 * 1024;

/** How long after a change a record is saved: the changes of one burst are saved once. */
export const RECORD_SAVE_MS = 200;

/** What a record names: the path of its file, itself in log lines (`the record of plans`), and what a start does without it (`reads n1's plans whole`). */
export type RecordName = { path: string; what: string; instead: string };

/**
 * Reads the record `name` as `schema` says, for `node`; undefined when there is none, or it is
 * unreadable or out of shape (said).
 */
export async function readRecordFile<S extends v.GenericSchema<unknown, { node: string }>>(
  name: RecordName,
  schema: S,
  node: string,
  log: Logger,
): Promise<v.InferOutput<S> | undefined> {
  let text: string;
  try {
    text = await readFile(name.path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') log.warn(`${name.path}: cannot read ${name.what}: ${errorText(err)}; this start ${name.instead}`);
    return undefined;
  }
  let parsed: v.SafeParseResult<S> | undefined;
  try {
    parsed = v.safeParse(schema, JSON.parse(text));
  } catch {
    parsed = undefined;
  }
  if (!parsed?.success || parsed.output.node !== node) {
    log.warn(`${name.path}: ${name.what} is out of shape; this start ${name.instead}`);
    return undefined;
  }
  return parsed.output;
}

/** The file of one record, saved as `text()` says. */
export class RecordFile {
  #timer: NodeJS.Timeout | undefined;
  /** When the pending save is due (ms since the epoch). */
  #due = 0;
  #saving: Promise<void> = Promise.resolve();
  #tooLarge = false;
  #failing = false;

  constructor(
    private readonly name: RecordName,
    private readonly text: () => string,
    private readonly log: Logger,
  ) {}

  /**
   * The record changed: saved within `within` ms (RECORD_SAVE_MS by default), or sooner when a save
   * is already due sooner; on flush in any case. The timer never keeps the process up.
   */
  changed(within = RECORD_SAVE_MS): void {
    const due = Date.now() + within;
    if (this.#timer) {
      if (this.#due <= due) return;
      clearTimeout(this.#timer);
    }
    this.#due = due;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#saving = this.#saving.then(() => this.#save());
    }, within).unref();
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

  /** Removes the file, after any save under way, and drops a save pending. */
  remove(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = undefined;
    const { path, what } = this.name;
    this.#saving = this.#saving.then(() =>
      rm(path, { force: true }).catch((err: unknown) => this.log.warn(`${path}: cannot remove ${what}: ${errorText(err)}`)),
    );
  }

  async #save(): Promise<void> {
    const { path, what, instead } = this.name;
    const temp = `${path}.${process.pid}.tmp`;
    const text = this.text();
    try {
      if (Buffer.byteLength(text) > MAX_RECORD_BYTES) {
        if (!this.#tooLarge) this.log.warn(`${path}: ${what} is past ${MAX_RECORD_BYTES} bytes; not kept (the next start ${instead})`);
        this.#tooLarge = true;
        return await rm(path, { force: true });
      }
      this.#tooLarge = false;
      await mkdir(dirname(path), { recursive: true });
      await writeFile(temp, text);
      await rename(temp, path);
      if (this.#failing) this.log.info(`${path}: ${what} is saved again`);
      this.#failing = false;
    } catch (err) {
      // A full disk would refuse every save: said once, until one works again.
      const line = `${path}: cannot save ${what}: ${errorText(err)}`;
      if (this.#failing) this.log.debug(line);
      else this.log.warn(line);
      this.#failing = true;
      await rm(temp, { force: true }).catch(() => {});
    }
  }
}
