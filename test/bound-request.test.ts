// What a bound entry answers (DESIGN §3): the canonical JSON of a consumer's provision entry — keys
// sorted at every depth, no spaces, strings and numbers as JSON.stringify writes them — and its
// `for`, the same on the provider's side and the client's. The digests pinned here were made by
// another implementation (Python's json.dumps with sort_keys and hashlib), not by the code tested.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { canonicalJson } from '../src/shared/contract/canonical-json.ts';
import { provisionRequest, REQUEST_DIGEST_PATTERN, requestDigest } from '../src/shared/contract/bound-request.ts';
import { answers } from '../src/client/sources/bound.ts';
import { SEED } from './helpers/random.ts';

test('keys are sorted at every depth, inside lists too, with no space anywhere', () => {
  const value = { b: 1, a: { d: [{ z: true, y: null }, 'x y'], c: {} }, ' ': [] };
  assert.is(canonicalJson(value), '{" ":[],"a":{"c":{},"d":[{"y":null,"z":true},"x y"]},"b":1}');
  assert.is(canonicalJson([3, 'a', [], {}]), '[3,"a",[],{}]');
  assert.is(canonicalJson('plain'), '"plain"');
});

test('keys sort by UTF-16 code units (RFC 8785): an astral character before U+FFFF, uppercase before lowercase, "10" before "9"', () => {
  assert.is(canonicalJson({ '\uffff': 1, '😀': 2, a: 3, B: 4, é: 5 }), '{"B":4,"a":3,"é":5,"😀":2,"\uffff":1}');
  // JavaScript lists integer-like keys first, in numeric order: the canonical form does not.
  assert.is(canonicalJson({ 9: 'nine', 10: 'ten', '': 'none' }), '{"":"none","10":"ten","9":"nine"}');
});

test('text is written as itself but for what JSON must escape: quotes, backslashes, control characters and lone surrogates', () => {
  assert.is(canonicalJson({ k: 'é😀 "q" \\ \n\t\u0001\u007f' }), '{"k":"é😀 \\"q\\" \\\\ \\n\\t\\u0001\u007f"}');
  assert.is(canonicalJson('\ud800'), '"\\ud800"');
});

test('numbers are written as ECMAScript writes them: 1.0 as 1, -0 as 0, exponents past 1e21 and below 1e-6', () => {
  assert.is(canonicalJson([1.0, -0, 0.1, 1e21, 1e-7, 123456789012345680000, -2.5, 5e-324]), '[1,0,0.1,1e+21,1e-7,123456789012345680000,-2.5,5e-324]');
  assert.throws(() => canonicalJson(Number.NaN), /no form for the number NaN/);
  assert.throws(() => canonicalJson(Infinity), /no form for the number Infinity/);
});

test('a key whose value is undefined is left out, as JSON.stringify leaves it', () => {
  assert.is(canonicalJson({ a: undefined, b: 1 }), '{"b":1}');
});

test('canonical JSON parses back to the same value, and is the same whatever order the keys came in (fast-check)', () => {
  const json = fc.jsonValue();
  const shuffled = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(shuffled);
    if (v === null || typeof v !== 'object') return v;
    return Object.fromEntries(
      Object.entries(v)
        .reverse()
        .map(([k, x]) => [k, shuffled(x)]),
    );
  };
  fc.assert(
    fc.property(json, (v) => {
      const text = canonicalJson(v);
      assert.equal(JSON.parse(text), JSON.parse(JSON.stringify(v)));
      assert.is(canonicalJson(shuffled(v)), text);
      assert.is(canonicalJson(JSON.parse(text)), text);
      assert.not.match(text.replace(/"(?:[^"\\]|\\.)*"/g, '""'), /\s/, 'a space outside a string');
    }),
    { seed: SEED, numRuns: 300 },
  );
});

test("a provision entry's `for` is sha256: and the hex sha256 of its canonical JSON, whatever its key order", () => {
  const entry = {
    values: { b: [{ z: 1, a: 'é' }], name: 'web' },
    provider: 'postgres',
    node: 'db1',
    provision: 'database',
    name: 'db-password',
    local: 'main',
  };
  assert.is(requestDigest(entry), 'sha256:411866790d2b2666e7eec56ceb422c58527b1dcd1213871e406fb9fa433595db');
  assert.is(
    requestDigest({ provider: 'postgres', provision: 'database', node: 'b' }),
    'sha256:e366fb10a54661cb3394ed2107fab5c44f30c3279dd84424d39a463b2e73e10b',
  );
  assert.match(requestDigest(entry), REQUEST_DIGEST_PATTERN);
});

test('the request is the entry’s own fields alone: absent ones are not written, a field a newer plan adds is not part of it', () => {
  const plain = { provider: 'postgres', provision: 'database', node: 'b' };
  assert.equal(provisionRequest({ ...plain, local: undefined, name: undefined, values: undefined }), plain);
  assert.is(requestDigest({ ...plain, newer: 'field' } as typeof plain), requestDigest(plain));
  // `values: {}` is a request of its own: the plan holds it, and it is not the same as no values.
  assert.is.not(requestDigest({ ...plain, values: {} }), requestDigest(plain));
  assert.is.not(requestDigest({ ...plain, values: { name: 'Bad-Name' } }), requestDigest({ ...plain, values: { name: 'web' } }));
  assert.is.not(requestDigest({ ...plain, name: 'db-password' }), requestDigest(plain));
});

test("a client takes an entry answering its plan's provision, or naming none; one answering another request is not its", () => {
  const provision = { provider: 'postgres', provision: 'database', node: 'b', values: { name: 'web' } };
  const served = { as: 'web_a', user: 'web_a', values: { database: 'web' } };
  assert.ok(answers(served, provision), 'an entry without for is used as before');
  assert.ok(answers({ ...served, for: requestDigest(provision) }, provision));
  assert.ok(answers({ refused: 'no', for: requestDigest(provision) }, provision));
  const before = requestDigest({ ...provision, values: { name: 'old' } });
  assert.not.ok(answers({ ...served, for: before }, provision));
  assert.not.ok(answers({ refused: 'no', for: before }, provision), 'the refusal of the request before does not fail this one');
});

test.run();
