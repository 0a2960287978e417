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
 * any reply is listed out of shape instead, so the cursor always moves on. Each row is kept as the
 * JSON text its size was judged by, never as the value read: a page of 20,000 reports held as
 * parsed values outlived one young-generation collection after another, and was encoded twice.
 */
export class Page {
  readonly #what: string;
  readonly #entries: string[] = [];
  readonly #outOfShape: string[] = [];
  #next: string | undefined;
  #size: number;
  #taken = 0;
  #last: string | undefined;

  constructor(
    what: string,
    private readonly limit: number,
    private readonly budget: number,
  ) {
    this.#what = what;
    this.#size = Buffer.byteLength(this.text());
  }

  /** The reply so far as its JSON text: what `JSON.stringify` makes of `reply`. */
  text(): string {
    const next = this.#next === undefined ? '' : `,"next":${JSON.stringify(this.#next)}`;
    return `{"what":${JSON.stringify(this.#what)},"entries":[${this.#entries.join(',')}],"outOfShape":[${this.#outOfShape.join(',')}]${next}}`;
  }

  /** The reply so far, decoded. */
  get reply(): VerbReply {
    return JSON.parse(this.text()) as VerbReply;
  }

  /** Adds the next row in key order; false when it is left out, which ends the page. */
  add(row: Row): boolean {
    const full = 'value' in row && this.#entries.length >= this.limit;
    let text = full ? '' : JSON.stringify(row);
    let cost = full ? 0 : this.#costOf(row, text);
    if (full || this.#size + cost + nextCost(row.key) > this.budget) {
      if (full || this.#taken > 0) {
        this.#next = this.#last;
        return false;
      }
      row = { key: row.key, reason: `value of ${Buffer.byteLength(text)} bytes does not fit in one reply (max payload ${this.budget + REPLY_HEADROOM})` };
      text = JSON.stringify(row);
      cost = this.#costOf(row, text);
    }
    this.#size += cost;
    ('reason' in row ? this.#outOfShape : this.#entries).push(text);
    this.#taken++;
    this.#last = row.key;
    return true;
  }

  /** How many more rows the page might take (one past, to see where it ends): how far to read ahead. */
  room(): number {
    const rowBytes = this.#taken > 0 ? this.#size / this.#taken : GUESSED_ROW_BYTES;
    const byBytes = Math.ceil((this.budget - this.#size) / rowBytes);
    return Math.max(0, Math.min(this.limit - this.#entries.length, byBytes)) + 1;
  }

  #costOf(row: Row, text: string): number {
    const list = 'reason' in row ? this.#outOfShape : this.#entries;
    return Buffer.byteLength(text) + (list.length > 0 ? 1 : 0);
  }
}

function nextCost(key: string): number {
  return Buffer.byteLength(`,"next":${JSON.stringify(key)}`);
}
