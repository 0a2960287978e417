// When a connection's watches last heard from JetStream: a message, a heartbeat or a consumer made.
// Only the servers holding the streams send these, so a word heard proves them in reach without a
// request of its own (the client's alive tick asks the hub only when its watches heard nothing).

const lastHeard = new WeakMap<object, number>();

/** Notes that a watch on `nc` heard from JetStream now. */
export function noteHeard(nc: object, at: number = Date.now()): void {
  lastHeard.set(nc, at);
}

/** When a watch on `nc` last heard from JetStream (ms since the epoch), or undefined when none has. */
export function lastHeardOn(nc: object): number | undefined {
  return lastHeard.get(nc);
}
