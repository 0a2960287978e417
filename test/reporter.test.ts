// Reports and needs (src/client/report/reporter.ts): what a report says, and that only what differs is
// written — against a fake bus that records every put, delete and publish.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { failedReport, filledReport, Reporter } from '../src/client/report/reporter.ts';
import { groupNeeds, settleStoredNeeds } from '../src/client/report/stale-needs.ts';
import { jsonBytes } from '../src/shared/base/bytes.ts';
import { needKey } from '../src/shared/contract/keys.ts';
import { PutRefusedError } from '../src/shared/bus/kv-publisher.ts';
import { memoryLogger } from '../src/shared/cli/log.ts';

const pending = { path: '/p', action: 'pending', digest: 'sha256:p' };
const done = { path: '/a', action: 'written', digest: 'sha256:a' };
const refused = { path: '/r', action: 'refused', digest: 'sha256:r', reason: 'not declared' };
const wait = { kind: 'config', name: 'x', files: ['/w'] };

test('filledReport: applied only when nothing waits and every file is confirmed', () => {
  const rows: [Parameters<typeof filledReport>, { state: string; reason?: string }][] = [
    [['b', [done], []], { state: 'applied' }],
    [['b', [done], [wait]], { state: 'waiting' }],
    [
      ['b', [done, refused], []],
      { state: 'waiting', reason: 'engine refused /r (not declared); waiting for a knock (the engine starting, or its socket touched)' },
    ],
    [['b', [done, pending], []], { state: 'waiting', reason: 'engine has not confirmed /p; waiting for a knock (the engine starting, or its socket touched)' }],
    [
      ['b', [pending], [], 'engine timed out'],
      { state: 'waiting', reason: 'engine timed out; waiting for a knock (the engine starting, or its socket touched)' },
    ],
  ];
  for (const [args, expected] of rows) {
    const body = filledReport(...args);
    assert.is(body.state, expected.state, JSON.stringify(args));
    assert.is(body.reason, expected.reason, JSON.stringify(args));
    assert.equal(body.files, args[1]);
  }
  assert.equal(failedReport('b', 'why'), { build: 'b', state: 'failed', files: [], waiting: [], reason: 'why' });
});

/** A reporter on a fake bus: every KV operation and publish recorded in order. */
function fakeBus() {
  const ops: string[] = [];
  const kv = (bucket: string) =>
    ({
      put: async (key: string, value: Uint8Array) => {
        ops.push(`put ${bucket} ${key} ${new TextDecoder().decode(value)}`);
        return 1;
      },
      delete: async (key: string) => {
        ops.push(`delete ${bucket} ${key}`);
      },
    }) as unknown as KV;
  const nc = { info: { max_payload: 1024 * 1024 }, publish: (subject: string) => ops.push(`publish ${subject}`) } as unknown as NatsConnection;
  const reporter = new Reporter(nc, 'n1', kv('needs'), kv('applied'), memoryLogger(), () => new Date('2026-01-01T00:00:00Z'));
  return { ops, reporter };
}

test('a report is written and published only when it differs from the last, the time aside', async () => {
  const { ops, reporter } = fakeBus();
  await reporter.report('web', filledReport('b', [done], []));
  await reporter.report('web', filledReport('b', [done], []));
  assert.equal(
    ops.filter((o) => o.startsWith('publish')),
    ['publish prov.applied.n1.web'],
  );
  assert.equal(ops.filter((o) => o.startsWith('put applied')).length, 1);
  await reporter.report('web', filledReport('b', [done], [wait]));
  assert.equal(ops.filter((o) => o.startsWith('publish')).length, 2);
});

test("a report's bytes are the JSON of the whole report, its time last, however much of it the comparison left out", async () => {
  const { ops, reporter } = fakeBus();
  const body = filledReport('b', [{ ...done, from: [{ kind: 'config', key: 'n1.web.a', rev: 3 }] }], [wait], undefined, ['a "quoted" note']);
  await reporter.report('web', body);
  const written = ops.find((o) => o.startsWith('put applied n1.web '))!.slice('put applied n1.web '.length);
  assert.is(written, JSON.stringify({ node: 'n1', module: 'web', ...body, at: '2026-01-01T00:00:00.000Z' }));
});

test('needs: a fill naming the same needs again writes nothing; one whose need turns met puts that need alone', async () => {
  const { ops, reporter } = fakeBus();
  const entries = (met: boolean) => [
    { kind: 'config', name: 'a', files: ['/f'], met: true },
    { kind: 'config', name: 'b', files: ['/f', '/g'], met },
  ];
  await reporter.needs('web', entries(false));
  ops.length = 0;
  await reporter.needs('web', entries(false));
  assert.equal(ops, []);
  await reporter.needs('web', entries(true));
  assert.equal(
    ops.map((o) => o.split(' ').slice(0, 3).join(' ')),
    ['put needs n1.web.config.b'],
  );
});

test('needs: only those that differ are put, those no longer named deleted; removal takes them all', async () => {
  const { ops, reporter } = fakeBus();
  await reporter.needs('web', [
    { kind: 'config', name: 'a', files: ['/f'], met: true },
    { kind: 'config', name: 'b:c', files: ['/f'], met: false },
  ]);
  await reporter.needs('web', [{ kind: 'config', name: 'a', files: ['/f'], met: true }]);
  assert.equal(
    ops.map((o) => o.split(' ').slice(0, 3).join(' ')),
    ['put needs n1.web.config.a', 'put needs n1.web.config.b=3Ac', 'delete needs n1.web.config.b=3Ac'],
  );
  ops.length = 0;
  await reporter.removed('web', 'b');
  assert.equal(
    ops.map((o) => o.split(' ').slice(0, 3).join(' ')),
    ['delete needs n1.web.config.a', 'publish prov.applied.n1.web', 'put applied n1.web', 'delete applied n1.web'],
  );
});

/** The bytes the reporter writes for a need of n1's module `web`. */
const needBytes = (kind: string, name: string, files: string[] = ['/f'], met = true) => jsonBytes({ node: 'n1', module: 'web', kind, name, files, met });

test('needs known from before a restart: the first fill puts only what differs and deletes what it no longer names', async () => {
  const { ops, reporter } = fakeBus();
  reporter.known(
    'web',
    new Map([
      [needKey('n1', 'web', 'config', 'a'), needBytes('config', 'a')],
      [needKey('n1', 'web', 'config', 'b'), needBytes('config', 'b')],
      [needKey('n1', 'web', 'config', 'gone:old'), needBytes('config', 'gone:old')],
    ]),
  );
  await reporter.needs('web', [
    { kind: 'config', name: 'a', files: ['/f'], met: true },
    { kind: 'config', name: 'b', files: ['/f'], met: false },
  ]);
  assert.equal(
    ops.map((o) => o.split(' ').slice(0, 3).join(' ')),
    ['put needs n1.web.config.b', 'delete needs n1.web.config.gone=3Aold'],
  );
});

test('needs known from before a restart do not override what the client wrote since it started', async () => {
  const { ops, reporter } = fakeBus();
  await reporter.needs('web', [{ kind: 'config', name: 'a', files: ['/new'], met: true }]);
  reporter.known(
    'web',
    new Map([
      [needKey('n1', 'web', 'config', 'a'), needBytes('config', 'a', ['/old'])],
      [needKey('n1', 'web', 'port', 'http'), needBytes('port', 'http')],
    ]),
  );
  ops.length = 0;
  await reporter.needs('web', [{ kind: 'config', name: 'a', files: ['/new'], met: true }]);
  assert.equal(
    ops.map((o) => o.split(' ').slice(0, 3).join(' ')),
    ['delete needs n1.web.port.http'],
  );
});

test('stored needs are grouped by the module their key names; a key out of shape is kept apart with its reason', () => {
  const grouped = groupNeeds(
    'n1',
    new Map([
      [needKey('n1', 'web', 'config', 'a.b'), needBytes('config', 'a.b')],
      [needKey('n1', 'db', 'port', 'pg'), needBytes('port', 'pg')],
      [needKey('n1', 'web', 'port', 'http'), needBytes('port', 'http')],
      ['n1.web.config', new Uint8Array()],
      ['n1.web.Config.x', new Uint8Array()],
    ]),
  );
  assert.equal(
    [...grouped.byModule].map(([m, keys]) => [m, [...keys.keys()]]),
    [
      ['web', ['n1.web.config.a=2Eb', 'n1.web.port.http']],
      ['db', ['n1.db.port.pg']],
    ],
  );
  assert.equal(
    grouped.outOfShape.map((o) => o.key),
    ['n1.web.config', 'n1.web.Config.x'],
  );
  assert.ok(grouped.outOfShape.every((o) => o.reason.length > 0));
});

test('at start a module with no plan is removed: its stored needs deleted, removed published, its report deleted, one notice; a planned one keeps its needs for its fill', async () => {
  const { ops, reporter } = fakeBus();
  const log = memoryLogger();
  const stored = groupNeeds(
    'n1',
    new Map([
      [needKey('n1', 'web', 'config', 'a'), needBytes('config', 'a')],
      [needKey('n1', 'old', 'config', 'a'), needBytes('config', 'a')],
      [needKey('n1', 'old', 'port', 'http'), needBytes('port', 'http')],
    ]),
  ).byModule;
  const removals: Promise<void>[] = [];
  settleStoredNeeds(stored, new Set(['web']), reporter, (m) => void removals.push(reporter.removed(m, '')), 'n1', log);
  await Promise.all(removals);
  assert.equal(
    ops.map((o) => o.split(' ').slice(0, 3).join(' ')),
    ['delete needs n1.old.config.a', 'delete needs n1.old.port.http', 'publish prov.applied.n1.old', 'put applied n1.old', 'delete applied n1.old'],
  );
  const removed = ops
    .find((o) => o.startsWith('put applied n1.old'))!
    .split(' ')
    .slice(3)
    .join(' ');
  assert.equal(JSON.parse(removed), { node: 'n1', module: 'old', build: '', state: 'removed', files: [], waiting: [], at: '2026-01-01T00:00:00.000Z' });
  assert.equal(
    log.lines.filter((l) => l.includes('notice')).map((l) => l.replace(/^\S+ /, '')),
    ['notice mesh-provisioner_needs: needs and report of old, which has no plan on n1, deleted'],
  );
  ops.length = 0;
  await reporter.needs('web', []);
  assert.equal(
    ops.map((o) => o.split(' ').slice(0, 3).join(' ')),
    ['delete needs n1.web.config.a'],
  );
});

/** A timer a test runs by hand: each wait asked, and the next one run on demand. */
function handTimer() {
  const waits: { fn: () => void; ms: number; cancelled: boolean }[] = [];
  return {
    asked: () => waits.filter((w) => !w.cancelled).map((w) => w.ms),
    timer: (fn: () => void, ms: number) => {
      const w = { fn, ms, cancelled: false };
      waits.push(w);
      return { cancel: () => void (w.cancelled = true) };
    },
    /** Runs the oldest wait still asked and lets the try it starts settle; false when none is. */
    async runNext(): Promise<boolean> {
      const w = waits.find((x) => !x.cancelled);
      if (!w) return false;
      waits.splice(waits.indexOf(w), 1);
      w.fn();
      for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
      return true;
    },
  };
}

/** A fake bus whose puts and deletes fail while `down()` says so, as a bucket without a leader answers. */
function failingBus(down: (op: string) => boolean) {
  const ops: string[] = [];
  const stored = new Map<string, string>();
  const kv = (bucket: string) =>
    ({
      put: async (key: string, value: Uint8Array) => {
        const op = `put ${bucket} ${key}`;
        ops.push(op);
        if (down(op)) throw new PutRefusedError(key, 'no ack within 5000 ms');
        stored.set(`${bucket} ${key}`, new TextDecoder().decode(value));
        return 1;
      },
      delete: async (key: string) => {
        const op = `delete ${bucket} ${key}`;
        ops.push(op);
        if (down(op)) throw new Error('timeout');
        stored.delete(`${bucket} ${key}`);
      },
    }) as unknown as KV;
  const nc = { info: { max_payload: 1024 * 1024 }, publish: () => {} } as unknown as NatsConnection;
  const hand = handTimer();
  const log = memoryLogger();
  const reporter = new Reporter(nc, 'n1', kv('needs'), kv('applied'), log, () => new Date('2026-01-01T00:00:00Z'), { timer: hand.timer });
  return { ops, stored, hand, log, reporter };
}

test('a report put the bus does not acknowledge is tried again, the wait doubling, until it lands', async () => {
  let failures = 3;
  const bus = failingBus((op) => op.startsWith('put applied') && failures-- > 0);
  await bus.reporter.report('web', filledReport('b', [done], []));
  assert.is(bus.stored.get('applied n1.web'), undefined);
  assert.is(bus.reporter.retrying, 1);
  const waits: number[] = [];
  for (;;) {
    waits.push(...bus.hand.asked());
    if (!(await bus.hand.runNext())) break;
  }
  assert.equal(waits, [250, 500, 1000]);
  assert.equal(bus.ops, ['put applied n1.web', 'put applied n1.web', 'put applied n1.web', 'put applied n1.web']);
  assert.is((JSON.parse(bus.stored.get('applied n1.web')!) as { state: string }).state, 'applied');
  assert.is(bus.reporter.retrying, 0);
  assert.ok(
    bus.log.lines.some((l) => /warning mesh-provisioner_applied n1\.web: put of n1\.web: no ack within 5000 ms; trying again in 250 ms/.test(l)),
    bus.log.lines.join('\n'),
  );
  assert.ok(
    bus.log.lines.some((l) => /notice mesh-provisioner_applied n1\.web: written on try 4/.test(l)),
    bus.log.lines.join('\n'),
  );
});

test('a newer report replaces one still being tried again: the older is never written after it', async () => {
  let down = true;
  const bus = failingBus((op) => op.startsWith('put applied') && down);
  await bus.reporter.report('web', filledReport('b', [done], [wait]));
  assert.equal(bus.hand.asked(), [250]);
  down = false;
  await bus.reporter.report('web', filledReport('b', [done], []));
  assert.equal(bus.hand.asked(), [], 'the older report’s retry is dropped');
  assert.is(await bus.hand.runNext(), false);
  assert.equal(bus.ops, ['put applied n1.web', 'put applied n1.web']);
  assert.is((JSON.parse(bus.stored.get('applied n1.web')!) as { state: string }).state, 'applied');
  // The same report asked again is not written again: the reporter counts it as written.
  await bus.reporter.report('web', filledReport('b', [done], []));
  assert.is(bus.ops.length, 2);
});

test('needs the bus refused, a put and a delete, are tried again until they land; removal then deletes them', async () => {
  let down = false;
  const bus = failingBus((op) => (op.startsWith('put needs') || op.startsWith('delete needs') ? down : false));
  await bus.reporter.needs('web', [{ kind: 'config', name: 'a', files: ['/f'], met: true }]);
  down = true;
  await bus.reporter.needs('web', [{ kind: 'config', name: 'b', files: ['/f'], met: false }]);
  assert.is(bus.reporter.retrying, 2);
  assert.ok(bus.stored.has('needs n1.web.config.a'), 'not deleted yet');
  down = false;
  while (await bus.hand.runNext());
  assert.is(bus.reporter.retrying, 0);
  assert.equal(
    [...bus.stored.keys()].filter((k) => k.startsWith('needs')),
    ['needs n1.web.config.b'],
  );
  await bus.reporter.removed('web', 'b');
  assert.equal([...bus.stored.keys()], []);
});

test('a stopped reporter tries nothing again', async () => {
  const bus = failingBus(() => true);
  await bus.reporter.report('web', filledReport('b', [done], []));
  bus.reporter.close();
  assert.is(await bus.hand.runNext(), false);
  assert.equal(bus.ops, ['put applied n1.web']);
});

test.run();
