// The helper's side of `<provider>_bound` (DESIGN §3): opened (created when missing) at start, read
// back through the same schema the node's client reads it with, and written only where the bytes
// differ. Nothing here looks at credentials: what is handed to `put` was screened before.
import type { KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { BIND_TIMING } from '../shared/bus/bucket-bind.ts';
import { ensureKv } from '../shared/bus/bus.ts';
import { jsonBytes, sameBytes } from '../shared/base/bytes.ts';
import { readAll } from '../shared/bus/watch/read-all.ts';
import { boundBucket, parseBoundKey } from '../shared/contract/keys.ts';
import { BoundEntrySchema } from '../shared/contract/bound-entry.ts';
import { decodeJson } from '../shared/contract/decode.ts';
import type { BoundValue, Served } from './types.ts';

/** A bound entry of the helper's provision found at start. */
export type StoredEntry = {
  /** Its key. */
  key: string;
  /** Whose it is. */
  consumer: { node: string; module: string; local: string | null };
  /** What was served, when the entry says so; absent for a refusal or an entry out of shape. */
  served?: Served;
  /** The request the entry answers (`for`), when it says one. */
  answers?: string;
};

/** What the store says: a line for the helper's log. */
export type StoreSay = (level: 'info' | 'warn', line: string) => void;

/** `<provider>_bound` as one helper writes it; see the file's comment. */
export class BoundStore {
  readonly #kv: KV;
  /** The bytes last put at each key this helper holds (read back at start, then its own writes). */
  readonly #published = new Map<string, Uint8Array>();

  private constructor(kv: KV) {
    this.#kv = kv;
  }

  /**
   * Opens the bucket of `provider` and reads back its entries of `provision`; a key out of shape is
   * left alone, an entry out of shape is said and kept as published (so it is served or withdrawn).
   */
  static async open(
    nc: NatsConnection,
    provider: string,
    provision: string,
    replicas: number,
    say: StoreSay,
  ): Promise<{ store: BoundStore; found: StoredEntry[] }> {
    const bucket = boundBucket(provider);
    // One ask a try: the helper's loop tries again, saying a bus that does not answer once (reconciler.ts).
    const kv = await ensureKv(nc, bucket, replicas, (line) => say('warn', line), BIND_TIMING);
    const store = new BoundStore(kv);
    const found: StoredEntry[] = [];
    for (const [key, bytes] of await readAll(nc, bucket, '>')) {
      const parsed = parseBoundKey(key);
      if (!parsed.ok) {
        say('warn', `${bucket} ${key}: key out of shape (${parsed.reason}); left alone`);
        continue;
      }
      const { node, module, provision: its, local } = parsed.value;
      if (its !== provision) continue;
      store.#published.set(key, bytes);
      const entry = decodeJson(BoundEntrySchema, bytes);
      const consumer = { node, module, local: local ?? null };
      if (!entry.ok) say('warn', `${bucket} ${key}: out of shape (${entry.reason}); serving it again`);
      const answers = entry.ok && entry.value.for !== undefined ? { answers: entry.value.for } : {};
      if (entry.ok && 'as' in entry.value) found.push({ key, consumer, served: { user: entry.value.user, values: entry.value.values }, ...answers });
      else found.push({ key, consumer, ...answers });
    }
    say('info', `${bucket}: ${found.length} bound entries of ${provision} at start`);
    return { store, found };
  }

  /** Whether the helper holds an entry at `key`. */
  has(key: string): boolean {
    return this.#published.has(key);
  }

  /** Puts `value` at `key` unless the same bytes are there already. */
  async put(key: string, value: BoundValue): Promise<void> {
    const bytes = jsonBytes(value);
    if (sameBytes(this.#published.get(key), bytes)) return;
    await this.#kv.put(key, bytes);
    this.#published.set(key, bytes);
  }

  /**
   * Puts the entry held at `key` again naming `answers` as the request it answers (`for`), its other
   * fields as they were (the credential-set marker too: the credential was not set again).
   */
  async reanswer(key: string, answers: string | undefined): Promise<void> {
    const bytes = this.#published.get(key);
    if (!bytes) return;
    const { for: _was, ...entry } = JSON.parse(new TextDecoder().decode(bytes)) as BoundValue;
    await this.put(key, answers === undefined ? entry : { ...entry, for: answers });
  }

  /** Deletes the entry at `key`, when the helper holds one. */
  async delete(key: string): Promise<void> {
    if (!this.#published.has(key)) return;
    await this.#kv.delete(key);
    this.#published.delete(key);
  }
}
