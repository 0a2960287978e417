// Text from the bus shown to a person (DESIGN §3, issue 18 item 11): properties of the one safe-text
// function and its cell and JSON forms (fast-check), then the printers that use it, in this process.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { createLogger, memoryLogger } from '../src/shared/cli/log.ts';
import { MAX_CELL_BYTES, safeCell, safeJson, safeText } from '../src/shared/cli/safe-text.ts';
import { cell, formatTable } from '../src/server/commands/query/command.ts';
import { detailLines, fleetLines } from '../src/server/commands/status/format.ts';
import { describeDryRun, type DryRunSummary } from '../src/client/commands/dry-run/output.ts';
import { describeStanding } from '../src/client/commands/once/book.ts';
import { SEED } from './helpers/random.ts';

const RUNS = Number(process.env['MESH_FUZZ_RUNS'] ?? 1000);
let total = 0;

/** Runs a property with the suite's seed and counts its cases. */
function check<T>(name: string, arb: fc.Arbitrary<T>, predicate: (value: T) => boolean | void, runs = RUNS): void {
  fc.assert(fc.property(arb, predicate), { seed: SEED, numRuns: runs });
  total += runs;
  console.log(`safe-text: ${name}: ${runs} cases`);
}

/** Whether a code point may never be shown raw, said independently of the module's regular expressions. */
function unsafeCodePoint(code: number): boolean {
  return (
    code <= 0x1f ||
    (code >= 0x7f && code <= 0x9f) || // C0, DEL, C1
    code === 0x2028 ||
    code === 0x2029 || // line and paragraph separators
    code === 0x061c ||
    code === 0x200e ||
    code === 0x200f ||
    (code >= 0x202a && code <= 0x202e) ||
    (code >= 0x2066 && code <= 0x2069) || // Bidi_Control
    (code >= 0xd800 && code <= 0xdfff)
  ); // a surrogate standing alone (a pair iterates as one code point)
}

/** The first unsafe code point of `text`, as U+XXXX, or undefined. */
function firstUnsafe(text: string): string | undefined {
  for (const c of text) {
    const code = c.codePointAt(0)!;
    if (unsafeCodePoint(code)) return `U+${code.toString(16).toUpperCase().padStart(4, '0')}`;
  }
  return undefined;
}

// Every character that matters, often: the controls of the attack, DEL, C1 (U+009B is CSI), the
// separators, the bidi controls, lone surrogates, a backslash and escape-like text, and any code unit.
const UNSAFE_SAMPLES = [
  '\x1b',
  '\r',
  '\n',
  '\x07',
  '\t',
  '\0',
  '\x7f',
  '\x80',
  '\x85',
  '\x9b',
  '\x9f',
  '\u2028',
  '\u2029',
  '\u202a',
  '\u202e',
  '\u2066',
  '\u2069',
  '\u061c',
  '\u200e',
  '\u200f',
  '\ud800',
  '\udfff',
];
const piece = fc.oneof(
  fc.constantFrom(...UNSAFE_SAMPLES, '\\', '\\x1b', '\\u2028', 'x', '1b', 'é', '€', '😀', '\ud83d\ude00', ' ', '…'),
  fc.string({ unit: 'binary', maxLength: 3 }),
  fc.string({ unit: 'grapheme', maxLength: 3 }),
);
const hostileText = fc.array(piece, { maxLength: 40 }).map((parts) => parts.join(''));
/** Text with no unsafe code point: the hostile text with each unsafe one removed. */
const safeInput = hostileText.map((text) => [...text].filter((c) => !unsafeCodePoint(c.codePointAt(0)!)).join(''));
const control = fc.constantFrom(...UNSAFE_SAMPLES.filter((c) => c.length === 1 && c.charCodeAt(0) < 0xa0));

/** Reverses safeText for text that held no backslash: each `\xHH` and `\uHHHH` back to its code unit. */
function unescape(text: string): string {
  return text.replace(/\\x([0-9a-f]{2})|\\u([0-9a-f]{4})/g, (_, x: string | undefined, u: string | undefined) => String.fromCharCode(parseInt(x ?? u!, 16)));
}

const utf8Bytes = (text: string) => Buffer.byteLength(text);

test('no C0, DEL, C1, line separator, bidi control or lone surrogate survives safeText, whatever the input', () => {
  check('nothing unsafe survives', hostileText, (text) => firstUnsafe(safeText(text)) === undefined);
});

test('safeText is the identity on text without them: backslashes, quotes, emoji and every other character kept', () => {
  check('identity on safe text', safeInput, (text) => safeText(text) === text);
  assert.is(safeText('C:\\path "quoted" é € 😀 …'), 'C:\\path "quoted" é € 😀 …');
});

test('safeText applied twice is safeText applied once, so a line escaped by a printer and again by the entry stays as it was', () => {
  check('idempotent', hostileText, (text) => safeText(safeText(text)) === safeText(text));
});

test('text without a backslash is read back exactly from its safe form: inputs differing only in control bytes stay distinguishable', () => {
  check(
    'reversible without a backslash',
    hostileText.map((t) => t.replaceAll('\\', '')),
    (text) => unescape(safeText(text)) === text,
  );
  const differing = fc.tuple(hostileText, control, control, hostileText).filter(([, a, b]) => a !== b);
  check('one control byte apart', differing, ([head, a, b, tail]) => safeText(head + a + tail) !== safeText(head + b + tail));
});

test('each control is written as a visible escape: \\x1b for ESC, \\x0a for a newline, \\x9b for C1 CSI, \\u2028 and \\u202e above U+00FF', () => {
  assert.is(safeText('\x1b[2J\x1b]0;owned\x07\r\x1b[K\nn1 web: applied'), '\\x1b[2J\\x1b]0;owned\\x07\\x0d\\x1b[K\\x0an1 web: applied');
  assert.is(safeText('\x00\t\x7f\x9b\u2028\u2029\u202e\u2066\ud800'), '\\x00\\x09\\x7f\\x9b\\u2028\\u2029\\u202e\\u2066\\ud800');
  // A pair is one character, kept; only a surrogate standing alone is escaped.
  assert.is(safeText('\ud83d\ude00\udc00\ud83d'), '\ud83d\ude00\\udc00\\ud83d');
  // Not injective on purpose (identity on safe text): the literal text `\x1b` and ESC look alike; --json tells them apart.
  assert.is(safeText('\\x1b'), safeText('\x1b'));
  assert.is.not(safeJson('\\x1b'), safeJson('\x1b'));
});

test('a cell is safe text cut past 4 KiB of UTF-8 at a code point, with … appended; a shorter one is the whole safe text', () => {
  const wide = fc.array(fc.constantFrom('a', 'é', '€', '😀', '\x1b', '\ud800', '\u202e'), { minLength: 900, maxLength: 4200 }).map((parts) => parts.join(''));
  check(
    'cell bound',
    fc.oneof(hostileText, wide),
    (text) => {
      const shown = safeCell(text);
      const whole = safeText(text);
      if (utf8Bytes(whole) <= MAX_CELL_BYTES) return shown === whole;
      const kept = shown.slice(0, -1);
      return (
        shown.endsWith('…') &&
        whole.startsWith(kept) &&
        utf8Bytes(kept) <= MAX_CELL_BYTES &&
        utf8Bytes(kept) > MAX_CELL_BYTES - 4 &&
        firstUnsafe(shown) === undefined
      );
    },
    300,
  );
  assert.is(safeCell('x'.repeat(MAX_CELL_BYTES)), 'x'.repeat(MAX_CELL_BYTES));
  assert.is(safeCell('x'.repeat(MAX_CELL_BYTES + 1)), `${'x'.repeat(MAX_CELL_BYTES)}…`);
  // A pair is never split: 4,095 bytes of x, then a 4-byte emoji that does not fit.
  assert.is(safeCell(`${'x'.repeat(MAX_CELL_BYTES - 1)}😀`), `${'x'.repeat(MAX_CELL_BYTES - 1)}…`);
});

test('safeJson parses back to exactly the value and holds no unsafe code point, not even DEL, C1 or U+2028 that JSON.stringify leaves raw', () => {
  const value = fc.jsonValue({ stringUnit: fc.oneof(fc.constantFrom(...UNSAFE_SAMPLES), fc.string({ unit: 'binary', maxLength: 1 })), maxDepth: 4 });
  check(
    'json round trip',
    value,
    (v) => {
      const text = safeJson(v);
      assert.equal(JSON.parse(text), JSON.parse(JSON.stringify(v)));
      return firstUnsafe(text) === undefined;
    },
    500,
  );
  assert.is(safeJson({ r: '\x1b\x7f\x9b\u2028' }), '{"r":"\\u001b\\u007f\\u009b\\u2028"}');
  assert.is(JSON.parse(safeJson({ r: 'x' }, 2)).r, 'x');
});

test('the logger writes each message as one line of safe text, keeping its sd-daemon prefix or its time and level', () => {
  const lines: string[] = [];
  const journal = createLogger({ prefix: true, write: (line) => lines.push(line) });
  journal.error('n1.web: failed (bound database: the provider refused: \x1b]0;x\x07\n<3>forged)');
  assert.equal(lines, ['<3>n1.web: failed (bound database: the provider refused: \\x1b]0;x\\x07\\x0a<3>forged)']);
  const plain = memoryLogger();
  plain.warn('a\rb\x9bc');
  assert.match(plain.lines[0]!, /^\d{4}-\d\d-\d\dT[\d:.]+Z warning a\\x0db\\x9bc$/);
});

const HOSTILE = '\x1b[2J\x1b]0;owned\x07\x1b]52;c;Zm9yZ2Vk\x07\r\x1b[K\nn2 web: applied\x7f\x9b\u2028\u202e';

test('status tables, a node’s detail and the out-of-shape list print hostile report text on exactly as many lines as plain text', () => {
  const view = (text: string) => ({
    fleet: fleetLines({
      nodes: [
        {
          node: 'n1',
          applied: 0,
          waiting: 1,
          failed: 0,
          held: 1,
          composeFailed: 0,
          drift: 0,
          oldestWaiting: { module: 'web', kind: 'config', name: text, at: '', seconds: 5 },
        },
      ],
      health: [{ module: 'web', state: 'held', build: text, reason: text, nodes: 1, since: text }],
      rollouts: [{ module: text, state: text, build: text, wave: 1, reason: text, failed: [] }],
      healthUnlisted: 0,
      outOfShape: [{ key: text, reason: text }],
      outOfShapeCount: 1,
    }),
    detail: detailLines({
      node: 'n1',
      modules: [
        {
          node: 'n1',
          module: 'web',
          state: 'waiting',
          build: text,
          at: text,
          seconds: 5,
          reason: text,
          health: { node: 'n1', module: 'web', state: 'failed', build: text, reason: text, since: text, passes: 2, seconds: 5 },
          waiting: [{ kind: 'config', name: text, owner: text, where: text, key: text, field: text, files: [text], note: text }],
          files: [{ path: text, action: text, digest: text, reason: text }],
        },
      ],
      outOfShape: [{ key: text, reason: text }],
      outOfShapeCount: 1,
    }),
  });
  const plain = view('plain');
  const hostile = view(HOSTILE);
  for (const form of ['fleet', 'detail'] as const) {
    assert.is(hostile[form].length, plain[form].length, form);
    for (const line of hostile[form]) assert.is(firstUnsafe(line), undefined, line);
  }
  assert.ok(
    hostile.detail.some((line) => line.includes('reason: \\x1b[2J\\x1b]0;owned\\x07')),
    'the reason shown, escaped',
  );
});

test('a table pads safe text, whoever built its cells; a cell of any JSON is one line, cut past 4 KiB', () => {
  assert.equal(
    formatTable(
      ['A', 'B'],
      [
        ['\x1b', 'x'],
        ['yyyyy', 'z'],
      ],
    ),
    ['A      B', '\\x1b   x', 'yyyyy  z'],
  );
  assert.is(cell({ a: '\n\x9b' }), '{"a":"\\n\\x9b"}');
  assert.is(cell('y'.repeat(5000)), `${'y'.repeat(MAX_CELL_BYTES)}…`);
});

test('--once’s lines and --dry-run’s summary show a hostile reason, path and build escaped, one line each', () => {
  const standing = describeStanding({
    module: 'web',
    state: 'failed',
    waiting: [{ kind: 'config', name: HOSTILE, files: [HOSTILE] }],
    files: [],
    reason: HOSTILE,
  });
  assert.is(firstUnsafe(standing), undefined, standing);
  const summary: DryRunSummary = {
    node: 'n1',
    dir: '/tmp/d',
    complete: false,
    timedOut: false,
    modules: [
      {
        module: 'web',
        build: HOSTILE,
        state: 'failed',
        reason: HOSTILE,
        waiting: [],
        items: [],
        files: [{ path: `/etc/${HOSTILE}`, mode: 'owned', change: 'none', digest: `sha256:${'0'.repeat(64)}`, secrets: [HOSTILE], written: HOSTILE }],
      },
    ],
  };
  const lines = describeDryRun(summary);
  assert.is(lines.length, 4);
  for (const line of lines) assert.is(firstUnsafe(line), undefined, line);
});

test.after(() => console.log(`safe-text: ${total} cases in all`));

test.run();
