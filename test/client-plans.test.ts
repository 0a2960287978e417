// The node's plan watch (src/client/plans/plans.ts) on a real bus: the sources are told the node's
// plans once per turn, and the watch counts as caught up only once they were told the plans it read
// first, so the start waits for the watches those plans name (a provider's bound entries).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { connectBus, ensureKv } from '../src/shared/bus/bus.ts';
import { PLANS } from '../src/shared/contract/buckets.ts';
import { memoryLogger } from '../src/shared/cli/log.ts';
import { TemplateCache } from '../src/client/fill/templates.ts';
import { Modules, type ModulesDeps } from '../src/client/schedule/modules.ts';
import { watchPlans } from '../src/client/plans/plans.ts';
import { startNats } from './helpers/nats.ts';
import { emptyPlan } from './helpers/planted.ts';
import { waitFor } from './helpers/wait.ts';

test('the sources are told every plan read at start before the watch is caught up, and again once per turn of changes; the archives in use are said from then on', async () => {
  const server = await startNats();
  const nc = await connectBus({ servers: [server.url], name: 'test' });
  try {
    const plans = await ensureKv(nc, PLANS, 1);
    for (const m of ['web', 'api', 'db']) await plans.put(`n1.${m}`, JSON.stringify(emptyPlan('n1', m)));
    await plans.put('n2.other', JSON.stringify(emptyPlan('n2', 'other')));
    // Only what setPlan and plans() read: the node.
    const modules = new Modules({ node: 'n1' } as ModulesDeps);
    const told: string[][] = [];
    const heard: string[] = [];
    const kept: string[][] = [];
    const watch = watchPlans(
      nc,
      'n1',
      {
        modules,
        templates: new TemplateCache(async () => ({ ok: false, reason: 'not loaded here' })),
        sources: { plansChanged: (p) => told.push([...p.keys()].sort()) },
        keepArchives: (digests) => kept.push([...digests].sort()),
      },
      memoryLogger(),
      (m) => heard.push(m),
    );
    await watch.caughtUp;
    // Nothing else may run in between: what the start does next reads the watches the sources opened.
    assert.equal(told, [['api', 'db', 'web']], 'one pass over the three plans, before caughtUp resolved');
    assert.equal(heard.sort(), ['api', 'db', 'web']);
    // The archives to keep are said only once every stored plan is read: before, one not named yet may be in use.
    assert.equal(kept, [[...modules.digests()].sort()], 'the digests in use, said once the watch caught up');

    // Changes after the start: one pass per turn, however many plans came in it.
    await plans.put('n1.cache', JSON.stringify(emptyPlan('n1', 'cache')));
    await plans.delete('n1.db');
    await waitFor(`a pass over api, cache and web; told ${JSON.stringify(told)}`, () => told.at(-1)?.join() === 'api,cache,web', 5000);
    assert.ok(told.length <= 3, `passes: ${JSON.stringify(told)}`);
    assert.equal(kept.at(-1), [...modules.digests()].sort(), 'and again with each pass after');
    assert.is(kept.length, told.length);
    watch.stop();
  } finally {
    await nc.close();
    await server.cleanup();
  }
});

test.run();
