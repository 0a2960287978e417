// What the metrics read of the seat's liveness memory (DESIGN §14): how many nodes are alive, silent,
// or alive with their engine down, read at each scrape.

/** The nodes that have a plan, by their client's last word. */
export type LivenessCounts = {
  /** Heard within the silent rule's time, engine up. */
  alive: number;
  /** No word for two of its periods + 15 s, or its connection closed and not back within 5 s. */
  silent: number;
  /** Heard, but its client says its engine is down. */
  engineDown: number;
};

/** Where the counts come from; undefined while the seat keeps no liveness, and the figure is left out. */
export type NodesByLiveness = { counts(): LivenessCounts | undefined };

/**
 * The source while the seat has no liveness memory: no figure at all rather than zeros, since
 * `provisioner_nodes{liveness="silent"} 0` would say that no node is silent, which nobody knows.
 */
export const LIVENESS_NOT_KEPT: NodesByLiveness = { counts: () => undefined };
