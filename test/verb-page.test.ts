// One page of the verb's reply (src/server/verb/page.ts): kept as the rows' JSON texts, its text is
// what JSON.stringify makes of the reply, and a value read is not held past its row.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Page, REPLY_HEADROOM } from '../src/server/verb/page.ts';

test("a page's text is JSON.stringify of its reply, byte for byte: entries, out-of-shape rows and next", () => {
  const page = new Page('applied', 2, 4096 - REPLY_HEADROOM);
  assert.ok(page.add({ key: 'n1.m1', value: { node: 'n1', module: 'm1', files: [{ path: '/etc/é"x' }] } }));
  assert.ok(page.add({ key: 'n1.m2', reason: 'value: field "state" must be one of …' }));
  assert.ok(page.add({ key: 'n1.m3', value: { node: 'n1', module: 'm3', waiting: [] } }));
  assert.not.ok(page.add({ key: 'n1.m4', value: {} }));
  const reply = {
    what: 'applied',
    entries: [
      { key: 'n1.m1', value: { node: 'n1', module: 'm1', files: [{ path: '/etc/é"x' }] } },
      { key: 'n1.m3', value: { node: 'n1', module: 'm3', waiting: [] } },
    ],
    outOfShape: [{ key: 'n1.m2', reason: 'value: field "state" must be one of …' }],
    next: 'n1.m3',
  };
  assert.is(page.text(), JSON.stringify(reply));
  assert.equal(page.reply, reply);
});

test('an empty page is the empty reply', () => {
  const page = new Page('needs', Infinity, 4096);
  assert.is(page.text(), JSON.stringify({ what: 'needs', entries: [], outOfShape: [] }));
});

test('a row is kept as the text it was sized by: the value read is not held (nor seen changed) past add', () => {
  const page = new Page('applied', Infinity, 4096);
  const value = { node: 'n1', module: 'm1', state: 'applied' };
  page.add({ key: 'n1.m1', value });
  value.state = 'failed';
  assert.equal(page.reply.entries, [{ key: 'n1.m1', value: { node: 'n1', module: 'm1', state: 'applied' } }]);
});

test.run();
