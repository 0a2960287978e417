// The shared watch (src/shared/bus.ts): nothing lost while it is created, caught-up signalled, recovered after a restart.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cpSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Kvm } from '@nats-io/kv';
import { DeliverPolicy, jetstream, jetstreamManager, type ConsumerInfo } from '@nats-io/jetstream';
import { nanos, type NatsConnection } from '@nats-io/transport-node';
import { connectBus, watchBucket, watchKv } from '../src/shared/bus.ts';
import { memoryLogger } from '../src/shared/log.ts';
import { WATCH_HEARTBEAT_MS, WATCH_MISSED_HEARTBEATS } from '../src/shared/watch-keeper.ts';
import { startNats, type NatsServer } from './helpers/nats.ts';
import { waitFor } from './helpers/wait.ts';

test('the object consume() returns still has the private reset(), getConsumerOpts() and cursor the watch relies on (a nats.js upgrade must re-prove the workaround)', async () => {
  const server = await startNats();
  const nc = await connectBus({ servers: [server.url], name: 'test' });
  try {
    await new Kvm(jetstream(nc)).create('resettable');
    // The same consumer watchKv makes: ordered, push, filtered, delivering new messages only.
    const consumer = await jetstream(nc).consumers.getPushConsumer('KV_resettable', {
      filter_subjects: '$KV.resettable.>',
      deliver_policy: DeliverPolicy.New,
    });
    const messages = await consumer.consume({ callback: () => {} });
    try {
      const version = jetstreamVersion();
      assert.ok(
        typeof (messages as unknown as { reset?: unknown }).reset === 'function',
        `@nats-io/jetstream ${version}: the object consume() returns has no reset() method any more. watchKv in ` +
          'src/shared/bus.ts calls that private method (proven on the pinned 3.4.0) to replace its first consumer; ' +
          'pin @nats-io/* back to 3.4.0, or find the new way and re-prove "a value written while the watch is being created is seen".',
      );
    } finally {
      // The keeper (src/shared/watch-keeper.ts) amends the private getConsumerOpts() (a short heartbeat)
      // and reads the private cursor (where a reset resumes).
      const internals = messages as unknown as { getConsumerOpts?: unknown; cursor?: { stream_seq?: unknown } };
      assert.ok(typeof internals.getConsumerOpts === 'function', `@nats-io/jetstream ${jetstreamVersion()}: no private getConsumerOpts() any more; src/shared/watch-keeper.ts sets the watch's heartbeat through it`);
      assert.ok(typeof internals.cursor?.stream_seq === 'number', `@nats-io/jetstream ${jetstreamVersion()}: no private cursor.stream_seq any more; src/shared/watch-keeper.ts re-reads a wiped stream through it`);
      // consumer-remake.ts hedges the creates of a reset through the private consumer API.
      const remake = messages as unknown as { consumer?: { api?: { add?: unknown; delete?: unknown; timeout?: unknown } } };
      assert.ok(typeof remake.consumer?.api?.add === 'function' && typeof remake.consumer.api.delete === 'function' && typeof remake.consumer.api.timeout === 'number',
        `@nats-io/jetstream ${jetstreamVersion()}: the consumer behind consume() has no private api.add/delete/timeout any more; src/shared/consumer-remake.ts hedges re-makes through them`);
      messages.stop();
    }
  } finally {
    await nc.close();
    await server.cleanup();
  }
});

test('a value written while the watch is being created is seen', async () => {
  const server = await startNats();
  const nc = await connectBus({ servers: [server.url], name: 'test' });
  try {
    for (let round = 0; round < 40; round++) {
      // A fresh bucket each round: the loss was seen on a stream created just before its watch.
      const kv = await new Kvm(jetstream(nc)).create(`race${round}`);
      const seen = new Map<string, string>();
      const watching = watchKv(nc, `race${round}`, `r${round}.>`, (e) => {
        if (e.value) seen.set(e.key, new TextDecoder().decode(e.value));
      });
      await Promise.all([0, 1, 2].map((i) => kv.put(`r${round}.k${i}`, `v${i}`)));
      const watch = await watching;
      await waitFor(`round ${round}: three keys`, () => seen.size === 3, 3000);
      watch.stop();
    }
  } finally {
    await nc.close();
    await server.cleanup();
  }
});

test('caught up resolves after the stored values, at once for an empty filter', async () => {
  const server = await startNats();
  const nc = await connectBus({ servers: [server.url], name: 'test' });
  try {
    const kv = await new Kvm(jetstream(nc)).create('cu');
    for (let i = 0; i < 50; i++) await kv.put(`a.k${i}`, `${i}`);
    await kv.delete('a.k3');
    const seen = new Map<string, Uint8Array | null>();
    const watch = await watchKv(nc, 'cu', 'a.>', (e) => seen.set(e.key, e.value));
    await watch.caughtUp;
    assert.is(seen.size, 50);
    assert.is(seen.get('a.k3'), null, 'a delete is seen as null');
    const empty = await watchKv(nc, 'cu', 'b.>', () => {});
    await Promise.race([empty.caughtUp, new Promise((_, reject) => setTimeout(() => reject(new Error('not caught up')), 2000))]);
    watch.stop();
    empty.stop();
  } finally {
    await nc.close();
    await server.cleanup();
  }
});

test('a watch waits for a missing bucket and recovers after the server restarts', async () => {
  const server = await startNats();
  const nc = await connectBus({ servers: [server.url], name: 'test' });
  const log = memoryLogger();
  try {
    const seen: string[] = [];
    const watch = watchBucket(nc, 'later', '>', (e) => e.value && seen.push(new TextDecoder().decode(e.value)), log);
    await waitFor('a waiting line', () => log.lines.some((l) => l.includes('waiting for bucket later')));
    const kv = await new Kvm(jetstream(nc)).create('later');
    await kv.put('x', 'one');
    await watch.caughtUp;
    await waitFor('one', () => seen.includes('one'));
    await server.stop();
    await server.restart();
    await waitFor('reconnected', async () => {
      try { await kv.put('x', 'two'); return true; } catch { return false; }
    }, 15_000);
    await waitFor('two after the restart', () => seen.includes('two'), 40_000);
    watch.stop();
  } finally {
    await nc.close();
    await server.cleanup();
  }
});

/** The consumers of a bucket's stream (its watches), as the server lists them. */
async function consumersOf(nc: NatsConnection, bucket: string): Promise<ConsumerInfo[]> {
  const found: ConsumerInfo[] = [];
  for await (const c of (await jetstreamManager(nc)).consumers.list(`KV_${bucket}`)) found.push(c);
  return found;
}

/** A server with bucket `bucket` holding `values` (one key each, k0…) and a watch on it that has seen them. */
async function watchedBucket(bucket: string, values: string[]) {
  const server = await startNats();
  const nc = await connectBus({ servers: [server.url], name: 'test' });
  const kv = await new Kvm(jetstream(nc)).create(bucket);
  for (const [i, v] of values.entries()) await kv.put(`k${i}`, v);
  const seen: string[] = [];
  const log = memoryLogger();
  const watch = await watchKv(nc, bucket, '>', (e) => e.value && seen.push(new TextDecoder().decode(e.value)), log);
  await watch.caughtUp;
  await waitFor('the stored values', () => seen.length === values.length);
  const reconnected = new Promise<number>((resolve) => {
    void (async () => {
      for await (const s of nc.status()) if (s.type === 'reconnect') return resolve(Date.now());
    })();
  });
  return { server, nc, kv, seen, log, watch, reconnected };
}

/** Stops the server, lets `change` alter its store, and starts it again. */
async function restartWith(server: NatsServer, change: (store: string) => void): Promise<void> {
  await server.stop();
  change(join(server.dir, 'js', 'jetstream', '$G', 'streams'));
  await server.restart();
}

test('a watch’s consumer is made with a short idle heartbeat, so a lost one is noticed in seconds', async () => {
  const w = await watchedBucket('beat', ['one']);
  try {
    // The first consumer watchKv replaces is deleted on the side: wait until the replacement is alone.
    const consumer = await waitFor('the watch’s one consumer', async () => {
      const list = await consumersOf(w.nc, 'beat');
      return list.length === 1 ? list[0] : undefined;
    });
    assert.is(consumer.config.idle_heartbeat, nanos(WATCH_HEARTBEAT_MS));
    // A consumer the server drops without a reconnect (a cluster member gone): only heartbeats tell.
    await (await jetstreamManager(w.nc)).consumers.delete('KV_beat', consumer.name);
    const since = Date.now();
    await w.kv.put('k1', 'two');
    await waitFor('two, from a consumer made again', () => w.seen.includes('two'), 10_000);
    assert.ok(Date.now() - since < 10_000);
    assert.equal(w.seen, ['one', 'two'], 'nothing delivered twice or lost');
    assert.ok(w.log.lines.some((l) => /watch beat \(>\): no heartbeat/.test(l)), w.log.lines.join('\n'));
    w.watch.stop();
  } finally {
    await w.nc.close();
    await w.server.cleanup();
  }
});

test('after a reconnect a watch whose consumer the server lost is made again at once, resuming after what it saw', async () => {
  const w = await watchedBucket('lost', ['one', 'two']);
  try {
    // The stream stays, its consumers are gone: what a restart on another member's store looks like.
    await restartWith(w.server, (streams) => rmSync(join(streams, 'KV_lost', 'obs'), { recursive: true, force: true }));
    const back = await w.reconnected;
    await w.kv.put('k2', 'three');
    await waitFor('three', () => w.seen.includes('three'), 10_000);
    // Missed heartbeats alone would take two periods; the reconnect re-made it at once.
    assert.ok(Date.now() - back < WATCH_MISSED_HEARTBEATS * WATCH_HEARTBEAT_MS, `${Date.now() - back} ms after the reconnect`);
    assert.equal(w.seen, ['one', 'two', 'three'], 'nothing delivered twice or lost');
    w.watch.stop();
  } finally {
    await w.nc.close();
    await w.server.cleanup();
  }
});

test('a watch on a server restarted with its store wiped delivers a value put once the bucket is made again, within 10 s', async () => {
  const w = await watchedBucket('wiped', ['one', 'two']);
  try {
    await restartWith(w.server, (streams) => rmSync(streams, { recursive: true, force: true }));
    const kv = await waitFor('the bucket made again', async () => {
      try { return await new Kvm(jetstream(w.nc)).create('wiped'); } catch { return undefined; }
    }, 10_000);
    const since = Date.now();
    await kv.put('k', 'three');
    await waitFor('three', () => w.seen.includes('three'), 10_000);
    assert.ok(Date.now() - since < 10_000);
    w.watch.stop();
  } finally {
    await w.nc.close();
    await w.server.cleanup();
  }
});

test('a watch whose stream came back holding less than it saw reads it again from the start', async () => {
  // The store the server comes back on: the bucket made again, one value put, no consumer.
  const other = await startNats();
  const onc = await connectBus({ servers: [other.url], name: 'test' });
  await (await new Kvm(jetstream(onc)).create('again')).put('k', 'fresh');
  await onc.close();
  await other.stop();
  const w = await watchedBucket('again', ['one', 'two', 'three']);
  try {
    await restartWith(w.server, (streams) => {
      rmSync(streams, { recursive: true, force: true });
      cpSync(join(other.dir, 'js', 'jetstream', '$G', 'streams'), streams, { recursive: true });
    });
    // Resumed after revision 3, the watch would wait for a fourth revision this stream has not had.
    await waitFor('fresh', () => w.seen.includes('fresh'), 10_000);
    assert.equal(w.seen, ['one', 'two', 'three', 'fresh']);
    assert.ok(w.log.lines.some((l) => /watch again \(>\): .*from the start/.test(l)), w.log.lines.join('\n'));
    w.watch.stop();
  } finally {
    await w.nc.close();
    await w.server.cleanup();
    await other.cleanup();
  }
});

/** The installed @nats-io/jetstream version, for the message of a failed pin check. */
function jetstreamVersion(): string {
  try {
    return (JSON.parse(readFileSync(new URL('../node_modules/@nats-io/jetstream/package.json', import.meta.url), 'utf8')) as { version: string }).version;
  } catch {
    return '(version unknown)';
  }
}

test.run();
