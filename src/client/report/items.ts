// Recording a module's items in `mesh-provisioner_collect` (DESIGN §7 point 6): only what differs
// from what the bucket holds, items the plan no longer has deleted, a removed module's all.
import type { KV } from '@nats-io/kv';
import { jsonBytes } from '../../shared/base/bytes.ts';
import { COLLECT } from '../../shared/contract/buckets.ts';
import { collectKey } from '../../shared/contract/keys.ts';
import type { Logger } from '../../shared/cli/log.ts';
import type { CollectItem } from '../../shared/contract/collect.ts';
import type { FilledItem } from '../fill/fill.ts';
import { errorText } from '../../shared/base/errors.ts';

/** What the bucket holds of one contributor: collection → content (undefined: an item out of shape). */
export type StoredItems = (contributor: string) => Map<string, string | undefined>;

/** Writes a node's items; what the bucket holds is read from the collected source's watch. */
export class ItemWriter {
  constructor(
    private readonly node: string,
    private readonly kv: Pick<KV, 'put' | 'delete'>,
    private readonly stored: StoredItems,
    private readonly log: Logger,
  ) {}

  /** Makes the bucket hold exactly `items` for `module`; a failed write is said and tried again at the next fill. */
  async record(module: string, items: readonly FilledItem[]): Promise<void> {
    const before = this.stored(module);
    for (const { collection, content } of items) {
      if (before.get(collection) === content) continue;
      const value: CollectItem = { node: this.node, collection, contributor: module, content };
      await this.#write(collection, module, () => this.kv.put(collectKey(this.node, collection, module), jsonBytes(value)));
    }
    const kept = new Set(items.map((i) => i.collection));
    for (const collection of before.keys()) {
      if (!kept.has(collection)) await this.#write(collection, module, () => this.kv.delete(collectKey(this.node, collection, module)));
    }
  }

  /** Deletes every item of `module` (its plan went). */
  async removed(module: string): Promise<void> {
    await this.record(module, []);
  }

  /** Deletes the items of each of `contributors` with no plan in `planned` (its plan went while this client was down). */
  removeUnplanned(planned: ReadonlySet<string>, contributors: Iterable<string>): void {
    for (const contributor of contributors) {
      if (planned.has(contributor)) continue;
      this.log.notice(`${COLLECT}: items of ${contributor}, which has no plan on ${this.node}, deleted`);
      void this.removed(contributor);
    }
  }

  async #write(collection: string, module: string, op: () => Promise<unknown>): Promise<void> {
    try {
      await op();
    } catch (err) {
      this.log.error(`${COLLECT} ${collectKey(this.node, collection, module)}: ${errorText(err)}`);
    }
  }
}
