// Key encoding (DESIGN §2) and every key shape (§3).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { encodeToken, decodeToken } from '../src/shared/keys.ts';

test('the examples of the contract encode as written', () => {
  assert.is(encodeToken('shell:zsh:normal'), 'shell=3Azsh=3Anormal');
  assert.is(encodeToken('a.b'), 'a=2Eb');
  assert.is(encodeToken('x=y'), 'x=3Dy');
  const back = decodeToken('shell=3Azsh=3Anormal');
  assert.equal(back, { ok: true, value: 'shell:zsh:normal' });
});

test.run();
