// Reports and needs (src/client/reporter.ts): what a report says, and that only what differs is
// written — against a fake bus that records every put, delete and publish.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { failedReport, filledReport, Reporter } from '../src/client/reporter.ts';
import { groupNeeds, settleStoredNeeds } from '../src/client/stale-needs.ts';
import { jsonBytes } from '../src/shared/bus.ts';
import { needKey } from '../src/shared/keys.ts';
import { memoryLogger } from '../src/shared/log.ts';

const pending = { path: '/p', action: 'pending', digest: 'sha256:p' };
const done = { path: '/a', action: 'written', digest: 'sha256:a' };
const refused = { path: '/r', action: 'refused', digest: 'sha256:r', reason: 'not declared' };
const wait = { kind: 'config', name: 'x', files: ['/w'] };

test('filledReport: applied only when nothing waits and every file is confirmed', () => {
  const rows: [Parameters<typeof filledReport>, { state: string; reason?: string }][] = [
    [['b', [done], []], { state: 'applied' }],
    [['b', [done], [wait]], { state: 'waiting' }],
    [['b', [done, refused], []], { state: 'waiting', reason: 'engine refused /r (not declared); waiting for a knock' }],
    [['b', [done, pending], []], { state: 'waiting', reason: 'engine has not confirmed /p; waiting for a knock' }],
    [['b', [pending], [], 'engine timed out'], { state: 'waiting', reason: 'engine timed out; waiting for a knock' }],
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
  const kv = (bucket: string) => ({
    put: async (key: string, value: Uint8Array) => { ops.push(`put ${bucket} ${key} ${new TextDecoder().decode(value)}`); return 1; },
    delete: async (key: string) => { ops.push(`delete ${bucket} ${key}`); },
  }) as unknown as KV;
  const nc = { info: { max_payload: 1024 * 1024 }, publish: (subject: string) => ops.push(`publish ${subject}`) } as unknown as NatsConnection;
  const reporter = new Reporter(nc, 'n1', kv('needs'), kv('applied'), memoryLogger(), () => new Date('2026-01-01T00:00:00Z'));
  return { ops, reporter };
}

test('a report is written and published only when it differs from the last, the time aside', async () => {
  const { ops, reporter } = fakeBus();
  await reporter.report('web', filledReport('b', [done], []));
  await reporter.report('web', filledReport('b', [done], []));
  assert.equal(ops.filter((o) => o.startsWith('publish')), ['publish prov.applied.n1.web']);
  assert.equal(ops.filter((o) => o.startsWith('put applied')).length, 1);
  await reporter.report('web', filledReport('b', [done], [wait]));
  assert.equal(ops.filter((o) => o.startsWith('publish')).length, 2);
});

test('needs: only those that differ are put, those no longer named deleted; removal takes them all', async () => {
  const { ops, reporter } = fakeBus();
  await reporter.needs('web', [{ kind: 'config', name: 'a', files: ['/f'], met: true }, { kind: 'config', name: 'b:c', files: ['/f'], met: false }]);
  await reporter.needs('web', [{ kind: 'config', name: 'a', files: ['/f'], met: true }]);
  assert.equal(ops.map((o) => o.split(' ').slice(0, 3).join(' ')), ['put needs n1.web.config.a', 'put needs n1.web.config.b=3Ac', 'delete needs n1.web.config.b=3Ac']);
  ops.length = 0;
  await reporter.removed('web', 'b');
  assert.equal(ops.map((o) => o.split(' ').slice(0, 3).join(' ')), ['delete needs n1.web.config.a', 'publish prov.applied.n1.web', 'put applied n1.web', 'delete applied n1.web']);
});

/** The bytes the reporter writes for a need of n1's module `web`. */
const needBytes = (kind: string, name: string, files: string[] = ['/f'], met = true) =>
  jsonBytes({ node: 'n1', module: 'web', kind, name, files, met });

test('needs known from before a restart: the first fill puts only what differs and deletes what it no longer names', async () => {
  const { ops, reporter } = fakeBus();
  reporter.known('web', new Map([
    [needKey('n1', 'web', 'config', 'a'), needBytes('config', 'a')],
    [needKey('n1', 'web', 'config', 'b'), needBytes('config', 'b')],
    [needKey('n1', 'web', 'config', 'gone:old'), needBytes('config', 'gone:old')],
  ]));
  await reporter.needs('web', [{ kind: 'config', name: 'a', files: ['/f'], met: true }, { kind: 'config', name: 'b', files: ['/f'], met: false }]);
  assert.equal(ops.map((o) => o.split(' ').slice(0, 3).join(' ')), ['put needs n1.web.config.b', 'delete needs n1.web.config.gone=3Aold']);
});

test('needs known from before a restart do not override what the client wrote since it started', async () => {
  const { ops, reporter } = fakeBus();
  await reporter.needs('web', [{ kind: 'config', name: 'a', files: ['/new'], met: true }]);
  reporter.known('web', new Map([[needKey('n1', 'web', 'config', 'a'), needBytes('config', 'a', ['/old'])], [needKey('n1', 'web', 'port', 'http'), needBytes('port', 'http')]]));
  ops.length = 0;
  await reporter.needs('web', [{ kind: 'config', name: 'a', files: ['/new'], met: true }]);
  assert.equal(ops.map((o) => o.split(' ').slice(0, 3).join(' ')), ['delete needs n1.web.port.http']);
});

test('stored needs are grouped by the module their key names; a key out of shape is kept apart with its reason', () => {
  const grouped = groupNeeds('n1', new Map([
    [needKey('n1', 'web', 'config', 'a.b'), needBytes('config', 'a.b')],
    [needKey('n1', 'db', 'port', 'pg'), needBytes('port', 'pg')],
    [needKey('n1', 'web', 'port', 'http'), needBytes('port', 'http')],
    ['n1.web.config', new Uint8Array()],
    ['n1.web.Config.x', new Uint8Array()],
  ]));
  assert.equal([...grouped.byModule].map(([m, keys]) => [m, [...keys.keys()]]), [
    ['web', ['n1.web.config.a=2Eb', 'n1.web.port.http']],
    ['db', ['n1.db.port.pg']],
  ]);
  assert.equal(grouped.outOfShape.map((o) => o.key), ['n1.web.config', 'n1.web.Config.x']);
  assert.ok(grouped.outOfShape.every((o) => o.reason.length > 0));
});

test('at start a module with no plan has its stored needs deleted with one notice; a planned one keeps them for its fill', async () => {
  const { ops, reporter } = fakeBus();
  const log = memoryLogger();
  const stored = groupNeeds('n1', new Map([
    [needKey('n1', 'web', 'config', 'a'), needBytes('config', 'a')],
    [needKey('n1', 'old', 'config', 'a'), needBytes('config', 'a')],
    [needKey('n1', 'old', 'port', 'http'), needBytes('port', 'http')],
  ])).byModule;
  settleStoredNeeds(stored, new Set(['web']), reporter, 'n1', log);
  await new Promise((r) => setImmediate(r));
  assert.equal(ops.map((o) => o.split(' ').slice(0, 3).join(' ')), ['delete needs n1.old.config.a', 'delete needs n1.old.port.http']);
  assert.equal(log.lines.filter((l) => l.includes('notice')).map((l) => l.replace(/^\S+ /, '')), ['notice mesh-provisioner_needs: needs of old, which has no plan on n1, deleted']);
  ops.length = 0;
  await reporter.needs('web', []);
  assert.equal(ops.map((o) => o.split(' ').slice(0, 3).join(' ')), ['delete needs n1.web.config.a']);
});

test.run();
