// Placeholders (DESIGN §8): finding `${kind:name}` in a text and filling it, every other byte kept.
import { Renderer } from 'micromustache';

/** One placeholder found in a text. */
export type Placeholder = {
  /** The kind before the first `:`, matching `[a-z][a-z0-9-]*`. */
  kind: string;
  /** Everything after the first `:` up to the closing `}`. */
  name: string;
  /** The 1-based line of the `$`, lines ending at `\n` (so CRLF counts once). */
  line: number;
  /** The 1-based column of the `$`, counted in code points. */
  column: number;
};

/** A text split at its placeholders: `literals[i]` comes before `placeholders[i]`, one more literal at the end. */
export type ScannedText = { literals: string[]; placeholders: Placeholder[] };

// A name is non-empty and holds no whitespace, `{`, `}` or `$`, so a placeholder never spans lines
// and never contains another `${`; it may hold `:` and `.` (`${bound:db.admin:user}`). It may not
// start with `-`, `=`, `+` or `?`, so shell expansions with a lowercase variable such as
// `${name:-default}` or `${name:?unset}` stay text.
const PLACEHOLDER = /\$\{([a-z][a-z0-9-]*):([^\s{}$\-=+?][^\s{}$]*)\}/y;
// A placeholder's opening and name where PLACEHOLDER failed: the name ended without its `}`.
const UNCLOSED = /\$\{[a-z][a-z0-9-]*:[^\s{}$\-=+?][^\s{}$]*/y;
const ESCAPE = '$${';

/** Where a `$${` escape was found: the line and column of its first `$`, as a placeholder's. */
export type EscapeAt = { line: number; column: number };

/** A `${kind:name` that is not closed (it stays text): where it starts, and its text up to where the name ends. */
export type UnclosedAt = EscapeAt & { text: string };

/** What a scan can tell beside the placeholders (`lint` lists them); the fill asks for neither. */
export type ScanNotes = {
  /** Hears each `$${` the scan takes as an escape. */
  escape?(at: EscapeAt): void;
  /** Hears each `${kind:name` without its `}`, which the scan keeps as text. */
  unclosed?(at: UnclosedAt): void;
};

/**
 * Splits a text at its placeholders in one pass: linear in time, and the literals are slices of
 * the text with each `$${` turned into `${` (never built a character at a time). `notes` hears
 * each escape and each unclosed placeholder the scan keeps as text.
 */
export function scanPlaceholders(text: string, notes: ScanNotes = {}): ScannedText {
  const literals: string[] = [];
  const placeholders: Placeholder[] = [];
  const at = positionTracker(text);
  let start = 0;
  let i = 0;
  while (i < text.length) {
    const dollar = text.indexOf('$', i);
    if (dollar === -1) break;
    i = dollar;
    if (text.startsWith(ESCAPE, i)) {
      notes.escape?.(at(i));
      i += ESCAPE.length;
      continue;
    }
    PLACEHOLDER.lastIndex = i;
    const match = PLACEHOLDER.exec(text);
    if (match === null) {
      if (notes.unclosed) noteUnclosed(text, i, at, notes.unclosed);
      // Only this `$` is text: a placeholder may still start inside what follows (`${a:${b:c}}`).
      i += 1;
      continue;
    }
    literals.push(unescape(text.slice(start, i)));
    placeholders.push({ kind: match[1]!, name: match[2]!, ...at(i) });
    i = PLACEHOLDER.lastIndex;
    start = i;
  }
  literals.push(unescape(text.slice(start)));
  return { literals, placeholders };
}

// A name holds no `$`, so the next `$` the scan visits lies past the text matched here: linear still.
function noteUnclosed(text: string, i: number, at: (offset: number) => EscapeAt, hear: (at: UnclosedAt) => void): void {
  UNCLOSED.lastIndex = i;
  const open = UNCLOSED.exec(text);
  if (open !== null) hear({ ...at(i), text: open[0] });
}

// Inside a literal run the escapes lie exactly where the scan skipped them: both go left to right
// and a placeholder never starts inside `$${`. The run is copied once into UTF-16 code units
// without the first `$` of each escape: linear, and exact for any string (lone surrogates too),
// where replaceAll would build a part per escape.
function unescape(literal: string): string {
  let at = literal.indexOf(ESCAPE);
  if (at === -1) return literal;
  const units = new Uint16Array(literal.length);
  let write = 0;
  for (let read = 0; read < literal.length; read++) {
    if (read === at) {
      at = literal.indexOf(ESCAPE, read + ESCAPE.length);
      continue; // the escape's first `$`; its `${` is copied next
    }
    units[write++] = literal.charCodeAt(read);
  }
  return Buffer.from(units.buffer, 0, write * 2).toString('utf16le');
}

/** Returns a function giving the line and column of an offset, for offsets asked in increasing order. */
function positionTracker(text: string): (offset: number) => { line: number; column: number } {
  let line = 1;
  let column = 1;
  let pos = 0;
  return (offset) => {
    for (; pos < offset; pos++) {
      const code = text.charCodeAt(pos);
      if (code === 0x0a) {
        line += 1;
        column = 1;
      } else if (!(isLowSurrogate(code) && pos > 0 && isHighSurrogate(text.charCodeAt(pos - 1)))) {
        column += 1;
      }
    }
    return { line, column };
  };
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

/** Finds every `${kind:name}` placeholder in order (duplicates included). */
export function parsePlaceholders(text: string): Placeholder[] {
  return scanPlaceholders(text).placeholders;
}

/** Gives the text of the `index`th placeholder of a compiled run. */
export type ValueOf = (index: number) => string;

/**
 * A run of literals around placeholders, compiled once into a micromustache renderer whose
 * variables are the placeholders' indexes: values go in through the resolver, never through the
 * template, so a value holding `${`, `$${` or anything else is inserted as it is.
 */
export class CompiledRun {
  readonly #renderer: Renderer;
  readonly #first: number;

  /** Compiles `literals` (one more than the placeholders) around placeholders `first…`. */
  constructor(literals: string[], first: number) {
    this.#first = first;
    const varNames = literals.slice(1).map((_, i) => String(first + i));
    this.#renderer = new Renderer({ strings: literals, varNames });
  }

  /** Renders the run, asking `valueOf` for each placeholder by its index in the whole text. */
  render(valueOf: ValueOf): string {
    return this.#renderer.renderFn((varName: string) => valueOf(Number(varName)));
  }

  /** The index of the run's first placeholder in the whole text. */
  get first(): number {
    return this.#first;
  }
}

/** Compiles a whole text into one run. */
export function compileText(text: string): { placeholders: Placeholder[]; run: CompiledRun } {
  const { literals, placeholders } = scanPlaceholders(text);
  return { placeholders, run: new CompiledRun(literals, 0) };
}

/** Renders the text: each placeholder replaced by resolve(p), `$${` → `${`, everything else byte for byte. */
export function renderPlaceholders(text: string, resolve: (p: Placeholder) => string): string {
  const { placeholders, run } = compileText(text);
  return run.render((i) => resolve(placeholders[i]!));
}
