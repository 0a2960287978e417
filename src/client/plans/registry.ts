// The registry (DESIGN §5) says where each kind's values live. This client reads config where the
// registry says it is kept today (mesh-config_resolved), and says so when the seat's registry
// names another place.
import type { NatsConnection } from '@nats-io/transport-node';
import * as v from 'valibot';
import { watchBucket } from '../../shared/bus/watch/bucket.ts';
import type { Watch } from '../../shared/bus/watch/types.ts';
import { CONFIG, REGISTRY_BUCKET } from '../../shared/contract/buckets.ts';
import type { Logger } from '../../shared/cli/log.ts';
import { decodeJson } from '../../shared/contract/decode.ts';

/** Watches the registry's `config` entry and warns when it names a bucket this client does not read. */
export function watchRegistry(nc: NatsConnection, log: Logger): Watch {
  return watchBucket(
    nc,
    REGISTRY_BUCKET,
    'config',
    (e) => {
      if (!e.value) return;
      const entry = decodeJson(v.object({ bucket: v.string() }), e.value);
      if (!entry.ok) log.warn(`${REGISTRY_BUCKET} config: ${entry.reason}`);
      else if (entry.value.bucket !== CONFIG) log.warn(`registry names ${entry.value.bucket} for config; this client reads ${CONFIG}`);
    },
    log,
  );
}
