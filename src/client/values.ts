// The values a node's templates read from the bus, kept current by watches, and looked up per module.
import { CONFIG } from '../shared/buckets.ts';
import type { Resolver } from './fill.ts';

// A value keeps every byte, a leading byte-order mark too.
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Kinds that have an issue of their own and wait here until it lands. */
const NOT_YET_FILLED = new Set(['collected', 'shell', 'environment', 'contribution', 'consumers', 'bound']);

/** The config values of one node, by module then key, as `mesh-config_resolved` holds them. */
export class NodeValues {
  readonly #config = new Map<string, Map<string, Uint8Array>>();

  constructor(private readonly node: string) {}

  /** Records a config value (null: deleted). */
  setConfig(module: string, key: string, value: Uint8Array | null): void {
    const values = this.#config.get(module) ?? this.#config.set(module, new Map()).get(module)!;
    if (value === null) values.delete(key);
    else values.set(key, value);
  }

  /** The resolver for one module's placeholders of the kinds the bus holds. */
  resolver(module: string): Resolver {
    return (kind, name) => {
      if (kind === 'config') {
        const bytes = this.#config.get(module)?.get(name);
        if (!bytes) return { state: 'waiting' };
        try {
          return { state: 'value', text: UTF8.decode(bytes) };
        } catch {
          return { state: 'failed', reason: `${CONFIG} ${this.node}.${module}.${name}: value is not UTF-8` };
        }
      }
      if (NOT_YET_FILLED.has(kind)) return { state: 'waiting' };
      return { state: 'failed', reason: `unknown kind "${kind}"` };
    };
  }
}
