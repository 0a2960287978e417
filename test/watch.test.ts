// The shared watch (src/shared/bus.ts): nothing lost while it is created, caught-up signalled, recovered after a restart.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { Kvm } from '@nats-io/kv';
import { DeliverPolicy, jetstream } from '@nats-io/jetstream';
import { connectBus, watchBucket, watchKv } from '../src/shared/bus.ts';
import { memoryLogger } from '../src/shared/log.ts';
import { startNats } from './helpers/nats.ts';
import { waitFor } from './helpers/wait.ts';

test('the object consume() returns still has the private reset() watchKv calls (a nats.js upgrade must re-prove the workaround)', async () => {
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

/** The installed @nats-io/jetstream version, for the message of a failed pin check. */
function jetstreamVersion(): string {
  try {
    return (JSON.parse(readFileSync(new URL('../node_modules/@nats-io/jetstream/package.json', import.meta.url), 'utf8')) as { version: string }).version;
  } catch {
    return '(version unknown)';
  }
}

test.run();
