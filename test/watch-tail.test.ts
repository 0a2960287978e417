// A watch that begins at its stream's tail (src/shared/bus/watch/, `from: 'tail'`): it delivers only
// what is stored after it began, and every re-make resumes after what it saw — never from sequence 1
// (a scan of the whole stream on nats-server 2.9), never from "new" again (a change made meanwhile lost).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { jetstreamManager, type ConsumerInfo } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { connectBus, ensureKv } from '../src/shared/bus/bus.ts';
import type { WatchEvent } from '../src/shared/bus/watch/types.ts';
import { watchKv } from '../src/shared/bus/watch/watch.ts';
import { memoryLogger } from '../src/shared/cli/log.ts';
import { startNats } from './helpers/nats.ts';
import { waitFor } from './helpers/wait.ts';

async function consumersOf(nc: NatsConnection, bucket: string): Promise<ConsumerInfo[]> {
  const found: ConsumerInfo[] = [];
  for await (const c of (await jetstreamManager(nc)).consumers.list(`KV_${bucket}`)) found.push(c);
  return found;
}

/** A server whose bucket holds k0…k2, a writer connection, and a tail watch (heartbeat `heartbeatMs`) of the bucket on its own connection. */
async function tailWatched(bucket: string, heartbeatMs?: number) {
  const server = await startNats();
  const admin = await connectBus({ servers: [server.url], name: 'admin' });
  const kv = await ensureKv(admin, bucket, 1);
  for (let i = 0; i < 3; i++) await kv.put(`k${i}`, `old${i}`);
  const nc = await connectBus({ servers: [server.url], name: 'watcher' });
  const events: WatchEvent[] = [];
  const seen = () => events.map((e) => (e.value ? new TextDecoder().decode(e.value) : `-${e.key}`));
  const watch = await watchKv(nc, bucket, '>', (e) => events.push(e), memoryLogger(), { from: 'tail', ...(heartbeatMs ? { heartbeatMs } : {}) });
  await watch.caughtUp;
  const cleanup = async () => {
    watch.stop();
    await nc.close();
    await admin.close();
    await server.cleanup();
  };
  return { server, admin, kv, nc, watch, events, seen, cleanup };
}

test('a tail watch is caught up once made, delivers nothing stored before it, and every change after', async () => {
  const w = await tailWatched('tail');
  try {
    const [made] = await consumersOf(w.admin, 'tail');
    assert.is(made?.config.deliver_policy, 'new', 'its consumer begins at the tail');
    await w.kv.put('k1', 'new1');
    await w.kv.delete('k0');
    await waitFor('the two changes', () => w.events.length === 2);
    assert.equal(w.seen(), ['new1', '-k0']);
    assert.equal(
      w.events.map((e) => e.revision),
      [4, 5],
    );
  } finally {
    await w.cleanup();
  }
});

test('a tail watch whose consumer went silently resumes after the tail it began at: a change made while it was gone is delivered, nothing read from sequence 1', async () => {
  const w = await tailWatched('silent', 500);
  try {
    const [first] = await consumersOf(w.admin, 'silent');
    // Gone without a word: only the missed heartbeats tell; meanwhile a change is made.
    await (await jetstreamManager(w.admin)).consumers.delete('KV_silent', first!.name);
    await w.kv.put('k2', 'while-gone');
    await waitFor('the change made while it was gone', () => w.seen().includes('while-gone'), 10_000);
    assert.equal(w.seen(), ['while-gone'], 'nothing stored before the watch began, delivered once');
    const [again] = await consumersOf(w.admin, 'silent');
    assert.is(again?.config.deliver_policy, 'by_start_sequence');
    assert.is(again?.config.opt_start_seq, 4, 'after the tail the watch began at (3), not from 1 nor "new"');
  } finally {
    await w.cleanup();
  }
});

test('a tail watch resumes after a server restart and its reconnect after the last change it saw, without reading from sequence 1', async () => {
  const w = await tailWatched('restart');
  try {
    await w.kv.put('k0', 'seen');
    await waitFor('seen', () => w.seen().includes('seen'));
    const back = new Promise<void>((resolve) => {
      void (async () => {
        for await (const s of w.nc.status()) if (s.type === 'reconnect') return resolve();
      })();
    });
    await w.server.stop();
    // The consumer's state goes with the restart: the watch must make it again from what it saw.
    rmSync(join(w.server.dir, 'js', 'jetstream', '$G', 'streams', 'KV_restart', 'obs'), { recursive: true, force: true });
    await w.server.restart();
    // Written as soon as the writer is back, before or after the watch's re-make: delivered either way.
    await waitFor(
      'a put after the restart',
      () =>
        w.kv.put('k1', 'after-restart').then(
          () => true,
          () => false,
        ),
      10_000,
    );
    await back;
    await waitFor('the change after the restart', () => w.seen().includes('after-restart'), 10_000);
    assert.equal(w.seen(), ['seen', 'after-restart'], 'nothing stored before the watch began, nothing twice');
    const consumers = await consumersOf(w.admin, 'restart');
    assert.ok(consumers.length >= 1);
    for (const c of consumers) assert.ok((c.config.opt_start_seq ?? 0) >= 5, `resumed after 4, not from 1: ${JSON.stringify(c.config)}`);
  } finally {
    await w.cleanup();
  }
});

test.run();
