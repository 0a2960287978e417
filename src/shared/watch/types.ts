// What a watch hands its caller (DESIGN §11): the events it delivers and the handle that stops it.

/** One change seen by a watch: a put (with its value) or a delete. */
export type WatchEvent = { key: string; revision: number; value: Uint8Array | null };

/** A running watch. */
export type Watch = {
  /** Resolves once every value present when the watch began has been delivered. */
  caughtUp: Promise<void>;
  /** Stops the watch. */
  stop(): void;
};
