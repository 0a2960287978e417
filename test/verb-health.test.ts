// The verb's `what: "health"` (DESIGN §6) on a real nats-server and seat: one entry per assignment
// whose plan the seat holds (composition missing or unpublished) or cannot compose (out of shape, an
// unresolvable path, a name out of its grammar), from the seat's memory, paged like the other whats.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { PROVISIONING_VERB } from '../src/shared/contract/subjects.ts';
import { jsonBytes } from '../src/shared/base/bytes.ts';
import type { VerbReply } from '../src/shared/contract/verb.ts';
import type { HealthEntry } from '../src/server/seat/health-book.ts';
import { answerProvisioning, REPLY_HEADROOM } from '../src/server/verb/serve.ts';
import { assignment, composition, startSeatFixture, type SeatFixture } from './helpers/seat.ts';
import { waitFor } from './helpers/wait.ts';

type Reply = Partial<VerbReply> & { error?: string };

async function ask(f: SeatFixture, request: Record<string, unknown>): Promise<Reply> {
  return (await f.nc.request(PROVISIONING_VERB, jsonBytes(request), { timeout: 5000 })).json<Reply>();
}

/** The health entry of a key, once it is there and `pred` accepts it. */
async function entryOf(f: SeatFixture, key: string, pred: (e: HealthEntry) => boolean = () => true): Promise<HealthEntry> {
  return waitFor(`health entry ${key}`, async () => {
    const reply = await ask(f, { what: 'health' });
    const found = reply.entries?.find((e) => e.key === key)?.value as HealthEntry | undefined;
    return found && pred(found) ? found : undefined;
  });
}

async function hasPlan(f: SeatFixture, key: string): Promise<boolean> {
  const e = await f.plans.get(key);
  return e !== null && e.operation === 'PUT';
}

/** Runs one more pass (an assignment of another module changes) and waits until it ran. */
async function anotherPass(f: SeatFixture, i: number): Promise<void> {
  const before = f.passes.length;
  await f.put(f.assignments, 'n9.ticker', assignment('n9', 'ticker', `/etc/ticker${i}`));
  await waitFor('another pass', () => f.passes.length > before);
  await f.seat.composer.idle();
}

async function withSeat(fn: (f: SeatFixture) => Promise<void>): Promise<void> {
  const f = await startSeatFixture();
  try {
    await fn(f);
  } finally {
    await f.close();
  }
}

test('held, unpublished: the entry names the build and says since when; since stays and passes grow while it lasts', () =>
  withSeat(async (f) => {
    await f.put(f.modules, 'web', { ...composition('web', '7'), published: false });
    await f.put(f.assignments, 'n1.web', assignment('n1', 'web'));
    const first = await entryOf(f, 'n1.web');
    assert.equal(
      { ...first, since: '', passes: 0 },
      { node: 'n1', module: 'web', build: '7', state: 'held', reason: 'composition not published', since: '', passes: 0 },
    );
    assert.ok(Math.abs(Date.parse(first.since) - Date.now()) < 10_000, first.since);
    assert.is(new Date(first.since).toISOString(), first.since, 'since is ISO time');
    await anotherPass(f, 1);
    await anotherPass(f, 2);
    const later = await entryOf(f, 'n1.web');
    assert.is(later.since, first.since, 'since stays while the state and reason do');
    assert.is(later.passes, first.passes + 2);
    const reply = await ask(f, { what: 'health' });
    assert.equal(reply.outOfShape, []);
    assert.is(reply.what, 'health');
  }));

test('held, missing: an assignment of a module with no composition has an entry without build; it goes when its assignment goes', () =>
  withSeat(async (f) => {
    await f.put(f.assignments, 'n1.ghost', assignment('n1', 'ghost'));
    const e = await entryOf(f, 'n1.ghost');
    assert.equal({ ...e, since: '', passes: 0 }, { node: 'n1', module: 'ghost', state: 'held', reason: 'composition missing', since: '', passes: 0 });
    await f.assignments.delete('n1.ghost');
    await waitFor('n1.ghost gone from health', async () => !(await ask(f, { what: 'health' })).entries?.some((x) => x.key === 'n1.ghost'));
  }));

test('failed, a name out of its grammar: the entry names the field and the name; a composition put right composes and the entry goes', () =>
  withSeat(async (f) => {
    await f.put(f.modules, 'evil1', composition('evil1', '1', { secrets: [{ name: '../victim/api-key' }] }));
    await f.put(f.assignments, 'n1.evil1', assignment('n1', 'evil1'));
    const e = await entryOf(f, 'n1.evil1');
    assert.is(e.state, 'failed');
    assert.match(
      e.reason,
      /^composition does not validate: field "provisioning\.secrets\.0\.name" is "\.\.\/victim\/api-key", not a name of 1 to 128 of A-Z a-z 0-9 _ -/,
    );
    assert.is(e.build, undefined);
    assert.not.ok(await hasPlan(f, 'n1.evil1'));
    await f.put(f.modules, 'evil1', composition('evil1', '2'));
    await waitFor('plan n1.evil1', () => hasPlan(f, 'n1.evil1'));
    await f.seat.composer.idle();
    assert.not.ok(
      (await ask(f, { what: 'health' })).entries?.some((x) => x.key === 'n1.evil1'),
      'the entry went with the plan composed',
    );
  }));

test('failed, a typo in a composition ("mdoe", "secrest", an invalid rollout): the entry names each field and what it was meant as; no plan', () =>
  withSeat(async (f) => {
    const typo = composition('typo', '1');
    await f.modules.put(
      'typo',
      JSON.stringify({
        ...typo,
        rollout: { waves: [0.5] },
        provisioning: { ...typo.provisioning, files: [{ ...typo.provisioning.files[0], mdoe: 'seed' }], secrest: [{ name: 'other' }] },
      }),
    );
    await f.put(f.assignments, 'n1.typo', assignment('n1', 'typo'));
    const e = await entryOf(f, 'n1.typo');
    assert.equal([e.state, e.build], ['failed', undefined]);
    assert.is(
      e.reason,
      'composition does not validate: field "provisioning.secrest" is an unknown field; did you mean "secrets"?; ' +
        'field "provisioning.files.0.mdoe" is an unknown field; did you mean "mode"?; ' +
        'field "rollout.waves" ends with 0.5, not 1: the last wave must reach every node',
    );
    assert.not.ok(await hasPlan(f, 'n1.typo'), 'a file meant as seed is never planned as owned');
  }));

test('failed, an unresolvable path: the entry names the file, the path and the build; a new reason starts since again', () =>
  withSeat(async (f) => {
    const files = (path: string) => ({ files: [{ path, template: 'web.conf' }] });
    await f.put(f.modules, 'web', composition('web', '3', files('${dir:nope}/web.conf')));
    await f.put(f.assignments, 'n1.web', assignment('n1', 'web'));
    const e = await entryOf(f, 'n1.web');
    assert.equal({ state: e.state, build: e.build }, { state: 'failed', build: '3' });
    assert.is(e.reason, 'file web.conf: path "${dir:nope}/web.conf": ${dir:nope} is not in the assignment\'s placement');
    await f.put(f.modules, 'web', composition('web', '4', files('${dir:config}/../web.conf')));
    const next = await entryOf(f, 'n1.web', (x) => x.build === '4');
    assert.match(next.reason, /which holds a \. or \.\. segment$/);
    assert.ok(next.since >= e.since && next.passes === 1, JSON.stringify(next));
  }));

test('a refused assignment and a composition that is not JSON are failed too; unpublished again is held', () =>
  withSeat(async (f) => {
    await f.assignments.put('n1.bad', '{"node":"n1","module":"bad","placement":{"dir":7}}');
    const bad = await entryOf(f, 'n1.bad');
    assert.equal([bad.state, bad.module], ['failed', 'bad']);
    assert.match(bad.reason, /^assignment does not validate: field "placement\.dir"/);
    await f.modules.put('junk', 'not json');
    await f.put(f.assignments, 'n1.junk', assignment('n1', 'junk'));
    assert.match((await entryOf(f, 'n1.junk')).reason, /^composition does not validate: /);
    await f.put(f.modules, 'junk', { ...composition('junk', '5'), published: false });
    const held = await entryOf(f, 'n1.junk', (x) => x.state === 'held');
    assert.equal([held.reason, held.build, held.passes], ['composition not published', '5', 1]);
  }));

test('a composition with 2,000 names out of the grammar is one entry whose reason is cut short, never a reply past the payload', () =>
  withSeat(async (f) => {
    const secrets = Array.from({ length: 2000 }, (_, i) => ({ name: `../victim/${i}` }));
    await f.put(f.modules, 'many', composition('many', '1', { secrets }));
    await f.put(f.assignments, 'n1.many', assignment('n1', 'many'));
    const e = await entryOf(f, 'n1.many');
    assert.is(e.state, 'failed');
    assert.match(e.reason, /^composition does not validate: field "provisioning\.secrets\.0\.name" is "\.\.\/victim\/0"/);
    assert.match(e.reason, /… \(\d+ more characters\)$/);
    assert.ok(e.reason.length < 1100, `a reason of ${e.reason.length} characters`);
  }));

test('paging: entries in key order, limit and after as for the buckets, next until the last, narrowed by node and module', () =>
  withSeat(async (f) => {
    const keys: string[] = [];
    for (let i = 0; i < 25; i++) {
      const node = `n${String(i).padStart(2, '0')}`;
      keys.push(`${node}.ghost`);
      await f.put(f.assignments, `${node}.ghost`, assignment(node, 'ghost'));
    }
    await f.put(f.assignments, 'n03.other', assignment('n03', 'other'));
    keys.splice(4, 0, 'n03.other');
    await waitFor('26 entries', async () => (await ask(f, { what: 'health' })).entries?.length === 26);
    const seen: string[] = [];
    let after: string | undefined;
    const sizes: number[] = [];
    for (let page = 0; page < 10; page++) {
      const reply = await ask(f, { what: 'health', limit: 10, ...(after ? { after } : {}) });
      assert.equal(reply.outOfShape, []);
      sizes.push(reply.entries!.length);
      seen.push(...reply.entries!.map((e) => e.key));
      if (reply.next === undefined) break;
      assert.is(reply.next, seen.at(-1));
      after = reply.next;
    }
    assert.equal(sizes, [10, 10, 6]);
    assert.equal(seen, keys);
    assert.equal(
      (await ask(f, { what: 'health', node: 'n03' })).entries!.map((e) => e.key),
      ['n03.ghost', 'n03.other'],
    );
    assert.equal(
      (await ask(f, { what: 'health', module: 'other' })).entries!.map((e) => e.key),
      ['n03.other'],
    );
    assert.match((await ask(f, { what: 'health', collection: 'x' })).error!, /^collection: only valid for what collect, not health$/);
    const small = (await answerProvisioning(f.nc, jsonBytes({ what: 'health' }), REPLY_HEADROOM + 600, undefined, f.seat.composer.healthBook)) as VerbReply;
    assert.ok(small.entries.length > 0 && small.entries.length < 26 && small.next === small.entries.at(-1)!.key, JSON.stringify(small));
    assert.ok(Buffer.byteLength(JSON.stringify(small)) <= 600, 'a page fits the payload');
  }));

test('a server without a health book refuses health with a reason', async () => {
  const reply = await answerProvisioning(undefined as never, jsonBytes({ what: 'health' }), 1 << 20, {} as never);
  assert.equal(reply, { error: 'what: health is not kept by this server' });
});

test.run();
