// The registry (DESIGN §5): written at start, only where it differs, stale kinds deleted.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Kvm } from '@nats-io/kv';
import { jetstream } from '@nats-io/jetstream';
import { connectBus } from '../src/shared/bus/bus.ts';
import { readAll } from '../src/shared/bus/watch/read-all.ts';
import { REGISTRY_BUCKET } from '../src/shared/contract/buckets.ts';
import { memoryLogger } from '../src/shared/cli/log.ts';
import { REGISTRY } from '../src/shared/contract/registry.ts';
import { startSeat } from '../src/server/seat/seat.ts';
import { startNats } from './helpers/nats.ts';

async function revisions(kv: Awaited<ReturnType<Kvm['open']>>): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const kind of Object.keys(REGISTRY)) {
    const e = await kv.get(kind);
    if (e && e.operation === 'PUT') out.set(kind, e.revision);
  }
  return out;
}

test('the seat writes every kind at start; a second start writes nothing; a stale kind is deleted', async () => {
  const server = await startNats();
  const nc = await connectBus({ servers: [server.url], name: 'test' });
  try {
    const start = async () => {
      const seat = await startSeat({ nc, log: memoryLogger(), archives: 'mesh-catalog_archives', replicas: 1 });
      await seat.stop();
    };
    await start();
    const kv = await new Kvm(jetstream(nc)).open(REGISTRY_BUCKET);
    const all = await readAll(nc, REGISTRY_BUCKET);
    assert.equal([...all.keys()].sort(), Object.keys(REGISTRY).sort());
    assert.equal(JSON.parse(new TextDecoder().decode(all.get('config'))), {
      owner: 'mesh-config',
      bucket: 'mesh-config_resolved',
      key: '<node>.<module>.<key>',
    });
    assert.equal(JSON.parse(new TextDecoder().decode(all.get('dir'))).field, 'placement.dir');
    const first = await revisions(kv);
    assert.is(first.size, Object.keys(REGISTRY).length);

    await start();
    assert.equal(await revisions(kv), first, 'no kind rewritten by a second start');

    await kv.put('stale', '{"owner":"gone"}');
    await kv.put('config', '{"owner":"someone else"}');
    await start();
    assert.is((await kv.get('stale'))?.operation, 'DEL');
    const after = await revisions(kv);
    assert.ok(after.get('config')! > first.get('config')!, 'a differing kind is rewritten');
    assert.is(after.get('secret'), first.get('secret'), 'an unchanged kind keeps its revision');
  } finally {
    await nc.close();
    await server.cleanup();
  }
});

test.run();
