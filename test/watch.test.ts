// The shared watch (src/shared/bus/watch/): nothing lost while it is created, caught-up signalled, recovered after a restart.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cpSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { DeliverPolicy, jetstream, jetstreamManager, type ConsumerInfo, type ConsumerMessages } from '@nats-io/jetstream';
import { nanos, type NatsConnection } from '@nats-io/transport-node';
import { connectBus, ensureKv } from '../src/shared/bus/bus.ts';
import { watchBucket } from '../src/shared/bus/watch/bucket.ts';
import { checkInternals, missingInternals, NatsInternalsError, PINNED_NATS_JS, unmadePushConsumer } from '../src/shared/bus/watch/internals.ts';
import type { WatchEvent } from '../src/shared/bus/watch/types.ts';
import { watchKv } from '../src/shared/bus/watch/watch.ts';
import { memoryLogger } from '../src/shared/cli/log.ts';
import { WATCH_HEARTBEAT_MS, WATCH_MISSED_HEARTBEATS } from '../src/shared/bus/watch/keeper.ts';
import { WatchState } from '../src/shared/bus/watch/state.ts';
import { readAll } from '../src/shared/bus/watch/read-all.ts';
import { startNats, type NatsServer } from './helpers/nats.ts';
import { waitFor } from './helpers/wait.ts';

test('the object consume() returns has the private parts the watch relies on, as every program checks on its first watch (a nats.js upgrade must re-prove them)', async () => {
  const server = await startNats();
  const nc = await connectBus({ servers: [server.url], name: 'test' });
  try {
    await ensureKv(nc, 'resettable', 1);
    // The same consumer watchKv makes: ordered, push, filtered, its first consumer never made.
    const consumers = jetstream(nc).consumers;
    const consumer = await unmadePushConsumer(consumers, 'KV_resettable', { filter_subjects: '$KV.resettable.>', deliver_policy: DeliverPolicy.New });
    const messages = await consumer.consume({ callback: () => {} });
    try {
      assert.equal(await consumersOf(nc, 'resettable'), [], 'no consumer made on the bus');
      const refused = await unmadePushConsumer(Object.create(consumers, { getOrderedPushConsumer: { value: undefined } }), 'KV_resettable', {}).then(
        () => undefined,
        (err: Error) => err,
      );
      assert.ok(refused instanceof NatsInternalsError && refused.message.includes('jetstream(nc).consumers has no getOrderedPushConsumer()'), String(refused));
      try {
        checkInternals(messages);
      } catch (err) {
        assert.unreachable(`@nats-io/jetstream ${jetstreamVersion()} is installed: ${(err as Error).message}`);
      }
      // The same object without one of them is refused with a line naming the part, the pinned version and what to do.
      const changed = Object.create(messages, { reset: { value: undefined } }) as ConsumerMessages;
      assert.equal(missingInternals(changed), ['reset()']);
      assert.throws(
        () => checkInternals(changed),
        (err: Error) =>
          err instanceof NatsInternalsError &&
          err.message.includes('has no reset()') &&
          err.message.includes(`@nats-io/* ${PINNED_NATS_JS}`) &&
          !err.message.includes('\n'),
      );
    } finally {
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
      const kv = await ensureKv(nc, `race${round}`, 1);
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
    const kv = await ensureKv(nc, 'cu', 1);
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
    const kv = await ensureKv(nc, 'later', 1);
    await kv.put('x', 'one');
    await watch.caughtUp;
    await waitFor('one', () => seen.includes('one'));
    await server.stop();
    await server.restart();
    await waitFor(
      'reconnected',
      async () => {
        try {
          await kv.put('x', 'two');
          return true;
        } catch {
          return false;
        }
      },
      15_000,
    );
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

/** A heartbeat short enough for a test to wait two of them out. */
const SHORT_HEARTBEAT_MS = 1000;

/** A server with bucket `bucket` holding `values` (one key each, k0…) and a watch on it (with `heartbeatMs`) that has seen them. */
async function watchedBucket(bucket: string, values: string[], heartbeatMs?: number) {
  const server = await startNats();
  const nc = await connectBus({ servers: [server.url], name: 'test' });
  const kv = await ensureKv(nc, bucket, 1);
  for (const [i, v] of values.entries()) await kv.put(`k${i}`, v);
  const seen: string[] = [];
  const events: WatchEvent[] = [];
  const log = memoryLogger();
  const watch = await watchKv(
    nc,
    bucket,
    '>',
    (e) => {
      events.push(e);
      if (e.value) seen.push(new TextDecoder().decode(e.value));
    },
    log,
    { heartbeatMs },
  );
  await watch.caughtUp;
  await waitFor('the stored values', () => seen.length === values.length);
  const reconnected = new Promise<number>((resolve) => {
    void (async () => {
      for await (const s of nc.status()) if (s.type === 'reconnect') return resolve(Date.now());
    })();
  });
  return { server, nc, kv, seen, events, log, watch, reconnected };
}

/** Stops the server, lets `change` alter its store, and starts it again. */
async function restartWith(server: NatsServer, change: (store: string) => void): Promise<void> {
  await server.stop();
  change(join(server.dir, 'js', 'jetstream', '$G', 'streams'));
  await server.restart();
}

test('a watch’s consumer is made with a 30 s idle heartbeat and its state in memory, a lost one noticed after two missed (here 1 s: seconds) and made again the same way', async () => {
  const quiet = await watchedBucket('quiet', ['one']);
  try {
    const consumer = await waitFor('the watch’s one consumer', async () => {
      const list = await consumersOf(quiet.nc, 'quiet');
      return list.length === 1 ? list[0] : undefined;
    });
    assert.is(consumer.config.idle_heartbeat, nanos(WATCH_HEARTBEAT_MS));
    assert.is(WATCH_HEARTBEAT_MS, 30_000, 'an idle node costs one heartbeat a watch every 30 s (docs/scale.md)');
    // No directory and files on the server's disk a consumer, nor a state write after each delivery (src/shared/bus/watch/internals.ts orderedConsumer).
    assert.is(consumer.config.mem_storage, true, 'kept in memory');
    quiet.watch.stop();
  } finally {
    await quiet.nc.close();
    await quiet.server.cleanup();
  }
  const w = await watchedBucket('beat', ['one'], SHORT_HEARTBEAT_MS);
  try {
    // The first consumer watchKv replaces is deleted on the side: wait until the replacement is alone.
    const consumer = await waitFor('the watch’s one consumer', async () => {
      const list = await consumersOf(w.nc, 'beat');
      return list.length === 1 ? list[0] : undefined;
    });
    assert.is(consumer.config.idle_heartbeat, nanos(SHORT_HEARTBEAT_MS));
    // A consumer the server drops without a reconnect (a cluster member gone): only heartbeats tell.
    await (await jetstreamManager(w.nc)).consumers.delete('KV_beat', consumer.name);
    const since = Date.now();
    await w.kv.put('k1', 'two');
    await waitFor('two, from a consumer made again', () => w.seen.includes('two'), 10_000);
    assert.ok(Date.now() - since < 10_000);
    assert.equal(w.seen, ['one', 'two'], 'nothing delivered twice or lost');
    assert.equal(deletes(w.events), [], 'no key said gone: the stream was not wiped');
    assert.equal(
      (await consumersOf(w.nc, 'beat')).map((c) => c.config.mem_storage),
      [true],
      'made again in memory',
    );
    assert.ok(
      w.log.lines.some((l) => /watch beat \(>\): no heartbeat/.test(l)),
      w.log.lines.join('\n'),
    );
    w.watch.stop();
  } finally {
    await w.nc.close();
    await w.server.cleanup();
  }
});

test('watches whose creates are answered seconds late (a busy process, a busy bus) make one consumer each and are not made again', async () => {
  const server = await startNats();
  const nc = await connectBus({ servers: [server.url], name: 'test' });
  try {
    const kv = await ensureKv(nc, 'late', 1);
    await kv.put('k0', 'one');
    const log = memoryLogger();
    const seen: string[] = [];
    const watches = await Promise.all(
      Array.from({ length: 10 }, () =>
        watchKv(nc, 'late', '>', (e) => e.value && seen.push(new TextDecoder().decode(e.value)), log, { heartbeatMs: SHORT_HEARTBEAT_MS }),
      ),
    );
    // Each watch has just sent the create of the consumer it reads with; the answers wait in the
    // socket while the process is busy past a create's first retry and two silent heartbeat periods.
    const busyUntil = Date.now() + 2500;
    while (Date.now() < busyUntil);
    await Promise.all(watches.map((w) => w.caughtUp));
    await new Promise((resolve) => setTimeout(resolve, (WATCH_MISSED_HEARTBEATS + 1) * SHORT_HEARTBEAT_MS));
    const consumers = await consumersOf(nc, 'late');
    assert.is(consumers.length, 10, consumers.map((c) => c.name).join(', '));
    assert.equal(
      log.lines.filter((l) => /making its consumer again/.test(l)),
      [],
    );
    assert.equal(seen, Array(10).fill('one'));
    for (const w of watches) w.stop();
  } finally {
    await nc.close();
    await server.cleanup();
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
    // Missed heartbeats alone would take a minute; the reconnect re-made it at once.
    assert.ok(Date.now() - back < 2000, `${Date.now() - back} ms after the reconnect`);
    assert.equal(w.seen, ['one', 'two', 'three'], 'nothing delivered twice or lost');
    assert.equal(deletes(w.events), [], 'no key said gone: the stream was not wiped');
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
    const kv = await waitFor(
      'the bucket made again',
      async () => {
        try {
          return await ensureKv(w.nc, 'wiped', 1);
        } catch {
          return undefined;
        }
      },
      10_000,
    );
    const since = Date.now();
    await kv.put('k', 'three');
    await waitFor('three', () => w.seen.includes('three'), 10_000);
    assert.ok(Date.now() - since < 10_000);
    // Whether the watch re-read the empty stream or the one holding `k`, neither k0 nor k1 is there.
    await waitFor('k0 and k1 said gone', () => deletes(w.events).length === 2, 10_000);
    assert.equal(
      deletes(w.events)
        .map((e) => e.key)
        .sort(),
      ['k0', 'k1'],
    );
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
  await (await ensureKv(onc, 'again', 1)).put('k', 'fresh');
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
    assert.ok(
      w.log.lines.some((l) => /watch again \(>\): .*from the start/.test(l)),
      w.log.lines.join('\n'),
    );
    w.watch.stop();
  } finally {
    await w.nc.close();
    await w.server.cleanup();
    await other.cleanup();
  }
});

test('a re-read of a wiped stream says which keys are gone: a delete for each key held and not stored again, once the re-read caught up', async () => {
  // The store the server comes back on: the bucket made again, k1 and a new k3 put, no k0 or k2.
  const other = await startNats();
  const onc = await connectBus({ servers: [other.url], name: 'test' });
  const okv = await ensureKv(onc, 'diffed', 1);
  await okv.put('k1', 'one again');
  await okv.put('k3', 'three');
  await onc.close();
  await other.stop();
  const w = await watchedBucket('diffed', ['zero', 'one', 'two']);
  try {
    const before = w.events.length;
    await restartWith(w.server, (streams) => {
      rmSync(streams, { recursive: true, force: true });
      cpSync(join(other.dir, 'js', 'jetstream', '$G', 'streams'), streams, { recursive: true });
    });
    await waitFor('k0 and k2 said gone', () => deletes(w.events).length === 2, 10_000);
    const after = w.events.slice(before).map((e) => [e.key, e.value === null ? null : new TextDecoder().decode(e.value), e.revision]);
    assert.equal(
      after,
      [
        ['k1', 'one again', 1],
        ['k3', 'three', 2],
        ['k0', null, 4],
        ['k2', null, 4],
      ],
      'the values stored now, then a delete for each key held and not seen again, one revision past the highest seen',
    );
    await w.kv.put('k0', 'back');
    await waitFor('k0 back', () => w.seen.includes('back'), 10_000);
    assert.is(deletes(w.events).length, 2, 'nothing said gone twice');
    w.watch.stop();
  } finally {
    await w.nc.close();
    await w.server.cleanup();
    await other.cleanup();
  }
});

test('a watch state ends a re-read only on a consumer made for it, deleting what was held and not delivered again', () => {
  const events: WatchEvent[] = [];
  const state = new WatchState((e) => events.push(e));
  const put = (key: string, revision: number) => state.deliver({ key, revision, value: new Uint8Array([1]) });
  put('a', 1);
  put('b', 2);
  put('c', 3);
  state.deliver({ key: 'c', revision: 4, value: null });
  state.drained('first');
  state.rereadBegan('short');
  put('b', 1);
  state.drained('short');
  assert.is(events.length, 5, 'the consumer that showed the stream short does not end the re-read');
  state.drained('reread');
  assert.equal(events.slice(5), [{ key: 'a', revision: 5, value: null }], 'a gone; b seen again; c was already deleted');
  state.drained('reread');
  state.createdDrained('later', true);
  assert.is(events.length, 6, 'nothing said gone twice, nor without a re-read');
  state.rereadBegan('short2');
  state.createdDrained('empty', false);
  assert.is(events.length, 6, 'a consumer that delivered something ends a re-read by its messages only');
  state.createdDrained('empty', true);
  assert.equal(events.slice(6), [{ key: 'b', revision: 6, value: null }], 'an empty stream: every key held is gone');
});

test('a watch state asks whether the stream really holds less before it says keys gone: a replica still catching up keeps them', async () => {
  for (const [leaderLast, gone] of [
    [2, ['b']],
    [9, []],
  ] as const) {
    const events: WatchEvent[] = [];
    const asked: number[] = [];
    const state = new WatchState(
      (e) => events.push(e),
      async (seen) => (asked.push(seen), leaderLast < seen),
    );
    state.deliver({ key: 'a', revision: 4, value: new Uint8Array([1]) });
    state.deliver({ key: 'b', revision: 5, value: new Uint8Array([1]) });
    state.rereadBegan('short');
    state.deliver({ key: 'a', revision: 1, value: new Uint8Array([1]) });
    state.drained('reread');
    // Delivered while the stream is asked: not said gone either way.
    state.deliver({ key: 'c', revision: 2, value: new Uint8Array([1]) });
    await waitFor('the stream asked and answered', () => asked.length === 1 && (gone.length === 0 || deletes(events).length > 0));
    await new Promise((r) => setImmediate(r));
    assert.equal(asked, [5], 'asked against the highest revision seen before the re-read');
    assert.equal(
      deletes(events).map((e) => e.key),
      [...gone],
      `leader's last sequence ${leaderLast}`,
    );
  }
});

/** The deletes among a watch's events. */
function deletes(events: readonly WatchEvent[]): WatchEvent[] {
  return events.filter((e) => e.value === null);
}

/** The installed @nats-io/jetstream version, for the message of a failed pin check. */
function jetstreamVersion(): string {
  try {
    return (JSON.parse(readFileSync(new URL('../node_modules/@nats-io/jetstream/package.json', import.meta.url), 'utf8')) as { version: string }).version;
  } catch {
    return '(version unknown)';
  }
}

test("a command's whole-bucket read whose consumer is never made gives up at its bound, naming the bucket", async () => {
  // No JetStream, and every JetStream request swallowed: the watch's first consumer is asked for ever, as after a leader lost.
  const server = await startNats('', { whole: ({ listen }) => `listen: "${listen}"\n` });
  const nc = await connectBus({ servers: [server.url], name: 'command' }, true);
  try {
    nc.subscribe('$JS.API.>', { callback: () => {} });
    await nc.flush();
    const started = Date.now();
    const read = await readAll(nc, 'mesh-provisioner_rollouts', '>', { timeoutMs: 1000 }).then(
      () => undefined,
      (err: Error) => err,
    );
    assert.match(read?.message ?? '', /^reading mesh-provisioner_rollouts: not read whole within 1000 ms; try again$/);
    assert.ok(Date.now() - started < 3000, `gave up after ${Date.now() - started} ms`);
  } finally {
    await nc.close();
    await server.cleanup();
  }
});

test.run();
