// What a watch hands its caller (DESIGN §11): the events it delivers and the handle that stops it.

/**
 * One change seen by a watch: a put (with its value) or a delete; `at` is when the bus stored it (ms
 * since the epoch, the server's clock), absent for a delete the watch infers from a re-read.
 */
export type WatchEvent = { key: string; revision: number; value: Uint8Array | null; at?: number };

/** A running watch. */
export type Watch = {
  /** Resolves once every value present when the watch began has been delivered. */
  caughtUp: Promise<void>;
  /**
   * Resolves once the watch has caught up, or once the bus answered that its bucket is not there
   * (missing, or not granted): either way its values are all there is to read for now. A bus that
   * leaves the watch unanswered settles nothing. Absent: `caughtUp` says it.
   */
  settled?: Promise<void>;
  /**
   * Holds a key its caller read outside the watch (a direct get) at `revision`: a re-read from the
   * start (the stream came back holding less) that does not deliver it again says it gone, as it does
   * a key the watch delivered. Absent: the watch is not made yet.
   */
  hold?(key: string, revision: number): void;
  /** Stops the watch. */
  stop(): void;
};
