// Property-based tests (fast-check) of what the client builds from hostile text: placeholder
// scanning in linear time and memory, render(parse) round trips, key encoding, and no value
// character ever yielding or hiding a secret part (DESIGN §3, §8, §9).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { fillModule } from '../src/client/fill/fill.ts';
import type { ValueLookup } from '../src/client/sources/source.ts';
import { compileTemplate, prepareTemplates } from '../src/module/templates.ts';
import { fitReport } from '../src/client/report/fit.ts';
import { contentDigest, contentText, type FillContent } from '../src/shared/contract/fill-protocol.ts';
import { decodeToken, encodeToken } from '../src/shared/contract/keys.ts';
import { jsonDepth, MAX_JSON_DEPTH, parseBoundedJson } from '../src/shared/contract/limits.ts';
import { parsePlaceholders, renderPlaceholders, scanPlaceholders } from '../src/shared/contract/placeholders.ts';
import type { Plan } from '../src/shared/contract/plan.ts';
import type { Report } from '../src/shared/contract/report.ts';
import { SEED } from './helpers/random.ts';

const RUNS = Number(process.env['MESH_FUZZ_RUNS'] ?? 400);
let total = 0;

/** Runs a property with the suite's seed and counts its cases. */
function check<T>(name: string, arb: fc.Arbitrary<T>, predicate: (value: T) => boolean | void, runs = RUNS): void {
  fc.assert(fc.property(arb, predicate), { seed: SEED, numRuns: runs });
  total += runs;
  console.log(`fuzz: ${name}: ${runs} cases`);
}

// Text rich in the characters that matter: `$`, `{`, `}`, `:`, lone surrogates, NUL, newlines.
const hostileChar = fc.oneof(
  fc.constantFrom('$', '{', '}', ':', '$${', '${', '${secret:k}', '${config:a}', '\uD800', '\uDC00', '\uFEFF', '\0', '\n', '\r', ' ', 'a', '-'),
  fc.string({ unit: 'grapheme', maxLength: 2 }),
  fc.string({ unit: 'binary', maxLength: 2 }),
);
const hostileText = fc.array(hostileChar, { maxLength: 60 }).map((parts) => parts.join(''));

function plan(files: Plan['files'], secrets: Plan['secrets'] = []): Plan {
  return {
    node: 'n1',
    module: 'web',
    build: '1',
    archive: { ref: 'obj://b/x.tar', digest: 'sha256:' + 'a'.repeat(64) },
    files,
    placement: { dir: { x: '/etc/web' } },
    secrets,
    provisions: [],
    provides: [],
    items: [],
    collections: [],
  };
}

test('scanning: every placeholder found is a real one, and each literal run plus placeholders rebuild the text', () => {
  check('scan rebuilds the text', hostileText, (text) => {
    const { literals, placeholders } = scanPlaceholders(text);
    assert.is(literals.length, placeholders.length + 1);
    const rebuilt = literals.map((l, i) => l + (i < placeholders.length ? `\${${placeholders[i]!.kind}:${placeholders[i]!.name}}` : '')).join('');
    // Escapes come out as `${`: the rebuilt text is the text with every escape resolved once.
    assert.is(
      rebuilt,
      renderPlaceholders(text, (p) => `\${${p.kind}:${p.name}}`),
    );
    for (const p of placeholders) assert.match(`\${${p.kind}:${p.name}}`, /^\$\{[a-z][a-z0-9-]*:[^\s{}$\-=+?][^\s{}$]*\}$/);
  });
});

test('render(parse) round trip: writing each placeholder back gives the text with `$${` read as `${`', () => {
  check('render(parse) round trip', hostileText, (text) => {
    const back = renderPlaceholders(text, (p) => `\${${p.kind}:${p.name}}`);
    const again = parsePlaceholders(text).length;
    assert.is(scanPlaceholders(text).placeholders.length, again);
    // Text with no `$${` is its own rendering.
    if (!text.includes('$${')) assert.is(back, text);
  });
});

test('no value character ever yields a secret part or hides one the template names', () => {
  const template = fc
    .array(fc.oneof(fc.constantFrom('${config:a}', '${config:b}', '${dir:x}', '${secret:k}', '${secret:j}', '$${secret:k}', 'text', '$', '\n'), hostileText), {
      maxLength: 12,
    })
    .map((parts) => parts.join(''));
  check('values never become secrets', fc.tuple(template, hostileText, hostileText), ([text, a, b]) => {
    const compiled = compileTemplate(text);
    const resolve: ValueLookup = {
      lookup: (_plan, wanted) => ({ state: 'value', text: wanted.name === 'a' ? a : b, dependency: `config:web:${wanted.name}` }),
    };
    const prepared = prepareTemplates(new Map([['t', new TextEncoder().encode(text)]]));
    if (!prepared.ok) return; // lone surrogates in a generated template are not UTF-8 once encoded
    const out = fillModule(
      plan(
        [{ path: '/f', template: 't', mode: 'owned', change: 'none' }],
        [
          { name: 'k', vault: 'v/k' },
          { name: 'j', vault: 'v/j' },
        ],
      ),
      prepared.value,
      resolve,
    );
    if (!out.ok) return;
    const content: FillContent = out.value.files[0]!.content;
    const secretParts = typeof content === 'string' ? [] : content.filter((p) => typeof p !== 'string').map((p) => (p as { secret: string }).secret);
    const named = scanPlaceholders(new TextDecoder().decode(new TextEncoder().encode(text)))
      .placeholders.filter((p) => p.kind === 'secret')
      .map((p) => p.name);
    assert.equal(secretParts, named);
    assert.is(compiled.secrets.length, compiled.runs.length - 1);
    assert.is(out.value.files[0]!.digest, contentDigest(content));
    assert.type(contentText(content), 'string');
  });
});

test('scanning is linear in time and memory on adversarial input (unclosed `${`, escapes, long names)', () => {
  const shapes: [string, (n: number) => string][] = [
    ['unclosed ${', (n) => '${'.repeat(n)],
    ['unclosed ${a:', (n) => '${a:'.repeat(n)],
    ['escapes', (n) => '$${'.repeat(n)],
    ['long name without }', (n) => '${a:' + 'x'.repeat(n * 2)],
    ['long kind without :', (n) => '${' + 'a'.repeat(n * 2)],
    ['dollars', (n) => '$'.repeat(n * 2)],
  ];
  for (const [name, make] of shapes) {
    const small = make(250_000);
    const large = make(2_000_000);
    // The least of a few runs, in this process's CPU time: a neighbour holding the core (the suites
    // run in a pool) is not the scan's time, and the least drops a pause of the process's own.
    const time = (text: string) => {
      let best = Infinity;
      for (let run = 0; run < 3; run++) {
        const started = process.cpuUsage();
        compileTemplate(text);
        const used = process.cpuUsage(started);
        best = Math.min(best, (used.user + used.system) / 1000);
      }
      return best;
    };
    time(small); // warm up
    const t1 = time(small);
    global.gc?.();
    const before = process.memoryUsage().heapUsed;
    const t8 = time(large);
    const grown = process.memoryUsage().heapUsed - before;
    // 8× the input: a linear scan takes about 8× as long, a quadratic one 64×; 20 ms of slack for timer noise on tiny runs.
    assert.ok(t8 < t1 * 24 + 20, `${name}: ${t1.toFixed(1)} ms for ${small.length} chars but ${t8.toFixed(1)} ms for ${large.length}`);
    assert.ok(grown < large.length * 12, `${name}: heap grew ${grown} bytes for ${large.length} chars`);
    console.log(`fuzz: linear scan of ${name}: ${t1.toFixed(1)} ms / ${t8.toFixed(1)} ms for 1× / 8× input`);
  }
});

test('key tokens: encode then decode is exact for any text, and a decoded token encodes back to itself', () => {
  check('encodeToken/decodeToken round trip', fc.string({ unit: 'grapheme', maxLength: 40 }), (text) => {
    const decoded = decodeToken(encodeToken(text));
    if (text === '') assert.not.ok(decoded.ok);
    else assert.equal(decoded, { ok: true, value: text });
  });
  check('decodeToken never throws on arbitrary tokens', fc.string({ unit: 'binary', maxLength: 40 }), (token) => {
    const decoded = decodeToken(token);
    if (decoded.ok) assert.is(encodeToken(decoded.value), token);
  });
  check('a leading byte-order mark survives a token', fc.string({ maxLength: 10 }), (text) => {
    assert.equal(decodeToken(encodeToken('\uFEFF' + text)), { ok: true, value: '\uFEFF' + text });
  });
});

test('bounded JSON: depth is found without recursion, and too deep or too large is refused with the limit', () => {
  check('jsonDepth matches the structure', fc.jsonValue({ maxDepth: 8 }), (value) => {
    const text = JSON.stringify(value);
    assert.is(jsonDepth(text), depthOf(value));
    assert.is(jsonDepth(Buffer.from(text)), depthOf(value));
    assert.equal(parseBoundedJson(text, { maxBytes: 1 << 20 }), { ok: true, value: JSON.parse(text) });
  });
  check('parseBoundedJson never throws on arbitrary text', fc.string({ unit: 'binary', maxLength: 80 }), (text) => {
    const parsed = parseBoundedJson(text, { maxBytes: 1 << 20 });
    if (!parsed.ok) assert.type(parsed.reason, 'string');
  });
  const deep = '['.repeat(100_000) + ']'.repeat(100_000);
  assert.equal(parseBoundedJson(deep, { maxBytes: 1 << 20 }), { ok: false, reason: `nested deeper than ${MAX_JSON_DEPTH} levels` });
  assert.equal(parseBoundedJson('"' + 'x'.repeat(2000) + '"', { maxBytes: 1000 }), { ok: false, reason: '2002 bytes, past the limit of 1000 bytes' });
});

test('a report too large for the bus is cut to fit, saying what was cut, and a small one is untouched', () => {
  const report = (files: number, pathLength: number): Report => ({
    node: 'n1',
    module: 'web',
    build: '1',
    state: 'waiting',
    files: Array.from({ length: files }, (_, i) => ({ path: `/${i}/` + 'p'.repeat(pathLength), action: 'written', digest: 'sha256:x' })),
    waiting: Array.from({ length: files }, (_, i) => ({ kind: 'config', name: `k${i}`, files: [`/${i}/` + 'p'.repeat(pathLength)] })),
    at: '2026-01-01T00:00:00Z',
  });
  check(
    'fitReport always fits',
    fc.tuple(fc.integer({ min: 0, max: 40 }), fc.integer({ min: 0, max: 5000 }), fc.integer({ min: 2000, max: 100_000 })),
    ([files, length, max]) => {
      const r = report(files, length);
      const fitted = fitReport(r, max);
      assert.ok(Buffer.byteLength(JSON.stringify(fitted)) <= max);
      if (Buffer.byteLength(JSON.stringify(r)) <= max) assert.is(fitted, r);
      else assert.match(fitted.reason ?? '', /report cut to fit/);
    },
    150,
  );
  const cut = fitReport(report(3, 900_000), 1024 * 1024 - 1024);
  assert.match(cut.reason!, /report cut to fit 1047552 bytes: \d+ text\(s\) shortened to 1024 characters/);
  assert.is(cut.files.length, 3);
});

test.after(() => console.log(`fuzz: ${total} cases in all`));

function depthOf(value: unknown): number {
  if (Array.isArray(value)) return 1 + Math.max(0, ...value.map(depthOf));
  if (value !== null && typeof value === 'object') return 1 + Math.max(0, ...Object.values(value).map(depthOf));
  return 0;
}

test.run();
