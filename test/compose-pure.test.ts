// The seat's pure core (DESIGN §4) without a bus: composePlan as a table, and the Composer's passes
// over a sink in memory, so a failure names the function rather than a whole mesh.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { composePlan } from '../src/server/seat/compose.ts';
import { Composer, HELD_PASSES_BEFORE_HEALTH, type ComposerSink, type InputName, type PassSummary } from '../src/server/seat/composer.ts';
import { memoryLogger } from '../src/shared/cli/log.ts';
import { AssignmentSchema, type Assignment } from '../src/shared/contract/assignment.ts';
import { CompositionSchema, type Composition } from '../src/shared/contract/composition.ts';
import { validate } from '../src/shared/contract/decode.ts';
import type { Health } from '../src/shared/contract/verb.ts';
import type { Plan } from '../src/shared/contract/plan.ts';

const ARCHIVE = { ref: 'obj://mesh-catalog_archives/web-1.tar', digest: 'sha256:' + 'a'.repeat(64) };

/** A composition of web, validated as the seat validates it (defaults filled), with `provisioning` as given. */
function webComposition(provisioning: Record<string, unknown>, extra: Record<string, unknown> = {}): Composition {
  const parsed = validate(CompositionSchema, { module: 'web', build: '1', published: true, archive: ARCHIVE, provisioning, ...extra });
  if (!parsed.ok) throw new Error(`test composition does not validate: ${parsed.reason}`);
  return parsed.value;
}

/** An assignment of web to n1, validated, with `placement` as given. */
function webAssignment(placement: Record<string, unknown> = { dir: { config: '/etc/web', data: '/var/web' }, port: { http: 8080 } }): Assignment {
  const parsed = validate(AssignmentSchema, { node: 'n1', module: 'web', placement });
  if (!parsed.ok) throw new Error(`test assignment does not validate: ${parsed.reason}`);
  return parsed.value;
}

const file = (path: string, template = 'web.conf') => ({ path, template });
const pg = (extra: Record<string, unknown> = {}) => ({ provider: 'postgres', provision: 'database', ...extra });

type PlanRow = [what: string, assignment: Assignment, composition: Composition, pick: (plan: Plan) => unknown, want: unknown];
type ReasonRow = [what: string, assignment: Assignment, composition: Composition, reason: string];

const PLANS: PlanRow[] = [
  [
    'a file path takes its dir from the placement',
    webAssignment(),
    webComposition({ files: [file('${dir:config}/web.conf')] }),
    (p) => p.files.map((f) => f.path),
    ['/etc/web/web.conf'],
  ],
  [
    'a file path takes several placement kinds',
    webAssignment(),
    webComposition({ files: [file('${dir:data}/run/${port:http}.sock')] }),
    (p) => p.files.map((f) => f.path),
    ['/var/web/run/8080.sock'],
  ],
  [
    'a file keeps its other fields, defaults filled',
    webAssignment(),
    webComposition({ files: [{ ...file('${dir:config}/web.conf'), change: 'restart' }] }),
    (p) => p.files[0],
    { path: '/etc/web/web.conf', template: 'web.conf', mode: 'owned', change: 'restart' },
  ],
  [
    'a secret path takes its dir from the placement',
    webAssignment(),
    webComposition({ secrets: [{ name: 'tls-key', path: '${dir:config}/tls.key' }] }),
    (p) => p.secrets,
    [{ name: 'tls-key', vault: 'module/web/tls-key', path: '/etc/web/tls.key' }],
  ],
  [
    'a module’s own secret is vaulted under module/<module>/<name>',
    webAssignment(),
    webComposition({ secrets: [{ name: 'api-key' }] }),
    (p) => p.secrets,
    [{ name: 'api-key', vault: 'module/web/api-key' }],
  ],
  [
    'a provision’s credential is vaulted under the consumer’s node and module',
    webAssignment(),
    webComposition({ provisions: [pg({ node: 'db1', name: 'db-password' })] }),
    (p) => p.secrets,
    [{ name: 'db-password', vault: 'pair/postgres/database/n1/web' }],
  ],
  [
    'a provision’s credential with local ends in its local',
    webAssignment(),
    webComposition({ provisions: [pg({ local: 'main', name: 'db-password' })] }),
    (p) => p.secrets,
    [{ name: 'db-password', vault: 'pair/postgres/database/n1/web/main' }],
  ],
  ['a provision without a name gives no secret', webAssignment(), webComposition({ provisions: [pg()] }), (p) => p.secrets, []],
  [
    'own secrets come before credentials',
    webAssignment(),
    webComposition({ secrets: [{ name: 'api-key' }], provisions: [pg({ name: 'db' })] }),
    (p) => p.secrets.map((s) => s.name),
    ['api-key', 'db'],
  ],
  [
    'a provision without a node is the assignment’s node',
    webAssignment(),
    webComposition({ provisions: [pg()] }),
    (p) => p.provisions.map((x) => x.node),
    ['n1'],
  ],
  ['a provision with a node keeps it', webAssignment(), webComposition({ provisions: [pg({ node: 'db1' })] }), (p) => p.provisions.map((x) => x.node), ['db1']],
  [
    'the plan carries the node, module, build, archive and placement',
    webAssignment(),
    webComposition({}),
    (p) => [p.node, p.module, p.build, p.archive, p.placement],
    ['n1', 'web', '1', ARCHIVE, { dir: { config: '/etc/web', data: '/var/web' }, port: { http: 8080 } }],
  ],
];

const REASONS: ReasonRow[] = [
  [
    'a file path naming a dir the placement lacks',
    webAssignment(),
    webComposition({ files: [file('${dir:nope}/web.conf')] }),
    'file web.conf: path "${dir:nope}/web.conf": ${dir:nope} is not in the assignment\'s placement',
  ],
  [
    'a file path naming a kind that is not placement',
    webAssignment(),
    webComposition({ files: [file('${config:x}/web.conf')] }),
    'file web.conf: path "${config:x}/web.conf": ${config:x} is not a placement kind',
  ],
  [
    'a file path with .. after placement',
    webAssignment(),
    webComposition({ files: [file('${dir:config}/../shadow')] }),
    'file web.conf: path "${dir:config}/../shadow": resolves to "/etc/web/../shadow", which holds a . or .. segment',
  ],
  [
    'a placement value that brings the ..',
    webAssignment({ dir: { config: '/etc/../root' } }),
    webComposition({ files: [file('${dir:config}/web.conf')] }),
    'file web.conf: path "${dir:config}/web.conf": resolves to "/etc/../root/web.conf", which holds a . or .. segment',
  ],
  [
    'a relative placement',
    webAssignment({ dir: { config: 'etc/web' } }),
    webComposition({ files: [file('${dir:config}/web.conf')] }),
    'file web.conf: path "${dir:config}/web.conf": resolves to "etc/web/web.conf", which is not absolute',
  ],
  [
    'a secret path naming a dir the placement lacks',
    webAssignment(),
    webComposition({ secrets: [{ name: 'tls-key', path: '${dir:tls}/key' }] }),
    'secret tls-key: path "${dir:tls}/key": ${dir:tls} is not in the assignment\'s placement',
  ],
  [
    'a placement key inherited from Object is not in the placement',
    webAssignment(),
    webComposition({ files: [file('${dir:toString}/web.conf')] }),
    'file web.conf: path "${dir:toString}/web.conf": ${dir:toString} is not in the assignment\'s placement',
  ],
  ['a secret named twice by the module', webAssignment(), webComposition({ secrets: [{ name: 'db' }, { name: 'db' }] }), 'secret "db" is named twice'],
  [
    'a secret named by the module and by a provision',
    webAssignment(),
    webComposition({ secrets: [{ name: 'db' }], provisions: [pg({ name: 'db' })] }),
    'secret "db" is named twice',
  ],
  [
    'a composition without an archive',
    webAssignment(),
    webComposition({ files: [file('${dir:config}/web.conf')] }, { archive: undefined }),
    'composition of web build 1 has no archive',
  ],
];

for (const [what, assignment, composition, pick, want] of PLANS) {
  test(`composePlan: ${what}`, () => {
    const plan = composePlan(assignment, composition);
    assert.ok(plan.ok, plan.ok ? '' : plan.reason);
    if (plan.ok) assert.equal(pick(plan.value), want);
  });
}

for (const [what, assignment, composition, reason] of REASONS) {
  test(`composePlan refuses ${what}`, () => {
    assert.equal(composePlan(assignment, composition), { ok: false, reason });
  });
}

/** A sink in memory: every put, delete and health line in order. */
class MemorySink implements ComposerSink {
  readonly puts: [string, Plan][] = [];
  readonly deletes: string[] = [];
  readonly lines: Health[] = [];

  async putPlan(key: string, value: Uint8Array): Promise<void> {
    this.puts.push([key, JSON.parse(new TextDecoder().decode(value)) as Plan]);
  }

  async deletePlan(key: string): Promise<void> {
    this.deletes.push(key);
  }

  health(line: Health): void {
    this.lines.push(line);
  }
}

/** A composer over a MemorySink, its pass summaries, and a feed of JSON values. */
function inMemory() {
  const sink = new MemorySink();
  const passes: PassSummary[] = [];
  const log = memoryLogger();
  const composer = new Composer(sink, log, (s) => passes.push(s));
  const feed = (input: InputName, key: string, value: unknown) =>
    composer.update(input, key, value === null ? null : new TextEncoder().encode(typeof value === 'string' ? value : JSON.stringify(value)));
  const loadAll = () => (['assignments', 'modules', 'plans'] as const).forEach((i) => composer.loaded(i));
  return { sink, passes, log, composer, feed, loadAll };
}

const composition = (module: string, build = '1', published = true) => ({
  module,
  build,
  published,
  archive: ARCHIVE,
  provisioning: { files: [file('${dir:config}/' + module + '.conf', module + '.conf')] },
});
const assignment = (node: string, module: string, config = `/etc/${module}`) => ({ node, module, placement: { dir: { config } } });

test('Composer: no pass runs until all three inputs are loaded, then one composes everything fed before', async () => {
  const { sink, passes, composer, feed } = inMemory();
  feed('modules', 'web', composition('web'));
  feed('assignments', 'n1.web', assignment('n1', 'web'));
  composer.loaded('assignments');
  composer.loaded('modules');
  await composer.idle();
  assert.equal(passes, []);
  assert.equal(sink.puts, []);
  composer.loaded('plans');
  await composer.idle();
  assert.is(passes.length, 1);
  assert.equal(passes[0]!.written, ['n1.web']);
  assert.equal(
    sink.puts.map(([k, p]) => [k, p.files[0]!.path]),
    [['n1.web', '/etc/web/web.conf']],
  );
});

test('Composer: a plan is written once and not again while what it is made of is unchanged', async () => {
  const { sink, passes, composer, feed, loadAll } = inMemory();
  feed('modules', 'web', composition('web'));
  feed('assignments', 'n1.web', assignment('n1', 'web'));
  loadAll();
  await composer.idle();
  // The bus echoes the write back; then the same assignment is written again.
  feed('plans', 'n1.web', sink.puts[0]![1]);
  feed('assignments', 'n1.web', assignment('n1', 'web'));
  await composer.idle();
  assert.is(passes.length, 2, 'the second write ran a pass');
  assert.equal(passes[1]!.written, []);
  assert.is(sink.puts.length, 1);
  feed('modules', 'web', composition('web', '2'));
  await composer.idle();
  assert.equal(passes[2]!.written, ['n1.web']);
  assert.equal(
    sink.puts.map(([k, p]) => [k, p.build]),
    [
      ['n1.web', '1'],
      ['n1.web', '2'],
    ],
  );
});

test('Composer: a plan whose assignment is gone is retired, and so is a stored plan no assignment names', async () => {
  const { sink, passes, composer, feed, loadAll } = inMemory();
  feed('plans', 'n9.gone', { stray: true });
  feed('plans', 'BAD', { stray: true });
  feed('modules', 'web', composition('web'));
  feed('assignments', 'n1.web', assignment('n1', 'web'));
  loadAll();
  await composer.idle();
  assert.equal(passes[0]!.retired, ['n9.gone'], 'a key out of shape is left alone');
  feed('assignments', 'n1.web', null);
  await composer.idle();
  assert.equal(passes[1]!.retired, ['n1.web']);
  assert.equal(sink.deletes, ['n9.gone', 'n1.web']);
});

test(`Composer: a held module keeps its stored plan and is said on health once held for more than ${HELD_PASSES_BEFORE_HEALTH} passes`, async () => {
  const { sink, passes, composer, feed, loadAll } = inMemory();
  feed('modules', 'web', composition('web'));
  feed('modules', 'db', composition('db'));
  feed('assignments', 'n1.web', assignment('n1', 'web'));
  loadAll();
  await composer.idle();
  // Each change of another module's assignment is one more pass holding web.
  let dir = 0;
  const anotherPass = async () => {
    feed('assignments', 'n1.db', assignment('n1', 'db', `/etc/db${dir++}`));
    await composer.idle();
  };
  feed('modules', 'web', composition('web', '2', false));
  await composer.idle();
  for (let held = 2; held <= HELD_PASSES_BEFORE_HEALTH; held++) await anotherPass();
  assert.equal(sink.lines, [], `not said after ${HELD_PASSES_BEFORE_HEALTH} passes`);
  await anotherPass();
  assert.is(passes.filter((p) => p.held.includes('n1.web')).length, HELD_PASSES_BEFORE_HEALTH + 1);
  assert.equal(
    sink.puts.filter(([k]) => k === 'n1.web').map(([, p]) => p.build),
    ['1'],
    'the stored plan stays',
  );
  assert.not.ok(sink.deletes.includes('n1.web'));
  assert.equal(sink.lines, [{ module: 'web', build: '2', reason: 'held: composition not published', passes: HELD_PASSES_BEFORE_HEALTH + 1 }]);
});

test('Composer: a hold is said once when it begins, again when its build or reason changes, its end logged; an out-of-shape composition is failed, never said held', async () => {
  const { sink, log, composer, feed, loadAll } = inMemory();
  feed('modules', 'db', composition('db'));
  feed('modules', 'web', composition('web', '2', false));
  feed('modules', 'evil', { ...composition('evil'), provisioning: { secrets: [{ name: '../x' }] } });
  for (const module of ['web', 'ghost', 'evil']) feed('assignments', `n1.${module}`, assignment('n1', module));
  loadAll();
  await composer.idle();
  let dir = 0;
  const passes = async (n: number) => {
    for (let i = 0; i < n; i++) {
      feed('assignments', 'n1.db', assignment('n1', 'db', `/etc/db${dir++}`));
      await composer.idle();
    }
  };
  await passes(8);
  const held = () => sink.lines.filter((l) => l.reason.startsWith('held'));
  assert.equal(
    held().map((l) => [l.module, l.build, l.reason, l.passes]),
    [
      ['ghost', '', 'held: composition missing', 3],
      ['web', '2', 'held: composition not published', 3],
    ],
  );
  assert.is(log.lines.filter((l) => / held for /.test(l)).length, 2, log.lines.join('\n'));
  assert.ok(
    sink.lines.some((l) => l.module === 'evil' && /^mesh-catalog_modules evil: .*; its plans cannot be composed \(stored plans are kept\)$/.test(l.reason)),
    JSON.stringify(sink.lines),
  );
  assert.not.ok(
    sink.lines.some((l) => l.module === 'evil' && /held/.test(l.reason)),
    'out of shape is failed, as the verb says',
  );
  assert.equal(composer.healthBook.entry('n1.evil')?.state, 'failed');

  feed('modules', 'web', composition('web', '3', false));
  await passes(3);
  assert.equal(
    held().map((l) => [l.module, l.build]),
    [
      ['ghost', ''],
      ['web', '2'],
      ['web', '3'],
    ],
    'a new build is said again, once',
  );
  feed('modules', 'ghost', composition('ghost'));
  await passes(2);
  assert.equal(
    log.lines.filter((l) => /ghost/.test(l)).map((l) => l.replace(/^\S+ /, '')),
    ['warning module ghost held for 3 passes: composition missing (build unknown)', 'notice module ghost no longer held, after 12 passes'],
  );
});

test('Composer: a bad assignment is said once per distinct value, and again when it changes', async () => {
  const { sink, composer, feed, loadAll } = inMemory();
  feed('modules', 'web', composition('web'));
  feed('assignments', 'n1.web', assignment('n1', 'web'));
  feed('assignments', 'n1.bad', 'not json');
  loadAll();
  await composer.idle();
  const said = () => sink.lines.filter((l) => l.module === 'bad').map((l) => l.reason);
  assert.is(said().length, 1);
  assert.match(said()[0]!, /^mesh-controller_assignments n1\.bad: .*not JSON/);
  feed('assignments', 'n1.web', assignment('n1', 'web', '/srv/web'));
  await composer.idle();
  assert.is(said().length, 1, 'the same value is not said again');
  feed('assignments', 'n1.bad', { node: 'n1', placement: {} });
  await composer.idle();
  assert.is(said().length, 2);
  assert.match(said()[1]!, /^mesh-controller_assignments n1\.bad: field "module"/);
  feed('assignments', 'n1.bad', { node: 'n1', placement: {} });
  await composer.idle();
  assert.is(said().length, 2, 'the same value written again is not said again');
  assert.ok(
    sink.puts.some(([k, p]) => k === 'n1.web' && p.files[0]!.path === '/srv/web/web.conf'),
    'the good key composed throughout',
  );
});

test.run();
