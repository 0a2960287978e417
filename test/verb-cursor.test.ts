// The verb's reads from a cursor (src/server/verb/read.ts, key-index.ts, value-fetch.ts): every page
// in key order from a key list kept caught up with the stream, only a page's values fetched, against
// a real nats-server and a seat user granted nothing but stream info, direct get and its own inbox.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import fc from 'fast-check';
import { connect, createInbox, type NatsConnection } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import { ensureKv } from '../src/shared/bus/bus.ts';
import { jsonBytes } from '../src/shared/base/bytes.ts';
import { APPLIED, COLLECT, NEEDS, REGISTRY_BUCKET } from '../src/shared/contract/buckets.ts';
import { needKey } from '../src/shared/contract/keys.ts';
import { memoryLogger } from '../src/shared/cli/log.ts';
import { PROVISIONING_VERB } from '../src/shared/contract/subjects.ts';
import type { VerbReply } from '../src/shared/contract/verb.ts';
import { answerProvisioning, serveProvisioning } from '../src/server/verb/serve.ts';
import { compareKeys } from '../src/shared/contract/keys.ts';
import { VerbReader } from '../src/server/verb/read.ts';
import { firstAfter, LISTING_IDLE_MS, MAX_CATCH_UP } from '../src/server/verb/key-index.ts';
import { startNats, type NatsServer } from './helpers/nats.ts';
import { waitFor } from './helpers/wait.ts';
import { forEachPage } from '../src/server/commands/query/command.ts';

const SEAT_INBOX = '_INBOX_seat';
// As bus-config grants the seat (seatPublish): a direct get by body, or by the key in its subject.
const GRANTED = [APPLIED, NEEDS, REGISTRY_BUCKET, COLLECT].flatMap((b) => [
  `$JS.API.STREAM.INFO.KV_${b}`,
  `$JS.API.DIRECT.GET.KV_${b}`,
  `$JS.API.DIRECT.GET.KV_${b}.>`,
]);
const AUTH = `authorization {
  users = [
    { user: admin, password: admin }
    { user: seat, password: seat, permissions: {
        publish: { allow: ${JSON.stringify(GRANTED)} }
        subscribe: { allow: ["${SEAT_INBOX}.>", "${PROVISIONING_VERB}"] }
        allow_responses: true } }
  ]
}`;

const NODES = 40;
const MODULES = 55;

let server: NatsServer;
let admin: NatsConnection;
let seat: NatsConnection;
const kv: Record<string, KV> = {};
/** Every key written to the applied bucket and not deleted. */
const written = new Set<string>();

const report = (node: string, module: string, build = 'b1') => ({
  node,
  module,
  build,
  state: 'applied',
  files: [{ path: `/etc/${module}.conf`, action: 'written', digest: 'sha256:x' }],
  waiting: [],
  at: '2026-01-01T00:00:00Z',
});
const nodeName = (n: number) => `n${String(n).padStart(2, '0')}`;
const moduleName = (m: number) => `m${String(m).padStart(4, '0')}`;

async function putReports(keys: string[]): Promise<void> {
  const js = jetstream(admin);
  for (let i = 0; i < keys.length; i += 500) {
    await Promise.all(
      keys.slice(i, i + 500).map((key) => {
        const [node, module] = key.split('.') as [string, string];
        written.add(key);
        return js.publish(`$KV.${APPLIED}.${key}`, jsonBytes(report(node, module)));
      }),
    );
  }
}

function shuffled<T>(items: T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = (i * 7919 + 13) % (i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** A reader counting its listings and its value fetches. */
function countingReader(now?: () => number) {
  const counts = { listed: 0, fetched: 0 };
  const reader = new VerbReader(seat, { inboxPrefix: SEAT_INBOX, now, onList: () => void counts.listed++, onFetch: () => void counts.fetched++ });
  return { reader, counts };
}

async function page(reader: VerbReader, request: object): Promise<VerbReply> {
  const reply = await answerProvisioning(seat, jsonBytes(request), seat.info!.max_payload, reader);
  if ('error' in reply) throw new Error(`verb answered {error}: ${reply.error}`);
  return reply;
}

/** Walks every page of `request`, calling `between` after each page (1-based) and the fetches it made. */
async function walk(
  reader: VerbReader,
  request: object,
  between?: (pages: number, reply: VerbReply) => Promise<void>,
): Promise<{ keys: string[]; pages: number }> {
  const keys: string[] = [];
  let after: string | undefined;
  let pages = 0;
  do {
    const reply = await page(reader, { ...request, ...(after === undefined ? {} : { after }) });
    assert.equal(reply.outOfShape, [], `out of shape on page ${pages + 1}`);
    keys.push(...reply.entries.map((e) => e.key));
    if (reply.next !== undefined) assert.is(reply.next, reply.entries.at(-1)?.key);
    after = reply.next;
    pages++;
    await between?.(pages, reply);
  } while (after !== undefined);
  return { keys, pages };
}

/**
 * Waits until `fetched` values have been asked in all (a page asks the next page's once its reply is
 * written, a turn of the event loop after it), then checks no more were; at most 2 s.
 */
async function readAhead(counts: { fetched: number }, fetched: number, what: string): Promise<void> {
  const until = Date.now() + 2000;
  while (counts.fetched < fetched && Date.now() < until) await new Promise((r) => setTimeout(r, 5));
  // A turn more: one asked past the count would show.
  await new Promise((r) => setImmediate(r));
  assert.is(counts.fetched, fetched, what);
}

const sortedKeys = (keys: Iterable<string>, prefix = '') => [...keys].filter((k) => k.startsWith(prefix)).sort(compareKeys);

test.before(async () => {
  server = await startNats(AUTH);
  admin = await connect({ servers: server.url, user: 'admin', pass: 'admin' });
  for (const bucket of [APPLIED, NEEDS, REGISTRY_BUCKET]) kv[bucket] = await ensureKv(admin, bucket, 1);
  seat = await connect({ servers: server.url, user: 'seat', pass: 'seat', inboxPrefix: SEAT_INBOX });
  const keys: string[] = [];
  for (let n = 0; n < NODES; n++) for (let m = 0; m < MODULES; m++) keys.push(`${nodeName(n)}.${moduleName(m)}`);
  // Written out of key order, so that stream order and key order differ.
  await putReports(shuffled(keys));
});

test.after(async () => {
  await seat?.close();
  await admin?.close();
  await server?.cleanup();
});

test('compareKeys orders any two strings as the bytes of their UTF-8 do', () => {
  const text = fc.string({ unit: 'binary', maxLength: 12 });
  fc.assert(
    fc.property(text, text, (a, b) => {
      assert.is(Math.sign(compareKeys(a, b)), Math.sign(Buffer.compare(Buffer.from(a), Buffer.from(b))), `${JSON.stringify(a)} ${JSON.stringify(b)}`);
    }),
    { numRuns: 5000 },
  );
  assert.ok(compareKeys('\u{1F642}', '\uFFFD') > 0, 'a code point past U+FFFF sorts after U+FFFD, as in UTF-8');
});

test('firstAfter finds the first key past a cursor, present in the list or not', () => {
  const keys = ['a', 'a.b', 'b', 'c'];
  assert.is(firstAfter(keys, undefined), 0);
  assert.is(firstAfter(keys, 'a'), 1);
  assert.is(firstAfter(keys, 'a.a'), 1);
  assert.is(firstAfter(keys, 'c'), 4);
  assert.is(firstAfter(keys, 'z'), 4);
  assert.is(firstAfter([], 'a'), 0);
});

test(`walking ${NODES * MODULES} reports 100 a page gives every key once in byte order, as one full read does, listing the bucket once`, async () => {
  const { reader, counts } = countingReader();
  let before = 0;
  const { keys, pages } = await walk(reader, { what: 'applied', limit: 100 }, async (n, reply) => {
    // A page asks for its own values and one past them (to see where it ends), and as many for the
    // next page while this one is read; never the bucket's.
    assert.ok(counts.fetched - before <= 2 * 101, `page ${n} fetched ${counts.fetched - before} values for ${reply.entries.length} entries`);
    before = counts.fetched;
  });
  assert.is(pages, Math.ceil(written.size / 100));
  // Each value asked once, and one past each page.
  assert.ok(counts.fetched <= written.size + pages, `${counts.fetched} values fetched for ${written.size} keys in ${pages} pages`);
  assert.equal(keys, sortedKeys(written));
  assert.is(counts.listed, 1);
  const whole = await page(countingReader().reader, { what: 'applied' });
  assert.is(whole.next, undefined);
  assert.equal(
    whole.entries.map((e) => e.key),
    keys,
  );
  assert.equal(whole.entries[0]!.value, report('n00', 'm0000'));
});

test('a write or delete during the walk behind the cursor does not repeat or derail it; one ahead appears or vanishes', async () => {
  const { reader, counts } = countingReader();
  const behind = 'n00.zz-late';
  const ahead = 'n30.aa-late';
  const deletedAhead = `${nodeName(35)}.${moduleName(10)}`;
  const rewrittenBehind = `${nodeName(1)}.${moduleName(3)}`;
  let cursor = '';
  const { keys } = await walk(reader, { what: 'applied', limit: 100 }, async (n, reply) => {
    if (n !== 3) return;
    cursor = reply.next!;
    assert.ok(compareKeys(behind, cursor) < 0 && compareKeys(rewrittenBehind, cursor) < 0 && compareKeys(cursor, ahead) < 0);
    await putReports([behind, ahead]);
    await kv[APPLIED]!.put(rewrittenBehind, jsonBytes(report(nodeName(1), moduleName(3), 'b2')));
    await kv[APPLIED]!.delete(deletedAhead);
    // The cursor's own key deleted: the walk goes on from the next key after it all the same.
    await kv[APPLIED]!.delete(cursor);
    written.delete(deletedAhead);
    written.delete(cursor);
  });
  assert.is(new Set(keys).size, keys.length, 'no key twice');
  assert.equal(keys, sortedKeys(keys), 'in byte order');
  assert.ok(keys.includes(ahead), 'the key written ahead appears');
  assert.not.ok(keys.includes(behind), 'the key written behind is not gone back for');
  assert.not.ok(keys.includes(deletedAhead), 'the key deleted ahead vanishes');
  assert.ok(keys.includes(cursor), 'the cursor key was read before it was deleted');
  assert.equal(
    keys,
    sortedKeys([...written, cursor]).filter((k) => k !== behind),
  );
  assert.is(counts.listed, 1, 'the changes were caught up, not listed again');
  assert.equal(await walk(countingReader().reader, { what: 'applied', limit: 500 }).then((w) => w.keys), sortedKeys(written), 'a fresh walk sees the deletes');
});

test('narrowing by node pages that node alone, in order', async () => {
  const { reader } = countingReader();
  const { keys, pages } = await walk(reader, { what: 'applied', node: 'n07', limit: 10 });
  assert.equal(keys, sortedKeys(written, 'n07.'));
  assert.is(keys.length, MODULES);
  assert.is(pages, Math.ceil(MODULES / 10));
  const web = await walk(reader, { what: 'applied', module: moduleName(9), limit: 7 });
  assert.equal(
    web.keys,
    sortedKeys(written).filter((k) => k.endsWith(`.${moduleName(9)}`)),
  );
});

test('pages come the same through the served verb, each under max payload', async () => {
  const serving = serveProvisioning(seat, memoryLogger(), countingReader().reader);
  // The verb's subscription is at the server once the seat's connection has flushed.
  await seat.flush();
  try {
    const keys: string[] = [];
    let after: string | undefined;
    do {
      const msg = await admin.request(PROVISIONING_VERB, jsonBytes({ what: 'applied', limit: 700, ...(after ? { after } : {}) }), { timeout: 10_000 });
      assert.ok(msg.data.length <= seat.info!.max_payload);
      const reply = msg.json<VerbReply>();
      keys.push(...reply.entries.map((e) => e.key));
      after = reply.next;
    } while (after !== undefined);
    assert.equal(keys, sortedKeys(written));
  } finally {
    await serving.stop();
  }
});

test("a page's reply goes out before the next page's values are asked: the server answers them after it", async () => {
  const { reader, counts } = countingReader();
  const serving = serveProvisioning(seat, memoryLogger(), reader);
  // Every direct get the seat sends, seen on the asker's own connection: the server hands a
  // connection what it routes in the order it reads it, so the count when the reply comes is how
  // many the seat had sent before it.
  let asked = 0;
  const spy = admin.subscribe(`$JS.API.DIRECT.GET.KV_${APPLIED}.>`, { callback: () => void asked++ });
  await admin.flush();
  await seat.flush();
  try {
    // Counted in the reply's own callback: the spy's messages read in the same chunk after it are not yet.
    let before: number | undefined;
    const inbox = createInbox();
    const replies = admin.subscribe(inbox, { max: 1, callback: () => void (before = asked) });
    admin.publish(PROVISIONING_VERB, jsonBytes({ what: 'applied', limit: 100 }), { reply: inbox });
    await replies.closed;
    await waitFor('the read-ahead asked', () => counts.fetched === 2 * 101 || undefined);
    assert.is(before, 101, `${before} direct gets before the reply, of ${counts.fetched}`);
  } finally {
    spy.unsubscribe();
    await serving.stop();
  }
});

test(`a key list is caught up change by change, listed again past ${MAX_CATCH_UP} changes, and dropped after ${LISTING_IDLE_MS} ms unused`, async () => {
  let clock = 1_000_000;
  const { reader, counts } = countingReader(() => clock);
  const needs = (count: number, from: number) =>
    Promise.all(
      Array.from({ length: count }, (_, i) => {
        const name = `x${from + i}`;
        return kv[NEEDS]!.put(needKey('n01', 'web', 'config', name), jsonBytes({ node: 'n01', module: 'web', kind: 'config', name, files: [], met: true }));
      }),
    );
  await needs(3, 0);
  const first = await page(reader, { what: 'needs' });
  assert.is(first.entries.length, 3);
  assert.is(counts.listed, 1);
  await needs(2, 3);
  assert.is((await page(reader, { what: 'needs' })).entries.length, 5);
  assert.is(counts.listed, 1, 'two changes are caught up');
  await needs(MAX_CATCH_UP + 1, 5);
  assert.is((await page(reader, { what: 'needs' })).entries.length, MAX_CATCH_UP + 6);
  assert.is(counts.listed, 2, 'past MAX_CATCH_UP changes the filter is listed again');
  clock += LISTING_IDLE_MS + 1;
  assert.is((await page(reader, { what: 'needs', node: 'n01' })).entries.length, MAX_CATCH_UP + 6);
  assert.is((await page(reader, { what: 'needs' })).entries.length, MAX_CATCH_UP + 6);
  assert.is(counts.listed, 4, 'a list unused past LISTING_IDLE_MS is listed again (and each filter has its own)');
});

test('an empty bucket answers an empty page, a missing one {error} naming it', async () => {
  const reply = await answerProvisioning(seat, jsonBytes({ what: 'registry' }), 1 << 20, countingReader().reader);
  assert.equal(reply, { what: 'registry', entries: [], outOfShape: [] });
  const missing = await answerProvisioning(seat, jsonBytes({ what: 'collect' }), 1 << 20, countingReader().reader);
  assert.equal(missing, { error: 'reading mesh-provisioner_collect: stream not found' });
});

// Last: it grows the applied bucket fivefold.
test('a page reads what it returns, not the bucket: the same values per page at 2,200 and at 11,000 keys', async () => {
  const after = `${nodeName(12)}.${moduleName(20)}`;
  const fetchedPerPage = async () => {
    const { reader, counts } = countingReader();
    const first = await page(reader, { what: 'applied', limit: 50, after });
    const fetchedFirst = counts.fetched;
    await page(reader, { what: 'applied', limit: 50, after: first.next });
    assert.is(counts.listed, 1);
    return [fetchedFirst, counts.fetched - fetchedFirst];
  };
  const small = await fetchedPerPage();
  const more: string[] = [];
  for (let n = NODES; n < NODES * 5; n++) for (let m = 0; m < MODULES; m++) more.push(`${nodeName(n)}.${moduleName(m)}`);
  await putReports(shuffled(more));
  const large = await fetchedPerPage();
  assert.equal(large, small);
  // Its own values and one past them, and as many for the next page.
  for (const fetched of large) assert.ok(fetched <= 2 * 51, `${fetched} values fetched for a page of 50`);
});

test("the next page's values are asked while this one is read, and taken only when the stream has not moved since", async () => {
  const { reader, counts } = countingReader();
  const keys = sortedKeys(written);
  const first = await page(reader, { what: 'applied', limit: 100 });
  await readAhead(counts, 2 * 101, "page 1's values and one past them, then as many for page 2");
  const second = await page(reader, { what: 'applied', limit: 100, after: first.next });
  assert.equal(
    second.entries.map((e) => e.key),
    keys.slice(100, 200),
  );
  await readAhead(counts, 3 * 101, "page 2 read what page 1 asked for it, and asked page 3's");
  // A report on page 3 rewritten after page 3's values were asked: the stream moved, so they are asked again.
  const rewritten = keys[250]!;
  const [node, module] = rewritten.split('.') as [string, string];
  await kv[APPLIED]!.put(rewritten, jsonBytes(report(node, module, 'b9')));
  const third = await page(reader, { what: 'applied', limit: 100, after: second.next });
  assert.equal(third.entries.find((e) => e.key === rewritten)?.value, report(node, module, 'b9'));
  // Page 3 asked its own values again, and not page 4's: read-ahead under a stream that moves would be asked twice.
  const third3 = counts.fetched;
  assert.ok(third3 - 3 * 101 <= 102, `page 3 fetched ${third3 - 3 * 101} values`);
  const fourth = await page(reader, { what: 'applied', limit: 100, after: third.next });
  assert.equal(
    fourth.entries.map((e) => e.key),
    keys.slice(300, 400),
  );
  // Page 4 took what page 3 had asked (the stream did not move), so page 5's are asked ahead again.
  await readAhead(counts, third3 + 100 + 101, "page 4 took what page 3 asked, and asked page 5's");
  await kv[APPLIED]!.put(rewritten, jsonBytes(report(node, module)));
});

test("the next page's values are asked from where this page stopped, not from the start of the run it stopped in", async () => {
  // A first value of ~19 KB makes the fetch's window 2 MiB / 19 KB = 110 values, little more than a
  // page of 100 and its one past: asked from the start of the run the page stopped in (all of its
  // values, when they arrived together), the window would leave the next page most of its values to ask.
  const node = 'w00';
  const big = {
    ...report(node, 'a0000'),
    files: Array.from({ length: 150 }, (_, i) => ({ path: `/etc/w/${'f'.repeat(62)}${i}.conf`, action: 'written', digest: 'sha256:x' })),
  };
  const size = jsonBytes(big).length;
  const window = Math.floor((2 * 1024 * 1024) / size);
  assert.ok(window >= 102 && window < 2 * 101, `a window of ${window} values`);
  written.add(`${node}.a0000`);
  await jetstream(admin).publish(`$KV.${APPLIED}.${node}.a0000`, jsonBytes(big));
  await putReports(Array.from({ length: 400 }, (_, m) => `${node}.${moduleName(m + 1)}`));
  const { reader, counts } = countingReader();
  const keys = sortedKeys(written, `${node}.`);
  const first = await page(reader, { what: 'applied', node, limit: 100 });
  assert.is(first.next, keys[99]);
  await readAhead(counts, 2 * 101, "page 1's values and one past them, then as many for page 2");
  const second = await page(reader, { what: 'applied', node, limit: 100, after: first.next });
  assert.equal(
    second.entries.map((e) => e.key),
    keys.slice(100, 200),
  );
  await readAhead(counts, 3 * 101, "page 2 took what page 1 asked for it, and asked page 3's");
});

test("a query's exit code: 2 only for a request the seat refused; 1 when it is busy or could not read its bucket", async () => {
  const answers = ['busy', 'reading mesh-provisioner_applied: timeout', 'unknown what "appled"'];
  const sub = admin.subscribe('mesh-provisioner.provisioning', { callback: (_e, msg) => void msg.respond(jsonBytes({ error: answers.shift() })) });
  try {
    const codes: number[] = [];
    for (let i = 0; i < 3; i++) codes.push((await forEachPage(admin, { what: 'applied' }, () => {}))!.code);
    assert.equal(codes, [1, 1, 2]);
  } finally {
    sub.unsubscribe();
  }
});

test.run();
