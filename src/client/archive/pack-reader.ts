// One handle of the pack for reads that come together (a start's fills read a thousand archives at
// 32 at a time): opened by the first, kept while reads follow within IDLE_CLOSE_MS, closed once its
// last read is done and no other came, and never used for another file than the one it was opened
// for. A restart with every archive cached read 1,000 of them in 1.40–1.50 s, against 1.58–1.75 s
// opening the pack for each read (bench/cold-cpu.ts --warm-cache, docs/scale.md).
import { unrefTimer } from '../../shared/base/timer.ts';
import { openToRead } from './pack-records.ts';

/** How long a handle no read uses is kept for the next one. */
export const IDLE_CLOSE_MS = 1000;

type Opened = Awaited<ReturnType<typeof openToRead>>;
type Shared = { opened: Promise<Opened>; forIno: number | undefined; users: number; retired: boolean };

/** The reads' handle of the pack at `path`. */
export class PackReader {
  #current: Shared | undefined;
  #idle: { cancel(): void } | undefined;

  constructor(readonly path: string) {}

  /**
   * Runs `read` with a handle of the pack opened while the index described the file `forIno` (undefined:
   * the pack is not there); a handle opened for another file is not reused. Throws what opening threw.
   */
  async use<T>(forIno: number | undefined, read: (opened: Opened) => Promise<T>): Promise<T> {
    this.#idle?.cancel();
    this.#idle = undefined;
    if (this.#current && this.#current.forIno !== forIno) this.#retire(this.#current);
    const shared = (this.#current ??= { opened: openToRead(this.path), forIno, users: 0, retired: false });
    shared.users++;
    try {
      return await read(await shared.opened);
    } catch (err) {
      // A pack it could not open is tried again by the next read, not remembered.
      if (this.#current === shared) this.#retire(shared);
      throw err;
    } finally {
      shared.users--;
      if (shared.retired) this.#closeIfUnused(shared);
      else if (shared.users === 0) this.#idle = unrefTimer(() => this.#retire(shared), IDLE_CLOSE_MS);
    }
  }

  /** Closes the handle once no read uses it (the pack is compacted or the client stops). */
  close(): void {
    this.#idle?.cancel();
    this.#idle = undefined;
    if (this.#current) this.#retire(this.#current);
  }

  #retire(shared: Shared): void {
    if (this.#current === shared) this.#current = undefined;
    shared.retired = true;
    this.#closeIfUnused(shared);
  }

  #closeIfUnused(shared: Shared): void {
    if (shared.users > 0) return;
    void shared.opened.then(
      (opened) => opened?.handle.close(),
      () => undefined,
    );
  }
}
