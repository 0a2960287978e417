// Writing a published module (DESIGN §3, §13): both buckets bound first — refused when one holds
// more than its own subject, created as `init` would on a bus without isolation — then the archive,
// then the composition that names it, so no composition ever names an archive not there yet.
import { Objm } from '@nats-io/obj';
import type { NatsConnection } from '@nats-io/transport-node';
import { kvBucket, objBucket } from '../../../shared/contract/bucket-spec.ts';
import { MODULES } from '../../../shared/contract/buckets.ts';
import { openKv } from '../../../shared/bus/bus.ts';
import { errorText } from '../../../shared/base/errors.ts';
import { DEFAULT_REPLICAS } from '../../options.ts';
import { bindInputBucket } from '../input-bucket.ts';

/** What to write. */
export type Publication = {
  /** The archives object store. */
  archives: string;
  /** The archive's name in it. */
  name: string;
  /** The archive's bytes. */
  bytes: Uint8Array;
  /** The module: the composition's key. */
  module: string;
  /** The build the composition names. */
  build: string;
  /** The composition's JSON bytes, archive filled in. */
  composition: Uint8Array;
};

/** What was written: the composition's revision in `mesh-catalog_modules`. */
export type Stored = { revision: number };

/**
 * Binds both buckets, then puts the archive and the composition. A bucket missing on a bus with
 * isolation, or holding more than its bucket, throws before anything is written; `warn` hears what
 * is said of a bucket without refusing it.
 */
export async function storePublication(nc: NatsConnection, p: Publication, warn: (line: string) => void): Promise<Stored> {
  // Without isolation a bucket made here is made as `init` makes it, sized for the default mesh; with it, `init` must have.
  await bindInputBucket(nc, objBucket(p.archives), DEFAULT_REPLICAS, warn);
  await bindInputBucket(nc, kvBucket(MODULES), DEFAULT_REPLICAS, warn);
  const modules = await openKv(nc, MODULES);
  const store = await new Objm(nc).open(p.archives);
  await store.putBlob({ name: p.name }, p.bytes);
  try {
    return { revision: await modules.put(p.module, p.composition) };
  } catch (err) {
    throw new Error(`archive ${p.name} was put, but not the composition that names it: ${errorText(err)}`, { cause: err });
  }
}
