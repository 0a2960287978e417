// How the verb asks for and reads a page's values (src/server/verb/direct-get.ts, value-fetch.ts),
// against a real nats-server: a stored value read from its answer's bytes without decoding its
// headers, a gone key still read through them, and a key asked in the request's subject (a key too
// long for that in the body), by a seat user granted only what bus-config grants it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { connect, type Msg, type NatsConnection } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import { ensureKv } from '../src/shared/bus/bus.ts';
import { jsonBytes } from '../src/shared/base/bytes.ts';
import { APPLIED } from '../src/shared/contract/buckets.ts';
import { directGetSubject, headerBytes, keyPrefix, storedValue } from '../src/server/verb/direct-get.ts';
import { VerbReader } from '../src/server/verb/read.ts';
import { startNats, type NatsServer } from './helpers/nats.ts';

const SEAT_INBOX = '_INBOX_seat';
/** The key-in-subject form only: a walk that asked by body would hear nothing. */
const BY_SUBJECT_ONLY = [`$JS.API.STREAM.INFO.KV_${APPLIED}`, `$JS.API.DIRECT.GET.KV_${APPLIED}.>`];
const AUTH = `authorization {
  users = [
    { user: admin, password: admin }
    { user: seat, password: seat, permissions: {
        publish: { allow: ${JSON.stringify(BY_SUBJECT_ONLY)} }
        subscribe: { allow: ["${SEAT_INBOX}.>"] } } }
  ]
}`;

let server: NatsServer;
let admin: NatsConnection;
let seat: NatsConnection;
const LONG_KEY = `n1.${'m'.repeat(900)}`;

test.before(async () => {
  server = await startNats(AUTH);
  admin = await connect({ servers: server.url, user: 'admin', pass: 'admin' });
  seat = await connect({ servers: server.url, user: 'seat', pass: 'seat', inboxPrefix: SEAT_INBOX });
  const kv = await ensureKv(admin, APPLIED, 1);
  await kv.put('n1.m1', jsonBytes({ n: 1 }));
  await kv.put('n1.m2', jsonBytes({ n: 2 }));
  await kv.delete('n1.m2');
  await jetstream(admin).publish(`${keyPrefix(APPLIED)}${LONG_KEY}`, jsonBytes({ n: 3 }));
});

test.after(async () => {
  await seat?.close();
  await admin?.close();
  await server?.cleanup();
});

/** The answer to a direct get of `key`, and how often its headers were decoded when read. */
async function answer(key: string): Promise<{ msg: Msg; headerReads: () => number }> {
  const msg = await admin.request(directGetSubject(APPLIED), jsonBytes({ last_by_subj: keyPrefix(APPLIED) + key }), { timeout: 5000 });
  let reads = 0;
  const counted = new Proxy(msg, {
    get(target, property) {
      if (property === 'headers') reads++;
      return Reflect.get(target, property, target) as unknown;
    },
  });
  return { msg: counted, headerReads: () => reads };
}

test("nats.js keeps a message's header block where headerBytes reads it", async () => {
  const { msg } = await answer('n1.m1');
  assert.match(headerBytes(msg)?.toString() ?? 'no header block found', /^NATS\/1\.0\r\nNats-Stream: KV_/);
});

test('a stored value is read from its answer without decoding its headers; a deleted or missing key is gone', async () => {
  const stored = await answer('n1.m1');
  assert.equal(JSON.parse(Buffer.from(storedValue(stored.msg)!).toString()), { n: 1 });
  assert.is(stored.headerReads(), 0);
  const deleted = await answer('n1.m2');
  assert.is(storedValue(deleted.msg), null);
  assert.ok(deleted.headerReads() > 0);
  const missing = await answer('n1.m9');
  assert.is(storedValue(missing.msg), null);
});

test('a page asks each key in the subject of its direct get, a key too long for that in the body', async () => {
  const read = async (nc: NatsConnection, filter: string) => {
    const seen: Record<string, unknown> = {};
    const reader = new VerbReader(nc, { inboxPrefix: nc === seat ? SEAT_INBOX : undefined });
    for await (const run of reader.entries(APPLIED, filter, undefined, 1 << 20, { room: () => 100, last: () => undefined })) {
      for (const { key, data } of run) seen[key] = JSON.parse(Buffer.from(data).toString());
    }
    return seen;
  };
  assert.equal(await read(seat, 'n1.m1'), { 'n1.m1': { n: 1 } });
  const all = await read(admin, '>');
  assert.equal(Object.keys(all).sort(), ['n1.m1', LONG_KEY].sort());
  assert.equal(all[LONG_KEY], { n: 3 });
});

test.run();
