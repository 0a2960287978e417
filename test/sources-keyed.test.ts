// A node's keyed reads (src/client/sources/keyed.ts) on a real nats-server: a key read by direct get,
// kept current by the tail watch, the higher revision winning; an absent key known absent; past
// WHOLE_READ_KEYS keys one whole read of `<node>.>` instead of more gets.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import { connectBus, ensureKv } from '../src/shared/bus/bus.ts';
import type { WatchEvent } from '../src/shared/bus/watch/types.ts';
import { memoryLogger } from '../src/shared/cli/log.ts';
import { KeyedReads, WHOLE_READ_KEYS } from '../src/client/sources/keyed.ts';
import { startNats } from './helpers/nats.ts';
import { waitFor } from './helpers/wait.ts';

/** Every consumer create asked on `nc`'s bus: its deliver policy and start. */
function heardCreates(nc: NatsConnection): { policy: string; start?: number }[] {
  const creates: { policy: string; start?: number }[] = [];
  nc.subscribe('$JS.API.CONSUMER.CREATE.>', {
    callback: (_, msg) => {
      const { config } = msg.json<{ config: { deliver_policy: string; opt_start_seq?: number } }>();
      creates.push({ policy: config.deliver_policy, ...(config.opt_start_seq ? { start: config.opt_start_seq } : {}) });
    },
  });
  return creates;
}

const text = (e: WatchEvent | undefined) => (e?.value ? new TextDecoder().decode(e.value) : null);

test('a key named is read by get, a later change arrives on the tail watch, an absent key is known absent; no read from sequence 1', async () => {
  const server = await startNats();
  const nc = await connectBus({ servers: [server.url], name: 'test' });
  try {
    const kv = await ensureKv(nc, 'keyed', 1);
    await kv.put('n1.web.color', 'blue');
    await kv.put('n2.web.color', 'red');
    const creates = heardCreates(nc);
    const told = new Map<string, WatchEvent>();
    const reads = new KeyedReads(nc, 'keyed', 'n1', (e) => told.set(e.key, e), memoryLogger());
    try {
      await reads.caughtUp;
      const color = reads.want('n1.web.color');
      const size = reads.want('n1.web.size');
      assert.is(color.state, 'unread');
      await Promise.all([color, size].map((r) => (r.state === 'unread' ? r.read : undefined)));
      assert.is(text(told.get('n1.web.color')), 'blue');
      assert.equal(told.get('n1.web.size'), { key: 'n1.web.size', revision: 0, value: null }, 'known absent, at revision 0');
      assert.is(reads.want('n1.web.size').state, 'known');
      await kv.put('n1.web.size', 'large');
      await waitFor('the change on the watch', () => text(told.get('n1.web.size')) === 'large');
      assert.not.ok(told.has('n2.web.color'));
      // More absent keys than gets in flight at once: each answered, none left waiting for a slot.
      const absent = Array.from({ length: 200 }, (_, i) => `n1.gone.k${i}`);
      for (const key of absent) reads.want(key);
      await waitFor('200 absent keys known absent', () => absent.every((key) => reads.want(key).state === 'known'), 5000);
      assert.equal(creates, [{ policy: 'new' }], 'one tail watch, nothing from sequence 1');
    } finally {
      reads.stop();
    }
  } finally {
    await nc.close();
    await server.cleanup();
  }
});

test(`past ${WHOLE_READ_KEYS} keys named, the node's keys are read whole once instead of a get each`, async () => {
  const server = await startNats();
  const nc = await connectBus({ servers: [server.url], name: 'test' });
  try {
    const kv = await ensureKv(nc, 'many', 1);
    const n = WHOLE_READ_KEYS + 10;
    await Promise.all(Array.from({ length: n / 2 }, (_, i) => kv.put(`n1.m${i}.k`, `v${i}`)));
    const creates = heardCreates(nc);
    const told = new Map<string, WatchEvent>();
    const reads = new KeyedReads(nc, 'many', 'n1', (e) => told.set(e.key, e), memoryLogger());
    let gets = 0;
    nc.subscribe('$JS.API.DIRECT.GET.>', { callback: () => void gets++ });
    try {
      await reads.caughtUp;
      const wanted = Array.from({ length: n }, (_, i) => reads.want(`n1.m${i}.k`));
      await Promise.all(wanted.map((r) => (r.state === 'unread' ? r.read : undefined)));
      assert.is(text(told.get('n1.m3.k')), 'v3');
      assert.is(told.get(`n1.m${n - 1}.k`)?.value, null);
      assert.is(gets, 0, 'no get');
      assert.equal(
        creates.map((c) => c.policy),
        ['new', 'by_start_sequence'],
        'the tail watch, then one read from the start',
      );
      assert.is(reads.want('n1.other.k').state, 'known', 'every key of the node is known after the whole read');
    } finally {
      reads.stop();
    }
  } finally {
    await nc.close();
    await server.cleanup();
  }
});

test('read whole before any key is named (a node of many modules at its start): every key known, a key absent too, and no get', async () => {
  const server = await startNats();
  const nc = await connectBus({ servers: [server.url], name: 'test' });
  try {
    const kv = await ensureKv(nc, 'whole', 1);
    await kv.put('n1.web.color', 'blue');
    await kv.put('n2.web.color', 'red');
    const creates = heardCreates(nc);
    const told = new Map<string, WatchEvent>();
    const reads = new KeyedReads(nc, 'whole', 'n1', (e) => told.set(e.key, e), memoryLogger());
    let gets = 0;
    nc.subscribe('$JS.API.DIRECT.GET.>', { callback: () => void gets++ });
    try {
      await reads.readWhole();
      assert.is(text(told.get('n1.web.color')), 'blue', 'told before it was named');
      assert.not.ok(told.has('n2.web.color'), "another node's key is not read");
      assert.is(reads.want('n1.web.color').state, 'known');
      assert.is(reads.want('n1.web.size').state, 'known', 'a key the whole read did not find is known absent');
      await kv.put('n1.web.size', 'large');
      await waitFor('a later change on the tail watch', () => text(told.get('n1.web.size')) === 'large');
      assert.is(gets, 0, 'no get');
      assert.equal(
        creates.map((c) => c.policy),
        ['new', 'by_start_sequence'],
        'the tail watch, then one read from the start',
      );
    } finally {
      reads.stop();
    }
  } finally {
    await nc.close();
    await server.cleanup();
  }
});

test('a store wiped under the tail watch: a value read by get and not there any more is said gone, a value put again at a lower revision is taken', async () => {
  const server = await startNats();
  const nc = await connectBus({ servers: [server.url], name: 'test' });
  try {
    const kv = await ensureKv(nc, 'wiped', 1);
    // Revisions past what the new stream will have: its first puts must still be taken.
    for (let i = 0; i < 5; i++) await kv.put('n1.web.color', `blue${i}`);
    await kv.put('n1.web.size', 'large');
    const told = new Map<string, WatchEvent>();
    const reads = new KeyedReads(nc, 'wiped', 'n1', (e) => told.set(e.key, e), memoryLogger());
    try {
      await reads.caughtUp;
      const both = [reads.want('n1.web.color'), reads.want('n1.web.size')];
      await Promise.all(both.map((r) => (r.state === 'unread' ? r.read : undefined)));
      assert.is(text(told.get('n1.web.size')), 'large');
      await server.stop();
      rmSync(join(server.dir, 'js', 'jetstream', '$G', 'streams'), { recursive: true, force: true });
      await server.restart();
      const again = await waitFor('the bucket made again', () => ensureKv(nc, 'wiped', 1).catch(() => undefined), 10_000);
      await again.put('n1.web.color', 'green');
      await waitFor('green taken at revision 1', () => text(told.get('n1.web.color')) === 'green', 15_000);
      await waitFor('size, read by get, said gone', () => told.get('n1.web.size')?.value === null, 15_000);
    } finally {
      reads.stop();
    }
  } finally {
    await nc.close();
    await server.cleanup();
  }
});

test.run();
