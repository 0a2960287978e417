// A plan key's node, as the liveness memory counts plans per node.

/** The first token of a key (`<node>.<module>` → `<node>`); a key out of shape counts under its first token, as the composer sees it. */
export function firstToken(key: string): string {
  const dot = key.indexOf('.');
  return dot < 0 ? key : key.slice(0, dot);
}
