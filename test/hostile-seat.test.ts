// The seat bundle as a process on a real nats-server under hostile input (DESIGN §3, §11): each
// attack fails its own request or module, and the seat stays up, connected and answering.
import { HEALTH_SUBJECT, PROVISIONING_VERB } from '../src/shared/contract/subjects.ts';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstream } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import { ASSIGNMENTS, MODULES, PLANS } from '../src/shared/contract/buckets.ts';
import { ensureKv } from '../src/shared/bus/bus.ts';
import { jsonBytes } from '../src/shared/base/bytes.ts';
import type { Health, VerbReply } from '../src/shared/contract/verb.ts';
import { cleanupBundles, copyBundleAlone, ensureBuilt, startBundle, type Running } from './helpers/bundle.ts';
import { startNats, type NatsServer } from './helpers/nats.ts';
import { assignment, composition, compositionWithValues, nestedJson } from './helpers/seat.ts';
import { waitFor } from './helpers/wait.ts';

type Reply = Partial<VerbReply> & { error?: string };

let nats: NatsServer;
let nc: NatsConnection;
let seat: Running;
let modules: KV;
let assignments: KV;
let plans: KV;
const health: Health[] = [];

async function planOf(key: string): Promise<Record<string, unknown> | null> {
  const entry = await plans.get(key);
  return entry && entry.operation === 'PUT' ? (entry.json() as Record<string, unknown>) : null;
}

async function ask(request: unknown, timeout = 5000): Promise<Reply> {
  return (await nc.request(PROVISIONING_VERB, jsonBytes(request), { timeout })).json<Reply>();
}

function put(kv: KV, key: string, value: unknown): Promise<number> {
  return kv.put(key, typeof value === 'string' ? value : JSON.stringify(value));
}

/** Writes a good module and waits for its plan: every key written before it has been through a pass. */
async function passedOver(module: string): Promise<void> {
  await put(modules, module, composition(module));
  await put(assignments, `n1.${module}`, assignment('n1', module));
  await waitFor(`plan n1.${module}`, () => planOf(`n1.${module}`));
}

function alive(): boolean {
  return seat.child.exitCode === null && seat.child.signalCode === null;
}

/** The seat's resident memory, in MB, as the kernel counts it. */
function rssMb(): number {
  const line = readFileSync(`/proc/${seat.child.pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmRSS:'))!;
  return Number(/(\d+)/.exec(line)![1]) / 1024;
}

test.before(async () => {
  ensureBuilt('server');
  const dir = copyBundleAlone('server');
  nats = await startNats();
  nc = await connect({ servers: nats.url });
  const kvm = new Kvm(jetstream(nc));
  modules = await ensureKv(nc, MODULES, 1);
  assignments = await ensureKv(nc, ASSIGNMENTS, 1);
  nc.subscribe(HEALTH_SUBJECT, { callback: (_e, m) => void health.push(m.json<Health>()) });
  seat = startBundle('node', dir, 'server', ['--nats', nats.url]);
  await seat.waitForLog(/seat ready/, 15_000);
  plans = await kvm.open(PLANS);
});

test.after(async () => {
  seat?.kill();
  await nc?.close().catch(() => {});
  await nats?.cleanup();
  cleanupBundles();
});

test('#1 a request with a reply subject in the plans, catalogue or assignments bucket writes nothing there', async () => {
  const targets: [KV, string][] = [
    [plans, 'n1.injected'],
    [modules, 'injected'],
    [assignments, 'n1.injected'],
  ];
  const buckets = [PLANS, MODULES, ASSIGNMENTS];
  targets.forEach(([, key], i) => nc.publish(PROVISIONING_VERB, jsonBytes({}), { reply: `$KV.${buckets[i]}.${key}` }));
  assert.is((await ask({})).what, 'registry', 'the seat still answers an inbox');
  // A later change through the seat, its plan written: an answer to those requests, read before the
  // one just answered, would have been written before it.
  await passedOver('after-injected');
  for (const [kv, key] of targets) assert.is(await kv.get(key), null, `${key} written`);
  assert.ok(alive());
});

test('#4 a composition and an assignment nested 5,000 levels deep are said with their key and the depth limit; the seat lives and composes the others', async () => {
  await modules.put('deep', compositionWithValues('deep', nestedJson(5000)));
  await put(assignments, 'n1.deep', assignment('n1', 'deep'));
  await assignments.put('n1.nested', `{"node":"n1","module":"nested","placement":{"dir":${nestedJson(5000)}}}`);
  await passedOver('after-deep');
  const deep = await waitFor('a health line for deep', () => health.find((l) => l.module === 'deep'));
  assert.match(deep.reason, /mesh-catalog_modules deep: nested deeper than 64 levels/);
  const nested = await waitFor('a health line for n1.nested', () => health.find((l) => l.module === 'nested'));
  assert.match(nested.reason, /mesh-controller_assignments n1\.nested: nested deeper than 64 levels/);
  await put(modules, 'after-deep', composition('after-deep', '2'));
  await waitFor('a later pass', async () => (await planOf('n1.after-deep'))?.['build'] === '2');
  // A request answered after the later pass, from the memory the deep inputs' failures are kept in.
  const said = await ask({ what: 'health', node: 'n1' });
  assert.ok(
    said.entries?.some((e) => e.key === 'n1.deep'),
    `health: ${JSON.stringify(said).slice(0, 500)}`,
  );
  assert.ok(alive(), `the seat exited:\n${seat.stderr()}`);
  assert.is(await planOf('n1.deep'), null);
});

test('#6 five requests with a 4,100-character collection get {error} naming the limit; the seat stays connected, answers and composes', async () => {
  for (let i = 0; i < 5; i++) {
    const reply = await ask({ what: 'collect', collection: 'c'.repeat(4100) });
    assert.match(reply.error ?? 'answered', /^collection: .* is 4100 bytes, past the limit of 255 bytes$/);
  }
  const after = await ask({ what: 'collect', after: 'a'.repeat(5000) });
  assert.match(after.error ?? 'answered', /^after: .* is 5000 bytes, past the limit of 1024 bytes$/);
  const started = Date.now();
  assert.equal((await ask({ what: 'collect' }, 2000)).entries, []);
  await passedOver('after-long');
  assert.ok(Date.now() - started < 5000, `${Date.now() - started} ms`);
  assert.not.match(seat.stderr(), /disconnected/);
});

test('#12 a secret named a}b or a provision naming one the engine cannot take: a health line with the field, and no plan', async () => {
  await put(modules, 'braces', composition('braces', '1', { secrets: [{ name: 'a}b' }] }));
  await put(assignments, 'n1.braces', assignment('n1', 'braces'));
  await put(modules, 'spaced', composition('spaced', '1', { provisions: [{ provider: 'postgres', provision: 'database', name: 'db password' }] }));
  await put(assignments, 'n1.spaced', assignment('n1', 'spaced'));
  await passedOver('after-braces');
  const braces = await waitFor('a health line for braces', () => health.find((l) => l.module === 'braces'));
  assert.match(braces.reason, /field "provisioning\.secrets\.0\.name" is "a}b", not a name of 1 to 128 of A-Z a-z 0-9 _ -/);
  const spaced = await waitFor('a health line for spaced', () => health.find((l) => l.module === 'spaced'));
  assert.match(spaced.reason, /field "provisioning\.provisions\.0\.name" is "db password", not a name of 1 to 128/);
  assert.is(await planOf('n1.braces'), null);
  assert.is(await planOf('n1.spaced'), null);
});

test('#15 a file path with .. after placement, or a placement making //, fails that plan with the file and the reason', async () => {
  await put(modules, 'escape', composition('escape', '1', { files: [{ path: '${dir:config}/../../etc/shadow', template: 'escape.conf' }] }));
  await put(assignments, 'n1.escape', assignment('n1', 'escape'));
  await put(modules, 'slashed', composition('slashed'));
  await put(assignments, 'n1.slashed', assignment('n1', 'slashed', '/etc/slashed/'));
  await passedOver('after-escape');
  const escape = await waitFor('a health line for escape', () => health.find((l) => l.module === 'escape'));
  assert.match(escape.reason, /^plan n1\.escape: file escape\.conf: .*resolves to "\/etc\/escape\/\.\.\/\.\.\/etc\/shadow", which holds a \. or \.\. segment/);
  const slashed = await waitFor('a health line for slashed', () => health.find((l) => l.module === 'slashed'));
  assert.match(slashed.reason, /file slashed\.conf: .*which holds \/\//);
  assert.is(await planOf('n1.escape'), null);
  assert.is(await planOf('n1.slashed'), null);
});

test('#8 a burst of 5,000 concurrent requests: some answered busy, memory stays bounded, and a valid request right after is answered within 2 s', async () => {
  const before = rssMb();
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, rssMb())), 25);
  const settled = await Promise.allSettled(Array.from({ length: 5000 }, () => ask({ what: 'registry' }, 15_000)));
  clearInterval(sampler);
  peak = Math.max(peak, rssMb());
  const replies = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const busy = replies.filter((r) => r.error === 'busy').length;
  const answered = replies.filter((r) => r.what === 'registry').length;
  console.log(
    `hostile: burst of 5000: ${answered} answered, ${busy} busy, ${5000 - replies.length} lost; RSS ${before.toFixed(0)} → peak ${peak.toFixed(0)} MB`,
  );
  assert.ok(busy > 0, 'none answered busy');
  assert.is(busy + answered, 5000, `${5000 - busy - answered} not answered`);
  assert.ok(peak - before < 150, `RSS grew from ${before.toFixed(0)} to ${peak.toFixed(0)} MB`);
  const asked = Date.now();
  assert.is((await ask({ what: 'registry' }, 2000)).what, 'registry');
  assert.ok(Date.now() - asked < 2000);
  assert.ok(alive());
});

test.run();
