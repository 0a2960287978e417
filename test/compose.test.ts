// Composition passes of the seat (DESIGN §4) against a real nats-server.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Kvm } from '@nats-io/kv';
import { jetstream } from '@nats-io/jetstream';
import { HEALTH_SUBJECT, ASSIGNMENTS, MODULES } from '../src/shared/buckets.ts';
import type { Health, Plan } from '../src/shared/schemas.ts';
import { assignment, composition, startSeatFixture, type SeatFixture } from './helpers/seat.ts';
import { sleep, waitFor } from './helpers/wait.ts';

async function plan(f: SeatFixture, key: string): Promise<(Plan & { revision: number }) | null> {
  const e = await f.plans.get(key);
  if (!e || e.operation !== 'PUT') return null;
  return { ...(e.json() as Plan), revision: e.revision };
}

function healthLines(f: SeatFixture): Health[] {
  const lines: Health[] = [];
  f.nc.subscribe(HEALTH_SUBJECT, { callback: (_e, m) => { lines.push(m.json() as Health); } });
  return lines;
}

test('a plan appears for each assignment, placement resolved in paths and secrets given vault names', async () => {
  const f = await startSeatFixture();
  try {
    await f.put(f.modules, 'web', composition('web', '2026.11.29-3', {
      secrets: [{ name: 'api-key' }, { name: 'tls-key', path: '${dir:config}/tls.key' }],
      provisions: [{ provider: 'postgres', provision: 'database', node: 'db1', local: 'main', name: 'db-password', values: { name: 'web' } }],
    }));
    await f.put(f.assignments, 'n1.web', assignment('n1', 'web', '/etc/web'));
    await f.put(f.assignments, 'n2.web', assignment('n2', 'web', '/srv/web'));
    const p1 = await waitFor('plan n1.web', () => plan(f, 'n1.web'));
    const p2 = await waitFor('plan n2.web', () => plan(f, 'n2.web'));
    assert.is(p1.files[0]!.path, '/etc/web/web.conf');
    assert.is(p2.files[0]!.path, '/srv/web/web.conf');
    assert.is(p1.build, '2026.11.29-3');
    assert.equal(p1.placement, { dir: { config: '/etc/web' }, port: { http: 8080 } });
    assert.equal(p1.secrets, [
      { name: 'api-key', vault: 'module/web/api-key' },
      { name: 'tls-key', vault: 'module/web/tls-key', path: '/etc/web/tls.key' },
      { name: 'db-password', vault: 'pair/postgres/database/n1/web/main' },
    ]);
    assert.is(p1.provisions[0]!.node, 'db1');
  } finally {
    await f.close();
  }
});

test('an unpublished module is held while another module’s removed assignment retires in the same pass', async () => {
  const f = await startSeatFixture();
  try {
    await f.put(f.modules, 'web', composition('web', '1'));
    await f.put(f.modules, 'db', composition('db', '1'));
    await f.put(f.assignments, 'n1.web', assignment('n1', 'web'));
    await f.put(f.assignments, 'n1.db', assignment('n1', 'db'));
    const web = await waitFor('plan n1.web', () => plan(f, 'n1.web'));
    await waitFor('plan n1.db', () => plan(f, 'n1.db'));

    await f.put(f.modules, 'web', { ...composition('web', '2'), published: false });
    await waitFor('a pass holding web', () => f.passes.some((p) => p.held.includes('n1.web')));
    await f.assignments.delete('n1.db');
    const pass = await waitFor('the pass retiring n1.db', () => f.passes.find((p) => p.retired.includes('n1.db')));
    assert.ok(pass.held.includes('n1.web'), 'web held in the pass that retired db');
    assert.is(await plan(f, 'n1.db'), null);
    const still = await plan(f, 'n1.web');
    assert.is(still?.revision, web.revision, 'the held plan is left as it was');
    assert.is(still?.build, '1');
  } finally {
    await f.close();
  }
});

test('provisioner_health says a module held for three passes, with its build', async () => {
  const f = await startSeatFixture();
  try {
    const lines = healthLines(f);
    await f.put(f.modules, 'web', { ...composition('web', '7'), published: false });
    await f.put(f.modules, 'db', composition('db', '1'));
    await f.put(f.assignments, 'n1.web', assignment('n1', 'web'));
    for (let i = 0; i < 4; i++) {
      const before = f.passes.length;
      await f.put(f.assignments, 'n1.db', assignment('n1', 'db', `/etc/db${i}`));
      await waitFor('another pass', () => f.passes.length > before);
      await f.seat.composer.idle();
    }
    const line = await waitFor('a health line for web', () => lines.find((l) => l.module === 'web'));
    assert.is(line.build, '7');
    assert.is(line.passes, 3);
    assert.match(line.reason, /not published/);
    assert.ok(!lines.some((l) => l.module === 'db'), 'db is not said');
  } finally {
    await f.close();
  }
});

test('a change in one composition rewrites only its own plans', async () => {
  const f = await startSeatFixture();
  try {
    await f.put(f.modules, 'web', composition('web', '1'));
    await f.put(f.modules, 'db', composition('db', '1'));
    for (const key of ['n1.web', 'n2.web', 'n1.db']) {
      const [node, module] = key.split('.') as [string, string];
      await f.put(f.assignments, key, assignment(node, module));
    }
    const before = new Map<string, number>();
    for (const key of ['n1.web', 'n2.web', 'n1.db']) before.set(key, (await waitFor(key, () => plan(f, key))).revision);
    await f.seat.composer.idle();

    await f.put(f.modules, 'web', composition('web', '2'));
    await waitFor('n1.web rewritten', async () => (await plan(f, 'n1.web'))?.build === '2');
    await waitFor('n2.web rewritten', async () => (await plan(f, 'n2.web'))?.build === '2');
    await f.seat.composer.idle();
    assert.is((await plan(f, 'n1.db'))?.revision, before.get('n1.db'));
  } finally {
    await f.close();
  }
});

test('an assignment that does not validate is said with its key and reason, and the others compose', async () => {
  const f = await startSeatFixture();
  try {
    const lines = healthLines(f);
    await f.put(f.modules, 'web', composition('web', '1'));
    await f.assignments.put('n1.bad', '{"node":"n1","placement":{}}');
    await f.assignments.put('n1.junk', 'not json');
    await f.put(f.assignments, 'n1.web', assignment('n1', 'web'));
    await waitFor('plan n1.web', () => plan(f, 'n1.web'));
    const bad = await waitFor('health for n1.bad', () => lines.find((l) => l.reason.includes('n1.bad')));
    assert.match(bad.reason, /mesh-controller_assignments n1\.bad: field "module"/);
    const junk = await waitFor('health for n1.junk', () => lines.find((l) => l.reason.includes('n1.junk')));
    assert.match(junk.reason, /not JSON/);
    assert.ok(f.log.lines.some((l) => l.includes('n1.bad')), 'logged too');
  } finally {
    await f.close();
  }
});

test('a composition that does not validate is said with its key and reason, its plans held, the others composed', async () => {
  const f = await startSeatFixture();
  try {
    const lines = healthLines(f);
    await f.put(f.modules, 'web', composition('web', '1'));
    await f.put(f.modules, 'db', composition('db', '1'));
    await f.put(f.assignments, 'n1.web', assignment('n1', 'web'));
    await f.put(f.assignments, 'n1.db', assignment('n1', 'db'));
    const web = await waitFor('plan n1.web', () => plan(f, 'n1.web'));
    await f.modules.put('web', JSON.stringify({ ...composition('web', '2'), published: 'yes' }));
    await f.put(f.modules, 'db', composition('db', '2'));
    await waitFor('db rewritten', async () => (await plan(f, 'n1.db'))?.build === '2');
    const line = await waitFor('health for web', () => lines.find((l) => l.module === 'web'));
    assert.match(line.reason, /^mesh-catalog_modules web: field "published"/);
    assert.is((await plan(f, 'n1.web'))?.revision, web.revision, 'web keeps its plan');
  } finally {
    await f.close();
  }
});

test('a path naming placement the assignment lacks fails that plan alone with a health line', async () => {
  const f = await startSeatFixture();
  try {
    const lines = healthLines(f);
    await f.put(f.modules, 'web', composition('web', '1', { files: [{ path: '${dir:nope}/web.conf', template: 'web.conf' }] }));
    await f.put(f.modules, 'db', composition('db', '1'));
    await f.put(f.assignments, 'n1.web', assignment('n1', 'web'));
    await f.put(f.assignments, 'n1.db', assignment('n1', 'db'));
    await waitFor('plan n1.db', () => plan(f, 'n1.db'));
    const line = await waitFor('health for web', () => lines.find((l) => l.module === 'web'));
    assert.match(line.reason, /\$\{dir:nope\} is not in the assignment's placement/);
    assert.is(line.node, 'n1');
    assert.is(await plan(f, 'n1.web'), null);
  } finally {
    await f.close();
  }
});

test('input buckets missing at start are waited for, then composed from', async () => {
  const f = await startSeatFixture({ withoutInputs: true });
  try {
    await sleep(300);
    assert.ok(f.log.lines.some((l) => l.includes(`waiting for bucket ${ASSIGNMENTS}`)));
    const kvm = new Kvm(jetstream(f.nc));
    const modules = await kvm.create(MODULES);
    const assignments = await kvm.create(ASSIGNMENTS);
    await f.put(modules, 'web', composition('web', '1'));
    await f.put(assignments, 'n1.web', assignment('n1', 'web'));
    const p = await waitFor('plan n1.web', () => plan(f, 'n1.web'), 15_000);
    assert.is(p.node, 'n1');
  } finally {
    await f.close();
  }
});

test('a stored plan out of shape is left alone, and an operator’s stray plan of a gone assignment retires', async () => {
  const f = await startSeatFixture();
  try {
    await f.plans.put('n9.gone', '{}');
    await f.plans.put('BAD', '{}');
    await f.put(f.modules, 'web', composition('web', '1'));
    await f.put(f.assignments, 'n1.web', assignment('n1', 'web'));
    await waitFor('plan n1.web', () => plan(f, 'n1.web'));
    await waitFor('n9.gone retired', async () => (await f.plans.get('n9.gone'))?.operation === 'DEL');
    assert.is((await f.plans.get('BAD'))?.operation, 'PUT');
  } finally {
    await f.close();
  }
});

test.run();
