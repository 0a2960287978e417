// A watch on a site's leaf server (issue 22 item 2) across a WAN cut: the client's own connection never
// drops, the hub is unreachable for several heartbeat periods, and once the link is back the watch's
// consumer must settle on one consumer that heartbeats, not be re-made every period for ever.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { jetstreamManager, type ConsumerInfo } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { connectBus, ensureKv } from '../src/shared/bus/bus.ts';
import { memoryLogger } from '../src/shared/cli/log.ts';
import { watchKv } from '../src/shared/bus/watch/watch.ts';
import { freePort, startNats } from './helpers/nats.ts';
import { startTcpProxy } from './helpers/tcp-proxy.ts';
import { sleep, waitFor } from './helpers/wait.ts';

const DOMAIN = 'hub';
/** The watch's heartbeat: short, so a cut of several periods takes seconds. */
const HEARTBEAT_MS = 500;

async function consumersOf(nc: NatsConnection, bucket: string): Promise<ConsumerInfo[]> {
  const found: ConsumerInfo[] = [];
  for await (const c of (await jetstreamManager(nc, { domain: DOMAIN })).consumers.list(`KV_${bucket}`)) found.push(c);
  return found;
}

test("a site's idle watch recovers after a WAN cut of many heartbeat periods: one consumer, heartbeating, no re-make every period", async () => {
  const leafPort = await freePort();
  const hub = await startNats('', {
    whole: ({ listen, storeDir }) =>
      `listen: "${listen}"\njetstream { store_dir: "${storeDir}", domain: ${DOMAIN} }\nleafnodes { listen: "127.0.0.1:${leafPort}" }\n`,
  });
  const proxy = await startTcpProxy(leafPort);
  const site = await startNats('', {
    whole: ({ listen }) =>
      `listen: "${listen}"\nmappings { "$JS.API.>": "$JS.${DOMAIN}.API.>" }\n` +
      `leafnodes { reconnect: 1, remotes: [ { url: "nats-leaf://127.0.0.1:${proxy.port}" } ] }\n`,
  });
  const hubNc = await connectBus({ servers: [hub.url], name: 'hub' });
  const siteNc = await connectBus({ servers: [site.url], name: 'site client' });
  const log = memoryLogger();
  let stop = () => {};
  try {
    const kv = await ensureKv(hubNc, 'idle', 1);
    await kv.put('k', 'one');
    const seen: string[] = [];
    const watch = await waitFor('the watch made across the leaf link', () =>
      watchKv(siteNc, 'idle', '>', (e) => e.value && seen.push(new TextDecoder().decode(e.value)), log, { heartbeatMs: HEARTBEAT_MS }).catch(() => undefined),
    );
    stop = watch.stop;
    await waitFor('the stored value', () => seen.length === 1);

    proxy.cut();
    await sleep(8 * HEARTBEAT_MS);
    proxy.restore();
    await waitFor(
      'the leaf link back',
      async () =>
        (await consumersOf(hubNc, 'idle').catch(() => [])).length > 0 &&
        (await siteNc.request('$JS.API.INFO', '', { timeout: 500 }).then(
          () => true,
          () => false,
        )),
      10_000,
    );
    // Past the re-make the cut left in flight and its first heartbeats.
    await sleep(6 * HEARTBEAT_MS);
    // The cut was said at warning, and its end at notice: no warning is left standing.
    const warned = log.lines.filter((l) => /making its consumer again/.test(l));
    const ended = log.lines.filter((l) => /its consumer is made again; the watch goes on/.test(l));
    assert.ok(warned.length >= 1, `the silence said: ${log.lines.join(' | ')}`);
    assert.is(ended.length, warned.length, `each re-make said at warning is said made: ${log.lines.join(' | ')}`);
    assert.ok(log.lines.lastIndexOf(ended.at(-1)!) > log.lines.lastIndexOf(warned.at(-1)!), 'the end after the warning');
    const from = log.lines.length;
    const before = (await consumersOf(hubNc, 'idle')).map((c) => c.name);
    await sleep(8 * HEARTBEAT_MS);
    const after = (await consumersOf(hubNc, 'idle')).map((c) => c.name);
    const remade = log.lines.slice(from).filter((l) => /re-creating it|making its consumer again/.test(l));
    assert.equal(remade, [], 'the watch heard its consumer once the link was back');
    assert.equal(after, before, 'the same consumer, not one re-made every period');
    assert.is(after.length, 1, `one consumer on the hub: ${after.join(', ')}`);
    await kv.put('k', 'two');
    await waitFor('a change after the cut', () => seen.includes('two'), 5000);
  } finally {
    stop();
    await siteNc.close();
    await hubNc.close();
    await proxy.close();
    await site.cleanup();
    await hub.cleanup();
  }
});

test.run();
