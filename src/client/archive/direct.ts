// Reading an object of the NATS object store by direct get (DESIGN §7.1): the object's meta by
// `last_by_subj`, then its chunks one after another by `next_by_subj`. nats.js's ObjectStore.get
// creates and deletes an ordered consumer per object, and nats-server 2.9 answers JetStream API
// calls one at a time (3 ms an object however many are read at once: 1,000 archives cost 3 s);
// direct gets are answered in parallel. The object store's stream has `allow_direct` set.
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { parseBoundedJson } from '../../shared/contract/limits.ts';

/** An object's meta as the object store keeps it (the fields read here). */
type ObjectMeta = { nuid?: unknown; size?: unknown; chunks?: unknown; deleted?: unknown };

/**
 * Reads objects by direct get: the bytes, null when the object is absent or deleted, undefined
 * when direct get is not possible here (not granted, not allowed on the stream, out of shape), so
 * the caller reads it the library's way instead. Bytes past `maxBytes` are not read: a result
 * longer than `maxBytes` says so.
 */
export function directObjectReader(nc: NatsConnection): (bucket: string, name: string, maxBytes: number) => Promise<Uint8Array | null | undefined> {
  let jsm: Promise<JetStreamManager> | undefined;
  // A bucket direct get failed on (a stream that does not allow it, a grant that does not cover it,
  // a missing stream nobody answers for) is read the library's way from then on: one wait, not one per archive.
  const refused = new Set<string>();
  return async (bucket, name, maxBytes) => {
    if (refused.has(bucket)) return undefined;
    try {
      jsm ??= jetstreamManager(nc, { checkAPI: false, timeout: DIRECT_TIMEOUT_MS });
      const direct = (await jsm).direct;
      const stream = `OBJ_${bucket}`;
      const metaMsg = await direct.getMessage(stream, { last_by_subj: `$O.${bucket}.M.${base64UrlPadded(name)}` });
      if (!metaMsg) return null;
      const parsed = parseBoundedJson(metaMsg.data, { maxBytes: MAX_OBJECT_META_BYTES });
      if (!parsed.ok || typeof parsed.value !== 'object' || parsed.value === null) return undefined;
      const meta = parsed.value as ObjectMeta;
      if (meta.deleted === true) return null;
      if (typeof meta.nuid !== 'string' || typeof meta.size !== 'number' || typeof meta.chunks !== 'number') return undefined;
      if (meta.size > maxBytes) return new Uint8Array(maxBytes + 1);
      const out = new Uint8Array(meta.size);
      let offset = 0;
      let seq = 0;
      for (let chunk = 0; chunk < meta.chunks; chunk++) {
        const msg = await direct.getMessage(stream, { seq: seq + 1, next_by_subj: `$O.${bucket}.C.${meta.nuid}` });
        if (!msg || offset + msg.data.length > meta.size) return undefined;
        out.set(msg.data, offset);
        offset += msg.data.length;
        seq = msg.seq;
      }
      return offset === meta.size ? out : undefined;
    } catch {
      refused.add(bucket);
      return undefined;
    }
  };
}

/** The largest object meta read here (name, digest, sizes, a few headers); a larger one is read the library's way. */
const MAX_OBJECT_META_BYTES = 64 * 1024;

/**
 * How long one direct get may take before the bucket is read the library's way. A fleet started
 * together waits seconds for its answers (docs/scale.md): at 1 s, most clients of a hundred started
 * at once gave up direct get for good and read every archive through a consumer of their own.
 */
export const DIRECT_TIMEOUT_MS = 5000;

/** An object's name as its meta subject carries it: base64url with padding. */
function base64UrlPadded(name: string): string {
  const plain = Buffer.from(name, 'utf8').toString('base64url');
  return plain + '='.repeat((4 - (plain.length % 4)) % 4);
}
