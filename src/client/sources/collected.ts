// Collections (DESIGN §7 points 6–7): the items every module of this node contributes, kept by
// collection then contributor: each key `<node>.<collection>.<contributor>` of a planned module whose
// plan has an item of that collection (a node's contributors are its own modules) read by literal
// direct get, kept current by a watch of `<node>.>` in `mesh-provisioner_collect` that begins at the
// stream's tail (sources/keyed.ts);
// a collector's `${collected:<collection>}` (or `${shell:…}`, `${environment:…}`,
// `${contribution:…}` for the collection of the same full name) reads them all.
import type { NatsConnection } from '@nats-io/transport-node';
import { COLLECT } from '../../shared/contract/buckets.ts';
import { collectKey, compareKeys, keyDisagreement, parseCollectKey } from '../../shared/contract/keys.ts';
import { KeyedReads } from './keyed.ts';
import type { Logger } from '../../shared/cli/log.ts';
import { CollectItemSchema } from '../../shared/contract/collect.ts';
import { decodeJson } from '../../shared/contract/decode.ts';
import type { Plan } from '../../shared/contract/plan.ts';
import type { Lookup, OnChange, Source, ValueFrom, Wanted } from './source.ts';
import { collectionOf, declaredCollection } from '../../module/plan-names.ts';

/** One contributor's item of a collection: its content (and its entry's revision), or why it was left out. */
export type StoredItem = { key: string; content: string; rev?: number } | { key: string; reason: string };

/** The dependency key of a collection on this node. */
export function collectionDependency(collection: string): string {
  return `collected:${collection}`;
}

/** The items of one node, by collection then contributor, as the bucket holds them. */
export class NodeItems {
  readonly #byCollection = new Map<string, Map<string, StoredItem>>();
  /** Each collection's items in contributor order, and its inputs by the kind reading it: made on first use after it changed. */
  readonly #sorted = new Map<string, readonly [contributor: string, item: StoredItem][]>();
  readonly #from = new Map<string, Map<string, ValueFrom>>();

  /** `node`: the node whose items these are. */
  constructor(readonly node: string) {}

  /**
   * Takes a key's new value (null: deleted) and its entry's revision; returns the collection it
   * changed, or undefined when the key is out of shape (said by the caller with the reason).
   */
  set(key: string, value: Uint8Array | null, revision?: number): { collection: string } | { reason: string } {
    const parsed = parseCollectKey(key);
    if (!parsed.ok) return { reason: parsed.reason };
    if (parsed.value.node !== this.node) return { reason: `names node ${parsed.value.node}` };
    const { collection, contributor } = parsed.value;
    this.#from.delete(collection);
    this.#sorted.delete(collection);
    const items = this.#byCollection.get(collection) ?? this.#byCollection.set(collection, new Map()).get(collection)!;
    if (value === null) {
      items.delete(contributor);
      if (items.size === 0) this.#byCollection.delete(collection);
      return { collection };
    }
    const decoded = decodeJson(CollectItemSchema, value);
    const disagreement = decoded.ok ? keyDisagreement(parsed.value, decoded.value) : undefined;
    const reason = !decoded.ok ? decoded.reason : disagreement;
    const rev = revision === undefined ? {} : { rev: revision };
    items.set(contributor, reason === undefined && decoded.ok ? { key, content: decoded.value.content, ...rev } : { key, reason: reason ?? 'out of shape' });
    return { collection };
  }

  /**
   * The inputs of a collection read as `kind` (DESIGN §14): each item that goes into it, in the order
   * filled; the same array until the collection changes. Empty when no item's revision is known.
   */
  fromOf(collection: string, kind: string): ValueFrom {
    const byKind = this.#from.get(collection) ?? this.#from.set(collection, new Map()).get(collection)!;
    let from = byKind.get(kind);
    if (!from) {
      from = this.itemsOf(collection).flatMap(([, item]) => ('content' in item && item.rev !== undefined ? [{ kind, key: item.key, rev: item.rev }] : []));
      byKind.set(kind, from);
    }
    return from;
  }

  /** The items of a collection in byte order of their contributors' names, sorted once per change of the collection. */
  itemsOf(collection: string): readonly [contributor: string, item: StoredItem][] {
    let sorted = this.#sorted.get(collection);
    if (!sorted) this.#sorted.set(collection, (sorted = [...(this.#byCollection.get(collection) ?? [])].sort(([a], [b]) => compareKeys(a, b))));
    return sorted;
  }

  /** What the bucket holds of `contributor`: collection → content (undefined for an item out of shape). */
  itemsOfContributor(contributor: string): Map<string, string | undefined> {
    const out = new Map<string, string | undefined>();
    for (const [collection, items] of this.#byCollection) {
      const item = items.get(contributor);
      if (item) out.set(collection, 'content' in item ? item.content : undefined);
    }
    return out;
  }

  /** Every contributor with an item. */
  contributors(): Set<string> {
    return new Set([...this.#byCollection.values()].flatMap((items) => [...items.keys()]));
  }
}

/**
 * Assembles a collection for a collector whose plan declares it: every valid item, each introduced
 * by the line `<comment> <contributor>` and ending with a newline; an item that does not validate
 * is left out and said in `notes` (its key and reason). A collection with no item is empty.
 */
export function assemble(plan: Plan, items: NodeItems, wanted: Wanted): Lookup {
  const declared = declaredCollection(plan, wanted);
  if ('reason' in declared) return { state: 'failed', reason: declared.reason };
  const parts: string[] = [];
  const notes: string[] = [];
  for (const [contributor, item] of items.itemsOf(declared.name)) {
    if ('reason' in item) {
      notes.push(`${COLLECT} ${item.key} left out: ${item.reason}`);
      continue;
    }
    parts.push(`${declared.comment} ${contributor}\n`, item.content.endsWith('\n') || item.content === '' ? item.content : item.content + '\n');
  }
  const from = items.fromOf(declared.name, wanted.kind);
  return { state: 'value', text: parts.join(''), ...(notes.length > 0 ? { notes } : {}), ...(from.length > 0 ? { from } : {}) };
}

/** The keys of `node`'s items its plans say are there to read, by collection: one per module with an item of it. */
export function plannedItemKeys(node: string, plans: ReadonlyMap<string, Plan>): Map<string, string[]> {
  const byCollection = new Map<string, string[]>();
  for (const [module, plan] of plans)
    for (const item of plan.items) {
      const keys = byCollection.get(item.collection) ?? byCollection.set(item.collection, []).get(item.collection)!;
      keys.push(collectKey(node, item.collection, module));
    }
  return byCollection;
}

/** Starts the collected source of `items`' node: its items read by key and kept in `items`, saying each changed collection. */
export function collectedSource(nc: NatsConnection, items: NodeItems, log: Logger, onChange: OnChange): Source {
  const reads = new KeyedReads(
    nc,
    COLLECT,
    items.node,
    (e) => {
      const changed = items.set(e.key, e.value, e.revision);
      if ('reason' in changed) return log.warn(`${COLLECT} ${e.key}: key out of shape: ${changed.reason}`);
      onChange([collectionDependency(changed.collection)]);
    },
    log,
  );
  let planned = new Map<string, string[]>();
  // A collection whose planned items are not all read yet is not filled: its collector's report waits for them.
  const unread = (collection: string): Promise<void> | undefined => {
    const pending = (planned.get(collection) ?? []).flatMap((key) => {
      const read = reads.want(key);
      return read.state === 'unread' ? [read.read] : [];
    });
    return pending.length === 0 ? undefined : Promise.all(pending).then(() => undefined);
  };
  return {
    name: 'collected',
    lookup: (plan, wanted) => {
      const dependency = collectionDependency(collectionOf(wanted));
      const found = assemble(plan, items, wanted);
      const pending = found.state === 'failed' ? undefined : unread(collectionOf(wanted));
      return pending ? { state: 'waiting', unread: pending, dependency } : { ...found, dependency };
    },
    plansChanged(plans) {
      planned = plannedItemKeys(items.node, plans);
      for (const keys of planned.values()) for (const key of keys) reads.want(key);
    },
    caughtUp: reads.caughtUp,
    settled: () => reads.settled(),
    stop: () => reads.stop(),
  };
}
