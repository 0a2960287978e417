// Writes the compiled-in registry (DESIGN §5): only kinds whose value differs, and deletes the rest.
import type { KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { REGISTRY_BUCKET } from '../../shared/contract/buckets.ts';
import { jsonBytes, sameBytes } from '../../shared/base/bytes.ts';
import { readAll } from '../../shared/bus/watch/read-all.ts';
import type { Logger } from '../../shared/cli/log.ts';
import { REGISTRY, type RegistryEntry } from '../../shared/contract/registry.ts';
import { registryKey } from '../../shared/contract/keys.ts';

/** How often the seat writes the registry again. */
export const REGISTRY_INTERVAL_MS = 60 * 60 * 1000;

/** What one sync changed. */
export type RegistrySync = { written: string[]; deleted: string[] };

/** Brings the registry bucket to `table`: a put where the bytes differ, a delete for a kind no domain answers. */
export async function syncRegistry(nc: NatsConnection, kv: KV, log: Logger, table: Readonly<Record<string, RegistryEntry>> = REGISTRY): Promise<RegistrySync> {
  const stored = await readAll(nc, REGISTRY_BUCKET);
  const result: RegistrySync = { written: [], deleted: [] };
  for (const [kind, entry] of Object.entries(table)) {
    const bytes = jsonBytes(entry);
    if (sameBytes(stored.get(kind), bytes)) continue;
    await kv.put(registryKey(kind), bytes);
    result.written.push(kind);
  }
  for (const kind of stored.keys()) {
    if (kind in table) continue;
    await kv.delete(registryKey(kind));
    result.deleted.push(kind);
  }
  if (result.written.length + result.deleted.length > 0) {
    log.info(`registry: wrote ${result.written.join(', ') || 'nothing'}; deleted ${result.deleted.join(', ') || 'nothing'}`);
  }
  return result;
}
