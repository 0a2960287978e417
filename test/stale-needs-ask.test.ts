// A start without its record of written keys asks whether any planned module has a report (src/client/
// report/stale-needs.ts): gets the bus leaves unanswered are asked again, not taken as a report — a
// bus too busy to answer (a fleet started at once) is the one where the wildcard reads they spare cost most.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Empty, headers } from '@nats-io/transport-node';
import { connectBus } from '../src/shared/bus/bus.ts';
import { memoryLogger } from '../src/shared/cli/log.ts';
import { APPLIED } from '../src/shared/contract/buckets.ts';
import { readLeftBehind } from '../src/client/report/stale-needs.ts';
import { startNats } from './helpers/nats.ts';

test('reports unanswered once, then answered absent: asked again, and the node is new — no wildcard read', async () => {
  // A bus without JetStream: a subscriber stands for the applied stream's direct gets.
  const server = await startNats('', { whole: (w) => `listen: "${w.listen}"\n` });
  const nc = await connectBus({ servers: [server.url], name: 'test' });
  try {
    const asked: string[] = [];
    nc.subscribe(`$JS.API.DIRECT.GET.KV_${APPLIED}.>`, {
      callback: (_e, m) => {
        asked.push(m.subject);
        // The first ask is dropped, as by a bus busy with a fleet's start; the second answered "no message".
        if (asked.length > 1) m.respond(Empty, { headers: headers(404, 'Message Not Found') });
      },
    });
    const reads: string[] = [];
    nc.subscribe('$JS.API.CONSUMER.CREATE.>', { callback: (_e, m) => void reads.push(m.subject) });
    await nc.flush();
    const log = memoryLogger();
    // A wildcard read on this bus waits for a stream that never comes: 15 s bounds what the two asks need.
    const late = new Promise<'late'>((resolve) => setTimeout(() => resolve('late'), 15_000).unref());
    const left = await Promise.race([readLeftBehind(nc, 'n1', undefined, new Set(['web']), log), late]);
    assert.equal(asked, [`$JS.API.DIRECT.GET.KV_${APPLIED}.$KV.${APPLIED}.n1.web`, `$JS.API.DIRECT.GET.KV_${APPLIED}.$KV.${APPLIED}.n1.web`]);
    assert.equal(left, { needs: new Map(), items: [], reported: new Set() }, 'a new node: nothing left from before');
    assert.equal(reads, [], 'no wildcard read of needs or items');
    assert.not.ok(
      log.lines.some((l) => l.includes('not taken as a new node')),
      log.lines.join('\n'),
    );
  } finally {
    await nc.close();
    await server.cleanup();
  }
});

test.run();
