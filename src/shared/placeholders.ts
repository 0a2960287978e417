// Placeholders (DESIGN §8): finding `${kind:name}` in a text and filling it, every other byte kept.
import { compile } from 'micromustache';

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

// A name is non-empty and holds no whitespace, `{`, `}` or `$`, so a placeholder never spans lines
// and never contains another `${`; it may hold `:` and `.` (`${bound:db.admin:user}`). It may not
// start with `-`, `=`, `+` or `?`, so shell expansions with a lowercase variable such as
// `${name:-default}` or `${name:?unset}` stay text.
const PLACEHOLDER = /\$\{([a-z][a-z0-9-]*):([^\s{}$\-=+?][^\s{}$]*)\}/y;
const ESCAPE = '$${';
const OPEN = '${';
// micromustache's tags are `${` and `}` themselves, so every literal `${` left in the text is
// written as this tag, which renders back to `${`: no foreign text reaches its tokenizer.
const OPEN_TAG = '${open}';

type Scan = { literals: string[]; placeholders: Placeholder[] };

/** Splits a text into literal runs (escapes already turned into `${`) around its placeholders. */
function scan(text: string): Scan {
  const literals: string[] = [];
  const placeholders: Placeholder[] = [];
  const at = positionTracker(text);
  let literal = '';
  let i = 0;
  while (i < text.length) {
    const dollar = text.indexOf('$', i);
    if (dollar === -1) break;
    literal += text.slice(i, dollar);
    i = dollar;
    if (text.startsWith(ESCAPE, i)) {
      literal += OPEN;
      i += ESCAPE.length;
      continue;
    }
    PLACEHOLDER.lastIndex = i;
    const match = PLACEHOLDER.exec(text);
    if (match === null) {
      // Only this `$` is text: a placeholder may still start inside what follows (`${a:${b:c}}`).
      literal += '$';
      i += 1;
      continue;
    }
    literals.push(literal);
    literal = '';
    placeholders.push({ kind: match[1]!, name: match[2]!, ...at(i) });
    i = PLACEHOLDER.lastIndex;
  }
  literals.push(literal + text.slice(i));
  return { literals, placeholders };
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
  return scan(text).placeholders;
}

/** Renders the text: each placeholder replaced by resolve(p), `$${` → `${`, everything else byte for byte. */
export function renderPlaceholders(text: string, resolve: (p: Placeholder) => string): string {
  const { literals, placeholders } = scan(text);
  let template = literals[0]!.replaceAll(OPEN, OPEN_TAG);
  for (let i = 0; i < placeholders.length; i++) {
    template += `\${p${i}}` + literals[i + 1]!.replaceAll(OPEN, OPEN_TAG);
  }
  // Values go in through the resolver, never through the template, so a value holding `${` or
  // `$${` is inserted as it is.
  return compile(template, { tags: ['${', '}'] }).renderFn((varName: string) =>
    varName === 'open' ? OPEN : resolve(placeholders[Number(varName.slice(1))]!),
  );
}
