// Config values (`${config:<key>}`): mesh-config's resolved values for this node, one filtered
// watch of `<node>.>` in `mesh-config_resolved`, kept by module then key.
import type { NatsConnection } from '@nats-io/transport-node';
import { watchBucket } from '../../shared/watch/bucket.ts';
import type { Watch } from '../../shared/watch/types.ts';
import { CONFIG } from '../../shared/buckets.ts';
import { configKey, parseConfigKey } from '../../shared/keys.ts';
import type { Logger } from '../../shared/log.ts';
import type { Lookup, OnChange, Source, Wanted } from './source.ts';
import type { Plan } from '../../shared/schemas.ts';

// A value keeps every byte, a leading byte-order mark too.
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The config values of one node, by module then key, as `mesh-config_resolved` holds them. */
export class ConfigValues {
  readonly #byModule = new Map<string, Map<string, Uint8Array>>();

  constructor(private readonly node: string) {}

  /** Records a value (null: deleted). */
  set(module: string, key: string, value: Uint8Array | null): void {
    const values = this.#byModule.get(module) ?? this.#byModule.set(module, new Map()).get(module)!;
    if (value === null) values.delete(key);
    else values.set(key, value);
  }

  /** The value of `key` for `module` as text; a value that is not UTF-8 fails the files naming it. */
  lookup(module: string, key: string): Lookup {
    const bytes = this.#byModule.get(module)?.get(key);
    if (!bytes) return { state: 'waiting' };
    try {
      return { state: 'value', text: UTF8.decode(bytes) };
    } catch {
      return { state: 'failed', reason: `${CONFIG} ${configKey(this.node, module, key)}: value is not UTF-8` };
    }
  }
}

/** The dependency key of a module's config key. */
export function configDependency(module: string, key: string): string {
  return `config:${module}:${key}`;
}

/** Starts the config source of `node`: its watch runs until stopped, and says each changed key. */
export function configSource(nc: NatsConnection, node: string, log: Logger, onChange: OnChange): Source & { values: ConfigValues } {
  const values = new ConfigValues(node);
  const watch: Watch = watchBucket(
    nc,
    CONFIG,
    `${node}.>`,
    (e) => {
      const key = parseConfigKey(e.key);
      if (!key.ok) return log.warn(`${CONFIG} ${e.key}: key out of shape: ${key.reason}`);
      values.set(key.value.module, key.value.key, e.value);
      onChange([configDependency(key.value.module, key.value.key)]);
    },
    log,
  );
  return {
    name: 'config',
    values,
    lookup: (plan: Plan, wanted: Wanted) => ({ ...values.lookup(plan.module, wanted.name), dependency: configDependency(plan.module, wanted.name) }),
    caughtUp: watch.caughtUp,
    settled: () => watch.settled ?? watch.caughtUp,
    stop: () => watch.stop(),
  };
}
