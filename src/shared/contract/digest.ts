// The seat's digest: what the composer compares plans by, so it never keeps a second copy of a
// bucket's bytes, and what a rollout's stored state names its content by (its `digest`, DESIGN §12).
import * as crypto from 'node:crypto';

// The one-shot hash (Node 20.12+) is a third cheaper than a Hash object per value; older runtimes get the object.
const oneShot = typeof crypto.hash === 'function' ? crypto.hash : undefined;

/** The sha256 of `data` (bytes, or text as its UTF-8), in base64: equal digests, equal bytes. */
export function digestOf(data: Uint8Array | string): string {
  return oneShot ? oneShot('sha256', data, 'base64') : crypto.createHash('sha256').update(data).digest('base64');
}
