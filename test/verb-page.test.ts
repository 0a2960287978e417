// One page of the verb's reply (src/server/verb/page.ts): kept as the rows' JSON texts, its text is
// what JSON.stringify makes of the reply, and a value read is not held past its row.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { Page, REPLY_HEADROOM, type Row } from '../src/server/verb/page.ts';

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

test("a page's entries are held outside V8's heap: a megabyte of them adds under a quarter of that to it (as strings: more than all of it)", () => {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const value = { node: 'n1', module: 'm1', state: 'applied', digest: 'sha256:' + 'b'.repeat(200) };
  gc();
  const before = process.memoryUsage().heapUsed;
  const page = new Page('applied', Infinity, 4 << 20);
  for (let i = 0; i < 4000; i++) assert.ok(page.add({ key: `n${String(i).padStart(5, '0')}.m1`, value }));
  gc();
  const held = process.memoryUsage().heapUsed - before;
  const size = page.bytes().length;
  assert.ok(size > 1_000_000, `a page of ${size} bytes`);
  assert.ok(held < size / 4, `the page added ${held} bytes to the heap for ${size} bytes of entries`);
  assert.is(page.text(), page.bytes().toString());
});

/** What a page must say for `rows` at `limit` and `budget`, judged by JSON.stringify of the whole reply alone. */
function expected(what: string, rows: Row[], limit: number, budget: number): { text: string; taken: number } {
  const reply: { what: string; entries: unknown[]; outOfShape: unknown[]; next?: string } = { what, entries: [], outOfShape: [] };
  let taken = 0;
  for (const row of rows) {
    const trial = structuredClone(reply);
    if ('value' in row) trial.entries.push(row);
    else trial.outOfShape.push(row);
    const withNext = { ...trial, next: row.key };
    const fits = !('value' in row && reply.entries.length >= limit) && Buffer.byteLength(JSON.stringify(withNext)) <= budget;
    if (!fits && taken > 0) return { text: JSON.stringify({ ...reply, next: rows[taken - 1]!.key }), taken };
    if (!fits) {
      const text = JSON.stringify(row);
      trial.entries = [];
      trial.outOfShape = [
        { key: row.key, reason: `value of ${Buffer.byteLength(text)} bytes does not fit in one reply (max payload ${budget + REPLY_HEADROOM})` },
      ];
    }
    Object.assign(reply, trial);
    taken++;
  }
  return { text: JSON.stringify(reply), taken };
}

test('a row written into the page and found not to fit is taken back: the page is still JSON.stringify of what it took, byte for byte', () => {
  const rows: Row[] = [];
  for (let i = 0; i < 40; i++) {
    const key = `n${i}.m${i % 3}`;
    rows.push(i % 7 === 3 ? { key, reason: `value: reason ${'r'.repeat(i)}` } : { key, value: { node: `n${i}`, text: 'é€😀"\\\n'.repeat(i % 5), n: i } });
  }
  for (let budget = 40; budget <= 2600; budget += 37) {
    for (const limit of [Infinity, 5]) {
      const page = new Page('applied', limit, budget);
      let taken = 0;
      while (taken < rows.length && page.add(rows[taken]!)) taken++;
      const want = expected('applied', rows, limit, budget);
      assert.is(page.text(), want.text, `budget ${budget}, limit ${limit}`);
      assert.is(taken, want.taken, `budget ${budget}, limit ${limit}`);
      assert.ok(page.bytes().length <= Math.max(budget, Buffer.byteLength(want.text)), `budget ${budget}`);
    }
  }
});

test.run();
