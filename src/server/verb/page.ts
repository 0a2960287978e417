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
    if ('value' in row && this.#entries.count >= this.limit) return this.#end();
    let text = JSON.stringify(row);
    // An entry is written once, where it goes, and measured by that write; taken back if it does not fit.
    let cost = 'reason' in row ? this.#outOfShapeCost(text) : this.#entries.push(text);
    if (this.#size + cost + nextCost(row.key, this.budget - this.#size - cost) > this.budget) {
      if ('value' in row) this.#entries.pop(cost);
      if (this.#taken > 0) return this.#end();
      // The page's first row: no comma counted in its cost.
      row = { key: row.key, reason: `value of ${cost} bytes does not fit in one reply (max payload ${this.budget + REPLY_HEADROOM})` };
      text = JSON.stringify(row);
      cost = this.#outOfShapeCost(text);
    }
    this.#size += cost;
    if ('reason' in row) this.#outOfShape.push(text);
    this.#taken++;
    this.#last = row.key;
    return true;
  }

  /** The key of the last row the page took; undefined while it has none. */
  last(): string | undefined {
    return this.#last;
  }

  /** How many more rows the page might take (one past, to see where it ends): how far to read ahead. */
  room(): number {
    const rowBytes = this.#taken > 0 ? this.#size / this.#taken : GUESSED_ROW_BYTES;
    const byBytes = Math.ceil((this.budget - this.#size) / rowBytes);
    return Math.max(0, Math.min(this.limit - this.#entries.count, byBytes)) + 1;
  }

  #end(): false {
    this.#next = this.#last;
    return false;
  }

  #outOfShapeCost(text: string): number {
    return Buffer.byteLength(text) + (this.#outOfShape.length > 0 ? 1 : 0);
  }
}

/** JSON texts joined by commas, as UTF-8 in a buffer that doubles as it fills. */
class JsonList {
  #buffer = Buffer.allocUnsafe(0);
  #length = 0;
  /** How many texts it holds. */
  count = 0;

  /** Appends `text` with its comma; says how many bytes that took. */
  push(text: string): number {
    // Up to 3 bytes of UTF-8 per UTF-16 unit, and the comma: room enough without measuring first.
    const most = 3 * text.length + 1;
    if (this.#length + most > this.#buffer.length) {
      const grown = Buffer.allocUnsafe(Math.max(this.#length + most, 2 * this.#buffer.length, 4096));
      this.#buffer.copy(grown, 0, 0, this.#length);
      this.#buffer = grown;
    }
    const start = this.#length;
    if (this.count > 0) this.#buffer[this.#length++] = COMMA;
    this.#length += this.#buffer.write(text, this.#length);
    this.count++;
    return this.#length - start;
  }

  /** Takes back the last text pushed, which took `bytes`. */
  pop(bytes: number): void {
    this.#length -= bytes;
    this.count--;
  }

  /** The texts so far, joined (a view: it is not copied). */
  bytes(): Buffer {
    return this.#buffer.subarray(0, this.#length);
  }
}

const COMMA = 0x2c;

/**
 * The bytes `next` would add to the reply for `key`; when `room` is plainly enough (at most 6 bytes
 * of JSON per UTF-16 unit: a `\uXXXX` escape), that bound, without encoding the key.
 */
function nextCost(key: string, room: number): number {
  const most = NEXT_HEAD + 6 * key.length + 2;
  return most <= room ? most : Buffer.byteLength(`,"next":${JSON.stringify(key)}`);
}

const NEXT_HEAD = Buffer.byteLength(',"next":');
