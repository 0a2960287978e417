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
 * any reply is listed out of shape instead, so the cursor always moves on. Each entry is kept as the
 * UTF-8 of the JSON text its size was judged by, never as the value read, and outside V8's heap: a
 * page of 20,000 reports held as parsed values outlived one young-generation collection after
 * another, and held as strings each page's megabyte was copied by two collections and then grew
 * the old generation towards a full one.
 */
export class Page {
  readonly #what: string;
  readonly #entries = new JsonList();
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
    this.#size = this.bytes().length;
  }

  /** The reply so far as the UTF-8 of its JSON text: what `JSON.stringify` makes of `reply`, encoded. */
  bytes(): Buffer {
    const next = this.#next === undefined ? '' : `,"next":${JSON.stringify(this.#next)}`;
    const head = Buffer.from(`{"what":${JSON.stringify(this.#what)},"entries":[`);
    const tail = Buffer.from(`],"outOfShape":[${this.#outOfShape.join(',')}]${next}}`);
    return Buffer.concat([head, this.#entries.bytes(), tail]);
  }

  /** The reply so far as its JSON text: what `JSON.stringify` makes of `reply`. */
  text(): string {
    return this.bytes().toString();
  }

  /** The reply so far, decoded. */
  get reply(): VerbReply {
    return JSON.parse(this.text()) as VerbReply;
  }

  /** Adds the next row in key order; false when it is left out, which ends the page. */
  add(row: Row): boolean {
    const full = 'value' in row && this.#entries.count >= this.limit;
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
    if ('reason' in row) this.#outOfShape.push(text);
    else this.#entries.push(text, cost);
    this.#taken++;
    this.#last = row.key;
    return true;
  }

  /** How many more rows the page might take (one past, to see where it ends): how far to read ahead. */
  room(): number {
    const rowBytes = this.#taken > 0 ? this.#size / this.#taken : GUESSED_ROW_BYTES;
    const byBytes = Math.ceil((this.budget - this.#size) / rowBytes);
    return Math.max(0, Math.min(this.limit - this.#entries.count, byBytes)) + 1;
  }

  #costOf(row: Row, text: string): number {
    const count = 'reason' in row ? this.#outOfShape.length : this.#entries.count;
    return Buffer.byteLength(text) + (count > 0 ? 1 : 0);
  }
}

/** JSON texts joined by commas, as UTF-8 in a buffer that doubles as it fills. */
class JsonList {
  #buffer = Buffer.allocUnsafe(0);
  #length = 0;
  /** How many texts it holds. */
  count = 0;

  /** Appends `text`, whose UTF-8 with its comma is `bytes` long (the page has measured it). */
  push(text: string, bytes: number): void {
    if (this.#length + bytes > this.#buffer.length) {
      const grown = Buffer.allocUnsafe(Math.max(this.#length + bytes, 2 * this.#buffer.length, 4096));
      this.#buffer.copy(grown, 0, 0, this.#length);
      this.#buffer = grown;
    }
    if (this.count > 0) this.#buffer[this.#length++] = COMMA;
    this.#length += this.#buffer.write(text, this.#length);
    this.count++;
  }

  /** The texts so far, joined (a view: it is not copied). */
  bytes(): Buffer {
    return this.#buffer.subarray(0, this.#length);
  }
}

const COMMA = 0x2c;

function nextCost(key: string): number {
  return Buffer.byteLength(`,"next":${JSON.stringify(key)}`);
}
