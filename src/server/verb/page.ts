// One page of the verb's reply (DESIGN §6): rows added in key order up to a count and the bytes the
// connection's max payload leaves, `next` the cursor to ask from when a row is left out.
import type { VerbReply } from '../../shared/contract/verb.ts';

/** Bytes a reply leaves free under the connection's max payload. */
export const REPLY_HEADROOM = 1024;

/** The size of a row assumed before the first is read, to judge how far to read ahead. */
const GUESSED_ROW_BYTES = 256;

/** One key as the reply lists it: an entry, or out of shape with the reason. */
export type Row = { key: string; value: unknown } | { key: string; reason: string };

/**
 * One reply filled in key order up to `limit` entries (out-of-shape rows ride along) and `budget`
 * bytes of JSON; `next` is the last key included when a row is left out. A first row too large for
 * any reply is listed out of shape instead, so the cursor always moves on.
 */
export class Page {
  /** The reply so far. */
  readonly reply: VerbReply;
  #size: number;
  #taken = 0;
  #last: string | undefined;

  constructor(
    what: string,
    private readonly limit: number,
    private readonly budget: number,
  ) {
    this.reply = { what, entries: [], outOfShape: [] };
    this.#size = byteLength(this.reply);
  }

  /** Adds the next row in key order; false when it is left out, which ends the page. */
  add(row: Row): boolean {
    const full = 'value' in row && this.reply.entries.length >= this.limit;
    let cost = full ? 0 : costOf(this.reply, row);
    if (full || this.#size + cost + nextCost(row.key) > this.budget) {
      if (full || this.#taken > 0) {
        this.reply.next = this.#last;
        return false;
      }
      row = { key: row.key, reason: `value of ${byteLength(row)} bytes does not fit in one reply (max payload ${this.budget + REPLY_HEADROOM})` };
      cost = costOf(this.reply, row);
    }
    this.#size += cost;
    if ('reason' in row) this.reply.outOfShape.push(row);
    else this.reply.entries.push(row);
    this.#taken++;
    this.#last = row.key;
    return true;
  }

  /** How many more rows the page might take (one past, to see where it ends): how far to read ahead. */
  room(): number {
    const rowBytes = this.#taken > 0 ? this.#size / this.#taken : GUESSED_ROW_BYTES;
    const byBytes = Math.ceil((this.budget - this.#size) / rowBytes);
    return Math.max(0, Math.min(this.limit - this.reply.entries.length, byBytes)) + 1;
  }
}

function costOf(reply: VerbReply, row: Row): number {
  const list = 'reason' in row ? reply.outOfShape : reply.entries;
  return byteLength(row) + (list.length > 0 ? 1 : 0);
}

function nextCost(key: string): number {
  return Buffer.byteLength(`,"next":${JSON.stringify(key)}`);
}

function byteLength(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value));
}
