// The composer's passes cost what a change touches (DESIGN §4): over a sink in memory whose writes
// take as long as a test says, one assignment change composes and writes its one key, a composition
// change its module's keys, writes are pipelined within a bound and a key's writes never race, and
// a restart over equal stored plans writes nothing.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Composer, type ComposerSink, type InputName, type PassSummary } from '../src/server/seat/composer.ts';
import { PlanWriter, type WriteOutcome } from '../src/server/seat/plan-writer.ts';
import type { Timer } from '../src/shared/base/timer.ts';
import { memoryLogger } from '../src/shared/cli/log.ts';
import type { Health } from '../src/shared/contract/verb.ts';
import type { Plan } from '../src/shared/contract/plan.ts';

const ARCHIVE = { ref: 'obj://mesh-catalog_archives/x.tar', digest: 'sha256:' + 'a'.repeat(64) };
const composition = (module: string, build = '1', published = true) => ({
  module,
  build,
  published,
  archive: ARCHIVE,
  provisioning: { files: [{ path: '${dir:config}/' + module + '.conf', template: module + '.conf' }] },
});
const assignment = (node: string, module: string, config = `/etc/${module}`) => ({ node, module, placement: { dir: { config } } });
const bytes = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** One write the sink saw end, in the order writes ended. */
type Ended = { op: 'put' | 'delete'; key: string; plan?: Plan; bytes?: Uint8Array; revision: number };

/** A sink in memory: a store by key, every write in the order it ended, and how many were in flight at most. */
class DelayedSink implements ComposerSink {
  readonly store = new Map<string, Uint8Array>();
  readonly ended: Ended[] = [];
  readonly lines: Health[] = [];
  inFlight = 0;
  peak = 0;
  #revision = 0;

  /** How long a write of `key` takes: none unless a test says. */
  constructor(public delay: (key: string) => Promise<void> | void = () => {}) {}

  async putPlan(key: string, value: Uint8Array): Promise<number> {
    await this.#enter(key);
    const revision = ++this.#revision;
    this.store.set(key, value);
    this.ended.push({ op: 'put', key, plan: JSON.parse(new TextDecoder().decode(value)) as Plan, bytes: value, revision });
    this.inFlight--;
    return revision;
  }

  async deletePlan(key: string): Promise<void> {
    await this.#enter(key);
    this.store.delete(key);
    this.ended.push({ op: 'delete', key, revision: ++this.#revision });
    this.inFlight--;
  }

  health(line: Health): void {
    this.lines.push(line);
  }

  puts(): string[] {
    return this.ended.filter((e) => e.op === 'put').map((e) => e.key);
  }

  async #enter(key: string): Promise<void> {
    this.inFlight++;
    this.peak = Math.max(this.peak, this.inFlight);
    await this.delay(key);
  }
}

/** A composer over `sink`, its pass summaries and a feed of JSON values. */
function composerOver(sink: DelayedSink, writesInFlight?: number) {
  const passes: PassSummary[] = [];
  const log = memoryLogger();
  const composer = new Composer(sink, log, (s) => passes.push(s), writesInFlight === undefined ? {} : { writesInFlight });
  const feed = (input: InputName, key: string, value: unknown, revision?: number) =>
    composer.update(input, key, value === null ? null : value instanceof Uint8Array ? value : bytes(value), revision);
  const loadAll = () => (['assignments', 'modules', 'plans'] as const).forEach((i) => composer.loaded(i));
  return { composer, passes, log, feed, loadAll };
}

const NODES = 30;
const MODULES = ['web', 'db', 'cache'];
const keysOf = (module: string) => Array.from({ length: NODES }, (_, i) => `n${i}.${module}`).sort();

/** Feeds NODES × MODULES assignments and their compositions, and runs the first pass. */
async function fleet(sink = new DelayedSink(), writesInFlight?: number) {
  const c = composerOver(sink, writesInFlight);
  for (const module of MODULES) c.feed('modules', module, composition(module));
  for (let i = 0; i < NODES; i++) for (const module of MODULES) c.feed('assignments', `n${i}.${module}`, assignment(`n${i}`, module));
  c.loadAll();
  await c.composer.idle();
  return { sink, ...c };
}

test('the first pass composes and writes every assignment once', async () => {
  const { sink, passes } = await fleet();
  assert.is(passes.length, 1);
  assert.is(sink.ended.length, NODES * MODULES.length);
  assert.equal(passes[0]!.written, MODULES.flatMap(keysOf).sort());
});

test('one assignment change composes only its key and writes exactly one plan', async () => {
  const { sink, passes, composer, feed } = await fleet();
  const before = sink.ended.length;
  feed('assignments', 'n7.db', assignment('n7', 'db', '/srv/db'));
  await composer.idle();
  const pass = passes.at(-1)!;
  assert.equal(pass.composed, ['n7.db']);
  assert.equal(pass.written, ['n7.db']);
  assert.equal(
    sink.ended.slice(before).map((e) => [e.op, e.key, e.plan?.files[0]?.path]),
    [['put', 'n7.db', '/srv/db/db.conf']],
  );
});

test('an assignment written again with the same value composes its key and writes nothing', async () => {
  const { sink, passes, composer, feed } = await fleet();
  const before = sink.ended.length;
  feed('assignments', 'n3.web', assignment('n3', 'web'));
  await composer.idle();
  assert.equal(passes.at(-1)!.composed, ['n3.web']);
  assert.is(sink.ended.length, before);
});

test('one composition change rewrites exactly its module’s keys', async () => {
  const { sink, passes, composer, feed } = await fleet();
  const before = sink.ended.length;
  feed('modules', 'cache', composition('cache', '2'));
  await composer.idle();
  const pass = passes.at(-1)!;
  assert.equal(pass.composed, keysOf('cache'));
  assert.equal(pass.written, keysOf('cache'));
  const rewritten = sink.ended.slice(before);
  assert.equal(rewritten.map((e) => e.key).sort(), keysOf('cache'));
  assert.ok(rewritten.every((e) => e.op === 'put' && e.plan?.build === '2'));
});

test('a composition written again with the same bytes composes nothing', async () => {
  const { sink, passes, composer, feed } = await fleet();
  const before = sink.ended.length;
  feed('modules', 'web', composition('web'));
  await composer.idle();
  assert.equal(passes.at(-1)!.composed, []);
  assert.is(sink.ended.length, before);
});

test('writes are pipelined and never more than the bound are in flight', async () => {
  const sink = new DelayedSink(() => sleep(Math.random() * 3));
  await fleet(sink, 4);
  assert.is(sink.ended.length, NODES * MODULES.length);
  assert.is(sink.peak, 4, 'as many in flight as the bound allows, and no more');
  const wide = await fleet(new DelayedSink(() => sleep(1)), 1000);
  assert.is(wide.sink.peak, NODES * MODULES.length, 'a wide bound lets every write of a pass fly at once');
});

test('a key changed while its previous write is in flight ends with the newest plan', async () => {
  const { sink, composer, feed } = await fleet();
  let releaseFirst!: () => void;
  sink.delay = (key) => (key === 'n1.web' && !releaseFirst ? new Promise<void>((r) => (releaseFirst = r)) : undefined);
  feed('assignments', 'n1.web', assignment('n1', 'web', '/v1'));
  while (!releaseFirst) await sleep(1);
  // The first write is held in flight; two newer values arrive, the last of them must win.
  feed('assignments', 'n1.web', assignment('n1', 'web', '/v2'));
  feed('assignments', 'n1.web', assignment('n1', 'web', '/v3'));
  await sleep(5);
  releaseFirst();
  await composer.idle();
  const writes = sink.ended
    .filter((e) => e.key === 'n1.web')
    .slice(1)
    .map((e) => e.plan!.files[0]!.path);
  assert.equal(writes, ['/v1/web.conf', '/v3/web.conf'], 'the in-flight write ends first, then the newest value alone');
  assert.is(JSON.parse(new TextDecoder().decode(sink.store.get('n1.web'))).files[0].path, '/v3/web.conf');
});

test('the writer runs one key’s writes one after the other, in the order asked, whatever each takes', async () => {
  const events: string[] = [];
  const writer = new PlanWriter(
    {
      async putPlan(key, value) {
        const v = new TextDecoder().decode(value);
        events.push(`start ${key} ${v}`);
        await sleep(v === 'slow' ? 20 : 0);
        events.push(`end ${key} ${v}`);
      },
      async deletePlan(key) {
        events.push(`delete ${key}`);
      },
    },
    8,
  );
  const enc = (t: string) => new TextEncoder().encode(t);
  const write = (key: string, value: Uint8Array | null) => new Promise<WriteOutcome>((resolve) => writer.write(key, value, resolve));
  const outcomes = await Promise.all([write('k', enc('slow')), write('other', enc('fast')), write('k', enc('fast')), write('k', null)]);
  assert.ok(outcomes.every((o) => o.ok));
  const ofK = events.filter((e) => e.includes(' k'));
  assert.equal(ofK, ['start k slow', 'end k slow', 'start k fast', 'end k fast', 'delete k']);
  assert.ok(events.indexOf('end other fast') < events.indexOf('end k slow'), 'another key does not wait for k');
  assert.is(writer.peak, 2);
});

test('a restart over stored plans all equal to what it composes writes nothing at all', async () => {
  const first = await fleet();
  const sink = new DelayedSink();
  const { composer, passes, feed, loadAll } = composerOver(sink);
  let revision = 0;
  for (const [key, value] of first.sink.store) feed('plans', key, value, ++revision);
  for (const module of MODULES) feed('modules', module, composition(module));
  for (let i = 0; i < NODES; i++) for (const module of MODULES) feed('assignments', `n${i}.${module}`, assignment(`n${i}`, module));
  loadAll();
  await composer.idle();
  assert.is(passes.length, 1);
  assert.is(passes[0]!.composed.length, NODES * MODULES.length);
  assert.equal([passes[0]!.written, passes[0]!.retired, passes[0]!.failed], [[], [], []]);
  assert.equal(sink.ended, []);
});

test('a restart keeps the stored plan of a module with no composition and retires the plan of a gone assignment', async () => {
  const sink = new DelayedSink();
  const { composer, passes, feed, loadAll } = composerOver(sink);
  feed('plans', 'n1.web', { stored: 'web' }, 1);
  feed('plans', 'n1.gone', { stored: 'gone' }, 2);
  feed('assignments', 'n1.web', assignment('n1', 'web'));
  loadAll();
  await composer.idle();
  assert.equal(passes[0]!.held, ['n1.web']);
  assert.equal(passes[0]!.retired, ['n1.gone']);
  assert.equal(
    sink.ended.map((e) => [e.op, e.key]),
    [['delete', 'n1.gone']],
  );
});

test('a composition deleted holds its plans; an assignment deleted retires its plan alone', async () => {
  const { sink, passes, composer, feed } = await fleet();
  const before = sink.ended.length;
  feed('modules', 'db', null);
  await composer.idle();
  assert.equal(passes.at(-1)!.composed, []);
  assert.equal(passes.at(-1)!.held, keysOf('db'));
  feed('assignments', 'n2.web', null);
  await composer.idle();
  assert.equal(passes.at(-1)!.retired, ['n2.web']);
  assert.equal(
    sink.ended.slice(before).map((e) => [e.op, e.key]),
    [['delete', 'n2.web']],
  );
});

test('the echo of its own write composes nothing; a plan changed by someone else is put right at the next pass', async () => {
  const { sink, passes, composer, feed } = await fleet();
  // The bus echoes every write back with its revision.
  for (const e of sink.ended) feed('plans', e.key, e.bytes!, e.revision);
  feed('assignments', 'n0.web', assignment('n0', 'web'));
  await composer.idle();
  assert.equal(passes.at(-1)!.composed, ['n0.web'], 'echoes mark nothing to compose');
  const before = sink.ended.length;
  feed('plans', 'n5.cache', { tampered: true }, 10_000);
  await composer.idle();
  assert.is(sink.ended.length, before, 'a stored plan moving asks for no pass of its own');
  feed('assignments', 'n0.web', assignment('n0', 'web', '/srv/web'));
  await composer.idle();
  assert.equal(passes.at(-1)!.composed, ['n0.web', 'n5.cache']);
  assert.equal(
    sink.ended.slice(before).map((e) => e.key),
    ['n0.web', 'n5.cache'],
  );
});

test('a write the store refuses is tried again at the next pass, and the others go on', async () => {
  const { composer, passes, feed, sink } = await fleet();
  let refuse = true;
  const put = sink.putPlan.bind(sink);
  sink.putPlan = async (key, value) => {
    if (key === 'n4.db' && refuse) throw new Error('bus refused');
    return put(key, value);
  };
  feed('modules', 'db', composition('db', '2'));
  await composer.idle();
  assert.equal(passes.at(-1)!.failed, ['n4.db']);
  assert.is(passes.at(-1)!.written.length, NODES - 1);
  refuse = false;
  feed('assignments', 'n0.web', assignment('n0', 'web', '/srv/web'));
  await composer.idle();
  assert.equal(passes.at(-1)!.written, ['n0.web', 'n4.db']);
});

test('a write that fails is tried again with no input change, the wait doubling while it fails and reset once it goes; those tries count no held pass', async () => {
  const timers: { fn: () => void; ms: number }[] = [];
  const timer: Timer = (fn, ms) => {
    const t = { fn, ms };
    timers.push(t);
    return { cancel: () => void timers.splice(timers.indexOf(t), 1) };
  };
  const fire = async () => {
    timers.shift()!.fn();
    await composer.idle();
  };
  const sink = new DelayedSink();
  let refusals = 3;
  const put = sink.putPlan.bind(sink);
  sink.putPlan = async (key, value) => {
    if (key === 'n4.db' && refusals-- > 0) throw new Error('put of n4.db: no ack within 5000 ms');
    return put(key, value);
  };
  const passes: PassSummary[] = [];
  const composer = new Composer(sink, memoryLogger(), (s) => passes.push(s), { retry: { firstMs: 100, maxMs: 300, timer } });
  const feed = (input: InputName, key: string, value: unknown) => composer.update(input, key, bytes(value));
  for (const module of MODULES) feed('modules', module, composition(module));
  feed('modules', 'draft', composition('draft', '1', false));
  for (let i = 0; i < NODES; i++) for (const module of MODULES) feed('assignments', `n${i}.${module}`, assignment(`n${i}`, module));
  feed('assignments', 'n0.draft', assignment('n0', 'draft'));
  (['assignments', 'modules', 'plans'] as const).forEach((i) => composer.loaded(i));
  await composer.idle();

  assert.equal(passes.at(-1)!.failed, ['n4.db']);
  assert.equal(
    timers.map((t) => t.ms),
    [100],
  );
  await fire();
  assert.equal([passes.at(-1)!.composed, passes.at(-1)!.failed, timers.map((t) => t.ms)], [['n4.db'], ['n4.db'], [200]]);
  await fire();
  assert.equal(
    timers.map((t) => t.ms),
    [300],
  );
  await fire();
  assert.equal(passes.at(-1)!.written, ['n4.db']);
  assert.equal(timers, [], 'no try waits once the write went');
  assert.ok(sink.store.has('n4.db'));
  // Four passes, one from an input change: the unpublished module is held for one pass, not said.
  assert.is(passes.length, 4);
  assert.ok(passes.every((p) => p.held.includes('n0.draft')));
  assert.equal(
    sink.lines.filter((l) => l.reason.startsWith('held')),
    [],
  );

  // The wait starts again from the first after a pass whose writes all went.
  refusals = 1;
  feed('assignments', 'n4.db', assignment('n4', 'db', '/srv/db'));
  await composer.idle();
  assert.equal(
    timers.map((t) => t.ms),
    [100],
  );
  composer.close();
  assert.equal(timers, [], 'closing drops the try waiting');
});

test.run();
