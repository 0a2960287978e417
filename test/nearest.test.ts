// "Did you mean" (src/shared/base/nearest.ts): the bounded optimal-string-alignment distance agrees with
// the textbook table wherever it is within its bound, and the suggestions a typo gets.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { boundedDistance, didYouMean, nearestName, suggestionBound } from '../src/shared/base/nearest.ts';
import { KNOWN_KINDS } from '../src/shared/contract/registry.ts';
import { SEED } from './helpers/random.ts';

/** The textbook optimal-string-alignment distance, a whole table, no bound. */
function osa(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[a.length]![b.length]!;
}

const word = fc.string({ unit: fc.constantFrom('a', 'b', 'c', 'd'), maxLength: 9 });

test('the bounded distance is the textbook one when within the bound, and bound + 1 past it', () => {
  fc.assert(
    fc.property(word, word, fc.integer({ min: 0, max: 5 }), (a, b, bound) => {
      const exact = osa(a, b);
      assert.is(boundedDistance(a, b, bound), exact <= bound ? exact : bound + 1, `${a} ${b} bound ${bound}`);
    }),
    { seed: SEED, numRuns: 3000 },
  );
});

test('a typo gets the field or kind it was meant as: a swap, a missing, an extra or a wrong letter', () => {
  const fileFields = ['path', 'template', 'owner', 'mode', 'change', 'fileMode', 'comment'];
  assert.is(nearestName('mdoe', fileFields), 'mode');
  assert.is(nearestName('chnage', fileFields), 'change');
  assert.is(nearestName('templte', fileFields), 'template');
  assert.is(nearestName('filemode', fileFields), 'fileMode');
  assert.is(nearestName('secrest', ['files', 'secrets', 'provisions', 'provides', 'items', 'collections']), 'secrets');
  assert.is(didYouMean('confg', KNOWN_KINDS), 'did you mean "config"?');
  assert.is(didYouMean('secert', KNOWN_KINDS), 'did you mean "secret"?');
  assert.is(didYouMean('dirr', KNOWN_KINDS), 'did you mean "dir"?');
});

test('nothing is suggested for a word far from every name, nor for a name itself; a tie goes to the first', () => {
  assert.is(nearestName('line', KNOWN_KINDS), undefined);
  assert.is(nearestName('vault', KNOWN_KINDS), undefined);
  assert.is(nearestName('mode', ['mode', 'node']), undefined);
  assert.is(nearestName('xode', ['mode', 'node']), 'mode');
  assert.is(nearestName('', ['a']), 'a');
  assert.equal([suggestionBound('ab'), suggestionBound('secrest'), suggestionBound('x'.repeat(40))], [1, 2, 3]);
});

test('a hostile word of a megabyte is judged at once: lengths too far apart are never compared', () => {
  const started = Date.now();
  assert.is(nearestName('m'.repeat(1 << 20), ['mode', 'path', 'template']), undefined);
  assert.ok(Date.now() - started < 100, `${Date.now() - started} ms`);
});

test.run();
