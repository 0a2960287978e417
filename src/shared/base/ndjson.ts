// Newline-delimited framing of a byte stream, bounded (DESIGN §3): one pass per chunk, and a line past
// its limit is reported instead of buffered, so a peer that never sends a newline costs at most the limit.

/** What a LineReader calls. */
export type LineHandlers = {
  /** A complete line, without its newline; a trailing CR is left for JSON.parse to skip as whitespace. */
  onLine(line: Buffer): void;
  /** The line being read passed `maxBytes`; `bytes` is how far it had got. Nothing more is read. */
  onTooLong(bytes: number): void;
};

/**
 * Splits chunks into lines by the byte 0x0a (never part of a multi-byte UTF-8 sequence), counting
 * bytes, not UTF-16 units. A partial line is kept as the chunks it came in and joined once.
 */
export class LineReader {
  #parts: Buffer[] = [];
  #size = 0;
  #stopped = false;
  readonly #maxBytes: number;
  readonly #handlers: LineHandlers;

  /** A reader refusing any line longer than `maxBytes` bytes (the newline not counted). */
  constructor(maxBytes: number, handlers: LineHandlers) {
    this.#maxBytes = maxBytes;
    this.#handlers = handlers;
  }

  /** Bytes held of the line not yet complete. */
  get buffered(): number {
    return this.#size;
  }

  /** Reads a chunk; every complete line in it is handed on at once, in order. */
  push(chunk: Buffer): void {
    let start = 0;
    while (!this.#stopped) {
      const newline = chunk.indexOf(0x0a, start);
      const end = newline < 0 ? chunk.length : newline;
      const size = this.#size + (end - start);
      if (size > this.#maxBytes) {
        this.stop();
        this.#handlers.onTooLong(size);
        return;
      }
      if (newline < 0) {
        if (end > start) this.#parts.push(chunk.subarray(start));
        this.#size = size;
        return;
      }
      const piece = chunk.subarray(start, newline);
      const line = this.#parts.length === 0 ? piece : Buffer.concat([...this.#parts, piece], size);
      this.#parts = [];
      this.#size = 0;
      start = newline + 1;
      this.#handlers.onLine(line);
    }
  }

  /** Drops what is held and ignores every later chunk (the connection is going away). */
  stop(): void {
    this.#stopped = true;
    this.#parts = [];
    this.#size = 0;
  }
}
