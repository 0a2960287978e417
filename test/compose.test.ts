// Composition passes of the seat (DESIGN §4) against a real nats-server.
import { HEALTH_SUBJECT } from '../src/shared/contract/subjects.ts';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ASSIGNMENTS, MODULES, PLANS } from '../src/shared/contract/buckets.ts';
import { connectBus, ensureKv } from '../src/shared/bus/bus.ts';
import { watchKv } from '../src/shared/bus/watch/watch.ts';
import { memoryLogger } from '../src/shared/cli/log.ts';
import { segmentNameProblem } from '../src/shared/contract/keys.ts';
import { isNormalAbsolutePath, pathProblem, tokenProblem } from '../src/shared/contract/fields.ts';
import type { Health } from '../src/shared/contract/verb.ts';
import type { Plan } from '../src/shared/contract/plan.ts';
import { Composer } from '../src/server/seat/composer.ts';
import { KvPublisher, parsePublishAck, PutRefusedError } from '../src/shared/bus/kv-publisher.ts';
import { startNats } from './helpers/nats.ts';
import { assignment, composition, compositionWithValues, nestedJson, startSeatFixture, type SeatFixture } from './helpers/seat.ts';
import { waitFor } from './helpers/wait.ts';

async function plan(f: SeatFixture, key: string): Promise<(Plan & { revision: number }) | null> {
  const e = await f.plans.get(key);
  if (!e || e.operation !== 'PUT') return null;
  return { ...(e.json() as Plan), revision: e.revision };
}

function healthLines(f: SeatFixture): Health[] {
  const lines: Health[] = [];
  f.nc.subscribe(HEALTH_SUBJECT, {
    callback: (_e, m) => {
      lines.push(m.json() as Health);
    },
  });
  return lines;
}

test('a plan appears for each assignment, placement resolved in paths and secrets given vault names', async () => {
  const f = await startSeatFixture();
  try {
    await f.put(
      f.modules,
      'web',
      composition('web', '2026.11.29-3', {
        secrets: [{ name: 'api-key' }, { name: 'tls-key', path: '${dir:config}/tls.key' }],
        provisions: [{ provider: 'postgres', provision: 'database', node: 'db1', local: 'main', name: 'db-password', values: { name: 'web' } }],
      }),
    );
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
    assert.ok(
      f.log.lines.some((l) => l.includes('n1.bad')),
      'logged too',
    );
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
    await waitFor('the seat saying it waits for the assignments bucket', () => f.log.lines.some((l) => l.includes(`waiting for bucket ${ASSIGNMENTS}`)));
    assert.equal(f.passes, [], 'no pass before the inputs exist');
    const modules = await ensureKv(f.nc, MODULES, 1);
    const assignments = await ensureKv(f.nc, ASSIGNMENTS, 1);
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

test('a path is normal and absolute only without . or .. segments, //, a trailing /, NUL or a line break', () => {
  for (const good of ['/etc/web/web.conf', '/a', '/etc/web/.hidden', '/etc/web/..conf', '/srv/a b/c', '/etc/wéb/ü']) {
    assert.ok(isNormalAbsolutePath(good), good);
  }
  const bad: [string, RegExp][] = [
    ['etc/web.conf', /not absolute/],
    ['', /not absolute/],
    ['/etc/../shadow', /\.\. segment/],
    ['/etc/./web', /\. or \.\. segment/],
    ['/etc/web/..', /segment/],
    ['/etc//web', /holds \/\//],
    ['/etc/web/', /ends with \//],
    ['/', /ends with \//],
    ['/etc/web\0.conf', /NUL/],
    ['/etc/web\n.conf', /line break/],
    ['/' + 'a'.repeat(5000), /5001 bytes, past the limit of 4096/],
  ];
  for (const [path, reason] of bad) assert.match(pathProblem(path) ?? 'accepted', reason, JSON.stringify(path));
});

test('a secret name, provision or local is 1 to 128 of A-Z a-z 0-9 _ -, a letter or digit first (DESIGN §2)', () => {
  for (const good of ['api-key', 'db_main', 'A', '0', 'a'.repeat(128), 'x-_-y']) assert.is(segmentNameProblem(good), undefined, good);
  const bad = ['a}b', 'a b', '$x', '-x', '_x', '', 'a'.repeat(129), '../victim/api-key', 'a/b', 'a.b', '.', '..', 'db.main:password', 'ü', 'a:b'];
  for (const name of bad) assert.type(segmentNameProblem(name), 'string', name);
  assert.match(
    segmentNameProblem('../victim/api-key')!,
    /^is "\.\.\/victim\/api-key", not a name of 1 to 128 of A-Z a-z 0-9 _ - starting with a letter or digit \(no \/, \. or \.\.\)$/,
  );
  assert.ok(segmentNameProblem('x'.repeat(5000))!.length < 200, 'a long name is quoted cut short');
  assert.match(tokenProblem(':'.repeat(100))!, /300 bytes as a key token, past the limit of 255/);
  assert.match(tokenProblem('x'.repeat(4000))!, /4000 bytes, past the limit of 255/);
});

test('a secret or a provision name the engine cannot take fails its composition with the field, the others compose', async () => {
  const f = await startSeatFixture();
  try {
    const lines = healthLines(f);
    await f.put(f.modules, 'web', composition('web', '1', { secrets: [{ name: 'a}b' }] }));
    await f.put(f.modules, 'api', composition('api', '1', { provisions: [{ provider: 'postgres', provision: 'database', name: 'db password' }] }));
    await f.put(f.modules, 'db', composition('db', '1'));
    for (const module of ['web', 'api', 'db']) await f.put(f.assignments, `n1.${module}`, assignment('n1', module));
    await waitFor('plan n1.db', () => plan(f, 'n1.db'));
    const web = await waitFor('health for web', () => lines.find((l) => l.module === 'web'));
    assert.match(web.reason, /^mesh-catalog_modules web: field "provisioning\.secrets\.0\.name" is "a}b", not a name of 1 to 128/);
    const api = await waitFor('health for api', () => lines.find((l) => l.module === 'api'));
    assert.match(api.reason, /field "provisioning\.provisions\.0\.name" is "db password", not a name of 1 to 128/);
    await f.seat.composer.idle();
    assert.is(await plan(f, 'n1.web'), null);
    assert.is(await plan(f, 'n1.api'), null);
  } finally {
    await f.close();
  }
});

test('a collection past 255 bytes as a key token, or a local out of its grammar, fails its composition', async () => {
  const f = await startSeatFixture();
  try {
    const lines = healthLines(f);
    await f.put(f.modules, 'web', composition('web', '1', { items: [{ collection: 'shell:' + 'z'.repeat(300), template: 'web.zsh' }] }));
    await f.put(f.modules, 'api', composition('api', '1', { provisions: [{ provider: 'postgres', provision: 'database', local: '.'.repeat(100) }] }));
    await f.put(f.assignments, 'n1.web', assignment('n1', 'web'));
    await f.put(f.assignments, 'n1.api', assignment('n1', 'api'));
    const web = await waitFor('health for web', () => lines.find((l) => l.module === 'web'));
    assert.match(web.reason, /field "provisioning\.items\.0\.collection" is 306 bytes, past the limit of 255 bytes/);
    const api = await waitFor('health for api', () => lines.find((l) => l.module === 'api'));
    assert.match(api.reason, /field "provisioning\.provisions\.0\.local" is "\.{64}…", not a name of 1 to 128/);
  } finally {
    await f.close();
  }
});

test('a file or secret path that is not normal once placed fails that plan with the file and the reason', async () => {
  const f = await startSeatFixture();
  try {
    const lines = healthLines(f);
    await f.put(f.modules, 'web', composition('web', '1', { files: [{ path: '${dir:config}/../../etc/shadow', template: 'web.conf' }] }));
    await f.put(f.modules, 'api', composition('api', '1', { files: [], secrets: [{ name: 'tls-key', path: '${dir:config}/tls.key' }] }));
    await f.put(f.modules, 'db', composition('db', '1'));
    await f.put(f.assignments, 'n1.web', assignment('n1', 'web'));
    await f.put(f.assignments, 'n1.api', assignment('n1', 'api', '/etc/api/'));
    await f.put(f.assignments, 'n1.db', assignment('n1', 'db', 'etc/db'));
    const web = await waitFor('health for web', () => lines.find((l) => l.module === 'web'));
    assert.match(
      web.reason,
      /^plan n1\.web: file web\.conf: path "\$\{dir:config\}\/\.\.\/\.\.\/etc\/shadow": resolves to "\/etc\/web\/\.\.\/\.\.\/etc\/shadow", which holds a \. or \.\. segment/,
    );
    const api = await waitFor('health for api', () => lines.find((l) => l.module === 'api'));
    assert.match(api.reason, /secret tls-key: path .*resolves to "\/etc\/api\/\/tls\.key", which holds \/\//);
    const db = await waitFor('health for db', () => lines.find((l) => l.module === 'db'));
    assert.match(db.reason, /file db\.conf: .*which is not absolute/);
    await f.seat.composer.idle();
    for (const key of ['n1.web', 'n1.api', 'n1.db']) assert.is(await plan(f, key), null, key);
  } finally {
    await f.close();
  }
});

test('a composition or assignment nested 5,000 levels deep is refused with its key and the depth limit, the others compose', async () => {
  const f = await startSeatFixture();
  try {
    const lines = healthLines(f);
    await f.modules.put('deep', compositionWithValues('deep', nestedJson(5000)));
    await f.put(f.assignments, 'n1.deep', assignment('n1', 'deep'));
    await f.assignments.put('n1.nested', `{"node":"n1","module":"nested","placement":{"dir":${nestedJson(5000)}}}`);
    await f.put(f.modules, 'web', composition('web', '1'));
    await f.put(f.assignments, 'n1.web', assignment('n1', 'web'));
    await waitFor('plan n1.web', () => plan(f, 'n1.web'));
    const deep = await waitFor('health for deep', () => lines.find((l) => l.module === 'deep'));
    assert.match(deep.reason, /^mesh-catalog_modules deep: nested deeper than 64 levels; its plans cannot be composed \(stored plans are kept\)$/);
    const nested = await waitFor('health for n1.nested', () => lines.find((l) => l.module === 'nested'));
    assert.match(nested.reason, /^mesh-controller_assignments n1\.nested: nested deeper than 64 levels$/);
    await f.put(f.modules, 'web', composition('web', '2'));
    await waitFor('web rewritten in a later pass', async () => (await plan(f, 'n1.web'))?.build === '2');
  } finally {
    await f.close();
  }
});

/** A composer over a sink in memory, fed one valid pair (n1.web) and whatever else `feed` puts in. */
async function composeInMemory(feed: (c: Composer) => void, health: (line: Health) => void) {
  const written = new Map<string, Uint8Array>();
  const log = memoryLogger();
  const composer = new Composer({ putPlan: async (k, v) => void written.set(k, v), deletePlan: async (k) => void written.delete(k), health }, log);
  feed(composer);
  composer.update('assignments', 'n1.web', new TextEncoder().encode(JSON.stringify(assignment('n1', 'web'))));
  composer.update('modules', 'web', new TextEncoder().encode(JSON.stringify(composition('web', '1'))));
  for (const input of ['assignments', 'modules', 'plans'] as const) composer.loaded(input);
  await composer.idle();
  return { written, log, composer };
}

test('an exception in one key’s work is said with the key and the reason, and the pass goes on for the others', async () => {
  // A value whose bytes cannot be read: what no decoder guards against, so only the per-key guard can.
  const poisoned = new Proxy(new Uint8Array(8), {
    get(target, prop) {
      if (typeof prop === 'string' && /^\d+$/.test(prop)) throw new Error('poisoned byte');
      const value = Reflect.get(target, prop, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  const lines: Health[] = [];
  const { written, log, composer } = await composeInMemory(
    (c) => c.update('assignments', 'n1.bad', poisoned),
    (l) => lines.push(l),
  );
  assert.ok(written.has('n1.web'), 'the good key is composed');
  composer.update('modules', 'web', new TextEncoder().encode(JSON.stringify(composition('web', '2'))));
  await composer.idle();
  assert.is(JSON.parse(new TextDecoder().decode(written.get('n1.web'))).build, '2', 'a later pass composes too');
  assert.is(lines.filter((l) => l.module === 'bad').length, 1, 'said once');
  assert.not.ok(
    log.lines.some((l) => l.includes('ended early')),
    log.lines.join('\n'),
  );
  const line = lines.find((l) => l.module === 'bad');
  assert.ok(line, JSON.stringify(lines));
  assert.is(line!.node, 'n1');
  assert.match(line!.reason, /^mesh-controller_assignments n1\.bad: internal error: Error: poisoned byte$/);
  assert.ok(log.lines.some((l) => l.includes('n1.bad: internal error')));
});

test('a health line the bus refuses is logged and the pass goes on', async () => {
  const { written, log } = await composeInMemory(
    (c) => c.update('assignments', 'n1.junk', new TextEncoder().encode('not json')),
    () => {
      throw new Error('connection closed');
    },
  );
  assert.ok(written.has('n1.web'));
  assert.ok(
    log.lines.some((l) => /provisioner_health: could not say .*n1\.junk.*connection closed/.test(l)),
    log.lines.join('\n'),
  );
});

test('a plan that would be past 1 MiB is refused with its size, and the others compose', async () => {
  const lines: Health[] = [];
  const { written } = await composeInMemory(
    (c) => {
      const big = composition('big', '1', { provisions: [{ provider: 'postgres', provision: 'database', values: { pad: 'x'.repeat(600_000) } }] });
      c.update('modules', 'big', new TextEncoder().encode(JSON.stringify(big)));
      c.update(
        'assignments',
        'n1.big',
        new TextEncoder().encode(
          JSON.stringify({ ...assignment('n1', 'big'), placement: { dir: { config: '/etc/big' }, seat: { pad: 'y'.repeat(600_000) } } }),
        ),
      );
    },
    (l) => lines.push(l),
  );
  assert.ok(written.has('n1.web'));
  assert.not.ok(written.has('n1.big'));
  const line = lines.find((l) => l.module === 'big');
  assert.match(line?.reason ?? 'not said', /^plan n1\.big: \d{7} bytes, past the limit of 1048576 bytes$/);
});

test('one assignment change at the seat writes exactly one plan, and only its own', async () => {
  const f = await startSeatFixture();
  try {
    await f.put(f.modules, 'web', composition('web', '1'));
    await f.put(f.modules, 'db', composition('db', '1'));
    const keys: string[] = [];
    for (let i = 0; i < 20; i++) for (const module of ['web', 'db']) keys.push(`n${i}.${module}`);
    await Promise.all(keys.map((key) => f.put(f.assignments, key, assignment(key.split('.')[0]!, key.split('.')[1]!))));
    for (const key of keys) await waitFor(key, () => plan(f, key));
    await f.seat.composer.idle();
    const seen: string[] = [];
    const watch = await watchKv(f.nc, PLANS, '>', (e) => void seen.push(e.key));
    await watch.caughtUp;
    seen.length = 0;
    await f.put(f.assignments, 'n7.db', assignment('n7', 'db', '/srv/db'));
    await waitFor('n7.db rewritten', async () => (await plan(f, 'n7.db'))?.files[0]!.path === '/srv/db/db.conf');
    await f.seat.composer.idle();
    const pass = f.passes.at(-1)!;
    // A later change, its plan watched: whatever else that pass wrote is stored, and watched, before it.
    await f.put(f.assignments, 'n8.web', assignment('n8', 'web', '/srv/web'));
    await waitFor('n8.web watched', () => seen.includes('n8.web'));
    watch.stop();
    assert.equal(seen, ['n7.db', 'n8.web']);
    assert.equal([pass.composed, pass.written], [['n7.db'], ['n7.db']]);
  } finally {
    await f.close();
  }
});

test('plans are put as pipelined publishes, each resolving with the revision the bucket gave it', async () => {
  const server = await startNats();
  const nc = await connectBus({ servers: [server.url], name: 'test' });
  const plans = await ensureKv(nc, PLANS, 1);
  const publisher = new KvPublisher(nc, PLANS);
  try {
    const keys = Array.from({ length: 200 }, (_, i) => `p${i}.web`);
    const revisions = await Promise.all(keys.map((key) => publisher.put(key, new TextEncoder().encode(`{"k":"${key}"}`))));
    assert.is(new Set(revisions).size, keys.length, 'one revision each');
    for (const i of [0, 99, 199]) {
      const entry = await plans.get(keys[i]!);
      assert.is(entry?.revision, revisions[i]);
      assert.is(entry?.string(), `{"k":"${keys[i]}"}`);
    }
  } finally {
    publisher.close();
    await nc.close();
    await server.cleanup();
  }
});

test('a put to a bucket no stream holds is refused with the key and the reason', async () => {
  const server = await startNats();
  const nc = await connectBus({ servers: [server.url], name: 'test' });
  const publisher = new KvPublisher(nc, 'no-such-bucket');
  try {
    const err = await publisher.put('n1.web', new Uint8Array([123, 125])).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.instance(err, PutRefusedError);
    assert.match((err as Error).message, /^put of n1\.web: status 503: no stream listens/);
  } finally {
    publisher.close();
    await nc.close();
    await server.cleanup();
  }
});

test('a put the bus does not answer within the timeout is refused, not left waiting', async () => {
  const server = await startNats();
  const nc = await connectBus({ servers: [server.url], name: 'test' });
  await ensureKv(nc, PLANS, 1);
  const publisher = new KvPublisher(nc, PLANS, { timeoutMs: 300 });
  try {
    assert.type(await publisher.put('n1.web', new Uint8Array([123, 125])), 'number');
    await server.stop();
    const started = Date.now();
    const err = await publisher.put('n2.web', new Uint8Array([123, 125])).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.match(String((err as Error)?.message), /^put of n2\.web: no ack within 300 ms$/);
    assert.ok(Date.now() - started < 2000, `refused after ${Date.now() - started} ms`);
  } finally {
    publisher.close();
    await nc.close();
    await server.cleanup();
  }
});

test('a publish ack is read as its sequence, a refusal as its reason, and one out of bounds is refused with the limit', () => {
  const ack = (text: string) => ({ data: new TextEncoder().encode(text), headers: undefined });
  assert.equal(parsePublishAck(ack('{"stream":"KV_x","seq":42}')), { ok: true, value: 42 });
  assert.equal(parsePublishAck(ack('{"error":{"code":503,"description":"stream is full"}}')), { ok: false, reason: 'refused: stream is full (503)' });
  assert.equal(parsePublishAck(ack('{"stream":"KV_x"}')), { ok: false, reason: 'the ack names no sequence' });
  assert.equal(parsePublishAck(ack('nope')), { ok: false, reason: 'the ack is not JSON' });
  assert.equal(parsePublishAck(ack('{"seq":' + '['.repeat(100) + ']'.repeat(100) + '}')), { ok: false, reason: 'the ack is nested deeper than 64 levels' });
  assert.equal(parsePublishAck(ack(`{"seq":1,"stream":"${'x'.repeat(70_000)}"}`)), {
    ok: false,
    reason: 'the ack is 70021 bytes, past the limit of 65536 bytes',
  });
  assert.equal(parsePublishAck(ack('null')), { ok: false, reason: 'the ack names no sequence' });
});

test.run();
