// Config values (`${config:<key>}`): mesh-config's resolved values for this node, kept by module
// then key: each key a template names read by literal direct get, kept current by a watch of `<node>.>`
// in `mesh-config_resolved` that begins at the stream's tail (sources/keyed.ts says why).
import type { NatsConnection } from '@nats-io/transport-node';
import { KeyedReads } from './keyed.ts';
import { CONFIG } from '../../shared/contract/buckets.ts';
import { configKey, parseConfigKey } from '../../shared/contract/keys.ts';
import type { Logger } from '../../shared/cli/log.ts';
import type { Lookup, OnChange, Source, ValueFrom, Wanted } from './source.ts';
import type { Plan } from '../../shared/contract/plan.ts';
import { didYouMean } from '../../shared/base/nearest.ts';
import { errorText } from '../../shared/base/errors.ts';

// A value keeps every byte, a leading byte-order mark too.
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** A config value as held: its bytes and the entry it came from (made once per entry, handed with every lookup). */
type Held = { bytes: Uint8Array; from?: ValueFrom };

/** The config values of one node, by module then key, as `mesh-config_resolved` holds them. */
export class ConfigValues {
  readonly #byModule = new Map<string, Map<string, Held>>();

  constructor(private readonly node: string) {}

  /**
   * Records a value (null: deleted) and the entry it came from: its bus key as the watch delivered
   * it and its revision (the entry's stream sequence).
   */
  set(module: string, key: string, value: Uint8Array | null, entry?: { key: string; revision: number }): void {
    const values = this.#byModule.get(module) ?? this.#byModule.set(module, new Map()).get(module)!;
    if (value === null) values.delete(key);
    else values.set(key, entry ? { bytes: value, from: [{ kind: 'config', key: entry.key, rev: entry.revision }] } : { bytes: value });
  }

  /**
   * The value of `key` for `module` as text; a value that is not UTF-8 fails the files naming it.
   * A key the module has not got waits, with the nearest key it has as a hint (a typo in a
   * template's `${config:colr}` waits for ever otherwise, saying nothing).
   */
  lookup(module: string, key: string, reads?: Pick<KeyedReads, 'want' | 'prefixRead'> & { readPrefix(module: string): Promise<void> }): Lookup {
    const values = this.#byModule.get(module);
    const held = values?.get(key);
    if (!held) {
      const read = reads?.want(configKey(this.node, module, key));
      if (read?.state === 'unread') return { state: 'waiting', unread: read.read };
      // Known absent: the hint reads the module's keys once (a failure path), so the report says it at once.
      if (reads && !reads.prefixRead(module)) return { state: 'waiting', unread: reads.readPrefix(module) };
      const hint = values === undefined ? undefined : didYouMean(key, values.keys());
      return hint === undefined ? { state: 'waiting' } : { state: 'waiting', notes: [`config:${key}: ${hint}`] };
    }
    try {
      const text = UTF8.decode(held.bytes);
      return held.from ? { state: 'value', text, from: held.from } : { state: 'value', text };
    } catch {
      return { state: 'failed', reason: `${CONFIG} ${configKey(this.node, module, key)}: value is not UTF-8` };
    }
  }
}

/** The dependency key of a module's config key. */
export function configDependency(module: string, key: string): string {
  return `config:${module}:${key}`;
}

/**
 * The dependency key of a module's set of config keys, which a waiting key's hint reads: any key of
 * the module set or removed changes it. One colon only, so no `prov.changed` notice is made of it.
 */
export function configKeysDependency(module: string): string {
  return `config-keys:${module}`;
}

/** Starts the config source of `node`: its watch runs until stopped, and says each changed key. */
export function configSource(nc: NatsConnection, node: string, log: Logger, onChange: OnChange): Source & { values: ConfigValues } {
  const values = new ConfigValues(node);
  const reads = new KeyedReads(
    nc,
    CONFIG,
    node,
    (e) => {
      const key = parseConfigKey(e.key);
      if (!key.ok) return log.warn(`${CONFIG} ${e.key}: key out of shape: ${key.reason}`);
      values.set(key.value.module, key.value.key, e.value, e);
      onChange([configDependency(key.value.module, key.value.key), configKeysDependency(key.value.module)]);
    },
    log,
  );
  // The module's keys read once for a hint: told as a change of its key set, which a waiting key's fill read.
  const hinted = new Set<string>();
  const failed = new Set<string>();
  const hinting = {
    want: (key: string) => reads.want(key),
    // A hint whose read failed is given up: the key is said waited for without one.
    prefixRead: (module: string) => reads.prefixRead(module) || failed.has(module),
    readPrefix(module: string): Promise<void> {
      const read = reads.readPrefix(module).catch((err: unknown) => {
        failed.add(module);
        log.warn(`${CONFIG}: reading ${node}.${module}.> for a hint: ${errorText(err)}`);
      });
      if (!hinted.has(module)) void read.then(() => onChange([configKeysDependency(module)]));
      hinted.add(module);
      return read;
    },
  };
  return {
    name: 'config',
    values,
    lookup: (plan: Plan, wanted: Wanted) => {
      const found = values.lookup(plan.module, wanted.name, hinting);
      const dependency = configDependency(plan.module, wanted.name);
      // A waiting key's hint reads the module's other keys: one set or removed fills the module again.
      return found.state === 'waiting' ? { ...found, dependency, alsoRead: configKeysDependency(plan.module) } : { ...found, dependency };
    },
    caughtUp: reads.caughtUp,
    settled: () => reads.settled(),
    readWhole: () => reads.readWhole(),
    stop: () => reads.stop(),
  };
}
