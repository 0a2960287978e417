// The record of a node's plans (src/client/plans/record.ts) on a real bus: a start over it delivers
// the plans kept and watches only what was stored after them — a plan changed, added or deleted while
// the client was down still comes through — and a record of another stream, one out of shape, or one
// ahead of its stream is not trusted.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { connectBus, ensureKv } from '../src/shared/bus/bus.ts';
import { PLANS } from '../src/shared/contract/buckets.ts';
import { memoryLogger } from '../src/shared/cli/log.ts';
import { TemplateCache } from '../src/client/fill/templates.ts';
import { Modules, type ModulesDeps } from '../src/client/schedule/modules.ts';
import { watchPlans } from '../src/client/plans/plans.ts';
import { PlansRecord, plansRecordPath } from '../src/client/plans/record.ts';
import { watchKv } from '../src/shared/bus/watch/watch.ts';
import { startNats, type NatsServer } from './helpers/nats.ts';
import { waitFor } from './helpers/wait.ts';
import { emptyPlan } from './helpers/planted.ts';

let server: NatsServer;
let nc: NatsConnection;
let cacheDir: string;

/** The config of every consumer create asked on the plans stream, as the bus saw it. */
function createsSeen(): { configs: Record<string, unknown>[]; stop(): void } {
  const configs: Record<string, unknown>[] = [];
  const sub = nc.subscribe(`$JS.API.CONSUMER.CREATE.KV_${PLANS}.>`, {
    callback: (_err, msg) => void configs.push((msg.json() as { config: Record<string, unknown> }).config),
  });
  return { configs, stop: () => sub.unsubscribe() };
}

/**
 * One run of the node's plan watch over its record: the plans it holds (module → build) once caught
 * up and `until` says them right (at most 5 s), then stopped and the record saved.
 */
async function run(
  node: string,
  log = memoryLogger(),
  until?: (modules: string[]) => boolean,
  conn = nc,
): Promise<{ plans: Map<string, unknown>; log: typeof log }> {
  const record = await PlansRecord.read(cacheDir, node, log);
  const modules = new Modules({ node } as ModulesDeps);
  const watch = watchPlans(
    conn,
    node,
    { modules, templates: new TemplateCache(async () => ({ ok: false, reason: 'not loaded here' })), sources: { plansChanged: () => {} }, record },
    log,
    () => {},
  );
  await watch.caughtUp;
  for (const end = Date.now() + 5000; until && !until(modules.names()) && Date.now() < end;) await new Promise((r) => setTimeout(r, 20));
  const plans = new Map([...modules.plans()].map(([m, p]) => [m, (p as { build: string }).build]));
  watch.stop();
  await record.flush();
  return { plans, log };
}

const kept = (node: string) =>
  JSON.parse(readFileSync(plansRecordPath(cacheDir, node), 'utf8')) as { stream: string; after: number; plans: Record<string, { revision: number }> };

async function putPlan(kv: KV, node: string, module: string, build = '1'): Promise<number> {
  return kv.put(`${node}.${module}`, JSON.stringify(emptyPlan(node, module, { build })));
}

test.before(async () => {
  server = await startNats();
  nc = await connectBus({ servers: [server.url], name: 'test' });
  cacheDir = mkdtempSync(join(tmpdir(), 'plans-record-'));
});

test.after(async () => {
  await nc?.close();
  await server?.cleanup();
  rmSync(cacheDir, { recursive: true, force: true });
});

test('a start over the record delivers its plans and begins after its sequence; what changed while down comes through', async () => {
  const kv = await ensureKv(nc, PLANS, 1);
  for (const m of ['web', 'api', 'db']) await putPlan(kv, 'n1', m);
  for (let n = 2; n < 40; n++) await putPlan(kv, `n${n}`, 'web');
  const first = await run('n1');
  assert.equal([...first.plans].sort(), [
    ['api', '1'],
    ['db', '1'],
    ['web', '1'],
  ]);
  const record = kept('n1');
  assert.is(record.after, (await kv.get('n1.db'))!.revision, 'read up to the last plan of the node');
  assert.equal(Object.keys(record.plans).sort(), ['n1.api', 'n1.db', 'n1.web']);

  // While n1's client is down: a new build of api, a new module, db removed, other nodes' plans.
  await putPlan(kv, 'n1', 'api', '2');
  await putPlan(kv, 'n1', 'cache');
  await kv.delete('n1.db');
  for (let n = 40; n < 60; n++) await putPlan(kv, `n${n}`, 'web');
  const creates = createsSeen();
  try {
    const second = await run('n1');
    assert.equal([...second.plans].sort(), [
      ['api', '2'],
      ['cache', '1'],
      ['web', '1'],
    ]);
    assert.is(creates.configs.length, 1, 'one consumer');
    assert.is(creates.configs[0]!['deliver_policy'], 'by_start_sequence');
    assert.is(creates.configs[0]!['opt_start_seq'], record.after + 1, 'begun after what the record held');
  } finally {
    creates.stop();
  }
  assert.equal(Object.keys(kept('n1').plans).sort(), ['n1.api', 'n1.cache', 'n1.web']);
  assert.is(kept('n1').after, (await kv.get('n1.db'))!.revision, "up to db's delete, the node's last message");
});

test("a start over the record reads the plans stream's info once: the bucket's check says which stream it is", async () => {
  const kv = await ensureKv(nc, PLANS, 1);
  await putPlan(kv, 'n1', 'web', '3');
  await run('n1');
  // A fresh connection: no check of the bucket made on it yet to reuse.
  const fresh = await connectBus({ servers: [server.url], name: 'fresh' });
  let infos = 0;
  const spy = nc.subscribe(`$JS.API.STREAM.INFO.KV_${PLANS}`, { callback: () => void infos++ });
  await nc.flush();
  try {
    const { plans } = await run('n1', memoryLogger(), undefined, fresh);
    assert.is(plans.get('web'), '3');
    assert.is(infos, 1, `stream infos of ${PLANS} asked`);
  } finally {
    spy.unsubscribe();
    await fresh.close();
  }
});

test('a record of another stream (the bucket made again while the client was down) is not used: the plans are read whole', async () => {
  const before = kept('n1');
  await (await jetstreamManager(nc)).streams.delete(`KV_${PLANS}`);
  const kv = await ensureKv(nc, PLANS, 1);
  await putPlan(kv, 'n1', 'fresh');
  const creates = createsSeen();
  // The client comes back on a connection of its own, which has checked no bucket yet.
  const back = await connectBus({ servers: [server.url], name: 'back' });
  try {
    const { plans, log } = await run('n1', memoryLogger(), undefined, back);
    assert.equal([...plans], [['fresh', '1']], 'nothing of the old stream');
    assert.is(creates.configs[0]!['opt_start_seq'], 1, 'read from the start');
    assert.ok(
      log.lines.some((l) => l.includes('the stream was made again')),
      log.lines.join('\n'),
    );
  } finally {
    creates.stop();
    await back.close();
  }
  assert.is.not(kept('n1').stream, before.stream);
  assert.equal(Object.keys(kept('n1').plans), ['n1.fresh']);
});

test('a watch that failed to begin and asks again resumes from the same plans (a plan kept and gone from the bus would otherwise stay)', async () => {
  const record = await PlansRecord.read(cacheDir, 'n1', memoryLogger());
  const created = kept('n1').stream;
  const first = record.resume(created);
  const again = record.resume(created);
  assert.ok(first && first.events.length > 0);
  assert.equal(again, first);
});

test("a caught-up watch's idle heartbeat moves the sequence read up to past other nodes' plans", async () => {
  const kv = await ensureKv(nc, PLANS, 1);
  await putPlan(kv, 'n9', 'web');
  const said: number[] = [];
  const watch = await watchKv(nc, PLANS, 'n9.*', () => {}, undefined, { heartbeatMs: 300, onProgress: (seq) => void said.push(seq) });
  try {
    await watch.caughtUp;
    let last = 0;
    for (let n = 10; n < 15; n++) last = await putPlan(kv, `n${n}`, 'web');
    await waitFor(`a heartbeat saying ${last}; said ${JSON.stringify(said)}`, () => said.includes(last) || undefined, 5000);
    assert.ok(
      said.every((seq) => seq <= last),
      JSON.stringify(said),
    );
  } finally {
    watch.stop();
  }
});

test('a record out of shape is said and not used', async () => {
  mkdirSync(join(cacheDir, 'plans'), { recursive: true });
  writeFileSync(plansRecordPath(cacheDir, 'n7'), '{"node":"n7","stream":1}');
  const kv = await ensureKv(nc, PLANS, 1);
  await putPlan(kv, 'n7', 'web');
  const { plans, log } = await run('n7');
  assert.equal([...plans], [['web', '1']]);
  assert.ok(
    log.lines.some((l) => l.includes('the record of plans is out of shape')),
    log.lines.join('\n'),
  );
  assert.equal(Object.keys(kept('n7').plans), ['n7.web'], 'kept anew');
});

test('a record ahead of its stream (a store wiped under the same stream) is read again from the start: a plan it kept and the stream lacks is gone', async () => {
  const kv = await ensureKv(nc, PLANS, 1);
  await putPlan(kv, 'n8', 'web');
  await run('n8');
  const record = kept('n8');
  // As if the record had been kept over a stream that then lost its last thousand messages.
  const ghost = { revision: record.after + 500, value: Buffer.from(JSON.stringify(emptyPlan('n8', 'ghost'))).toString('base64') };
  writeFileSync(plansRecordPath(cacheDir, 'n8'), JSON.stringify({ ...record, after: record.after + 1000, plans: { ...record.plans, 'n8.ghost': ghost } }));
  // The deletes of a re-read go out once it caught up and the stream is asked whether it holds less.
  const { plans, log } = await run('n8', memoryLogger(), (modules) => !modules.includes('ghost'));
  assert.equal([...plans], [['web', '1']], 'the plan only the record held is gone');
  assert.ok(
    log.lines.some((l) => l.includes('holds less than the watch saw')),
    log.lines.join('\n'),
  );
  assert.not.ok(existsSync(plansRecordPath(cacheDir, 'n8')), 'the record removed');
});

test.run();
