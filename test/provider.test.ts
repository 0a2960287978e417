// The provider helper (src/sdk/): logins derived from who the consumer is, the consumers file read
// without quoting it, and runProvider against a real nats-server, a fake adapter recording every
// call, and a consumers file replaced by rename as the engine does.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdirSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import { openKv } from '../src/shared/bus/bus.ts';
import { boundKey } from '../src/shared/contract/keys.ts';
import { CREDENTIAL_SET } from '../src/shared/contract/bound-entry.ts';
import { readConsumersFile } from '../src/sdk/consumers-file.ts';
import { WITHHELD_REFUSAL, WITHHELD_SERVED } from '../src/sdk/consumer-sync.ts';
import { deriveLogin, MAX_LOGIN_BYTES } from '../src/sdk/logins.ts';
import { isUnavailable, Outage } from '../src/sdk/outage.ts';
import { runProvider, type Adapter, type ConsumerEntry } from '../src/sdk/provider-index.ts';
import { requestDigest } from '../src/shared/contract/bound-request.ts';
import { asking, consumer, fakeAdapter, startProviderBus, stopProviderBus, world } from './helpers/provider-world.ts';
import fc from 'fast-check';
import { SEED } from './helpers/random.ts';
import { waitFor } from './helpers/wait.ts';
import { tempDir } from './helpers/temp.ts';

const LOGIN = /^[a-z][a-z0-9_]*$/;

test('a login is <module>_<node>[_<local>] when that form is exact', () => {
  assert.is(deriveLogin({ node: 'n1', module: 'web', local: null }), 'web_n1');
  assert.is(deriveLogin({ node: 'n1', module: 'web', local: 'main' }), 'web_n1_main');
});

test('a lossy, long, reserved or digit-first form gets a hash of the exact identity and stays an identifier', () => {
  const cases = [
    { node: 'n-1', module: 'web', local: null },
    { node: 'n', module: 'web', local: 'Main' },
    { node: 'n1', module: '9web', local: null },
    { node: 'user', module: 'current', local: null },
    { node: 'x', module: 'pg', local: null },
    { node: 'n'.repeat(63), module: 'm'.repeat(63), local: 'l:ä.日本' },
  ];
  for (const id of cases) {
    const login = deriveLogin(id);
    assert.ok(LOGIN.test(login) && login.length <= MAX_LOGIN_BYTES, `${JSON.stringify(id)} → ${login}`);
    assert.match(login, /__[0-9a-f]{12}$/, JSON.stringify(id));
    assert.not.ok(login.startsWith('pg_') || login === 'current_user', login);
  }
  // `-` and `_` both map to `_`, and a local could pose as a node: the readable forms meet, the logins do not.
  assert.is.not(deriveLogin({ node: 'b-c', module: 'a', local: null }), deriveLogin({ node: 'b', module: 'a', local: 'c' }));
});

test('logins are identifiers, at most 63 bytes, and distinct for distinct identities (fast-check)', () => {
  const names = ['a', 'b', 'a-b', 'ab', '1', 'a1', 'pg', 'current', 'user', 'x'.repeat(40), 'n'.repeat(63)];
  const locals = [null, 'a', 'b', 'A', 'a-b', 'a_b', 'a.b', 'a:b', 'é', '', 'l'.repeat(200)];
  const identities = names.flatMap((node) => names.flatMap((module) => locals.map((local) => ({ node, module, local }))));
  // Any set of the identities those make, so a collision shrinks to the two identities that meet.
  fc.assert(
    fc.property(fc.subarray(identities, { minLength: 1 }), (ids) => {
      const seen = new Map<string, string>();
      for (const id of ids) {
        const identity = JSON.stringify(id);
        const login = deriveLogin(id);
        assert.ok(LOGIN.test(login) && Buffer.byteLength(login) <= MAX_LOGIN_BYTES, `${identity} → ${login}`);
        assert.is(deriveLogin({ ...id }), login, 'the same identity gives the same login');
        const other = seen.get(login);
        assert.ok(other === undefined, `${identity} and ${other} both → ${login}`);
        seen.set(login, identity);
      }
    }),
    { numRuns: Number(process.env['MESH_FUZZ_RUNS'] ?? 30), seed: SEED },
  );
});

test('an outage of the service is said once at warning, each try after it at debug, its end once at notice with how long; the next one is said again', () => {
  const said: string[] = [];
  let now = 1000;
  const outage = new Outage(
    (level, line) => said.push(`${level} ${line}`),
    () => now,
  );
  outage.answered();
  outage.failed('n1/web', 'serving', 'cannot connect to PostgreSQL at 127.0.0.1:5432: refused', 1, 1000);
  now += 1000;
  outage.failed('n1/api', 'withdrawing', 'cannot connect to PostgreSQL at 127.0.0.1:5432: refused', 1, 1000);
  outage.failed('n1/web', 'serving', 'cannot connect to PostgreSQL at 127.0.0.1:5432: refused', 2, 2000);
  now += 2500;
  outage.answered();
  outage.answered();
  outage.failed('n1/web', 'serving', 'cannot connect to PostgreSQL at 127.0.0.1:5432: timed out', 1, 1000);
  assert.equal(said, [
    'warn n1/web: serving waits for the service: cannot connect to PostgreSQL at 127.0.0.1:5432: refused; trying again until it answers (each try said at debug)',
    'debug n1/api: withdrawing failed (try 1): cannot connect to PostgreSQL at 127.0.0.1:5432: refused; trying again in 1000 ms',
    'debug n1/web: serving failed (try 2): cannot connect to PostgreSQL at 127.0.0.1:5432: refused; trying again in 2000 ms',
    'notice the service answers again, after 3.5 s: serving',
    'warn n1/web: serving waits for the service: cannot connect to PostgreSQL at 127.0.0.1:5432: timed out; trying again until it answers (each try said at debug)',
  ]);
  assert.ok(isUnavailable(Object.assign(new Error('x'), { name: 'Unavailable' })), 'told by its name, whichever copy of the class threw it');
  assert.not.ok(isUnavailable(new Error('x')));
});

test('the consumers file: absent, good, and malformed with a reason that never quotes its text', async () => {
  const dir = tempDir('consumers-');
  const path = join(dir, 'consumers.json');
  try {
    assert.equal(await readConsumersFile(path), { state: 'absent' });
    const secret = 'Hunter2.very.secret';
    const good = [{ consumer: 'n1', module: 'web', local: null, credential: secret, value: { name: 'web' } }];
    writeFileSync(path, JSON.stringify(good));
    const read = await readConsumersFile(path);
    assert.is(read.state, 'read');
    assert.equal(read.state === 'read' && read.entries, good);
    const bad = [
      `[{"consumer":"n1","credential":"${secret}" oops}]`,
      JSON.stringify([{ ...good[0], credential: 12345678 }]),
      JSON.stringify([secret]),
      JSON.stringify([{ ...good[0], consumer: secret }]),
      JSON.stringify([good[0], good[0]]),
      JSON.stringify({ consumers: good }),
      JSON.stringify([{ ...good[0], local: `../../${secret}` }]),
    ];
    for (const text of bad) {
      writeFileSync(path, text);
      const result = await readConsumersFile(path);
      assert.is(result.state, 'malformed', text);
      const reason = result.state === 'malformed' ? result.reason : '';
      assert.not.ok(reason.includes(secret) || reason.includes('12345678'), `the reason quotes the file: ${reason}`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a provision or a consumer’s local out of the grammar of DESIGN §2 is refused before anything is served', async () => {
  const refused = () =>
    runProvider({ nc: undefined as never, provider: 'postgres', provision: 'pg:db.main', consumersFile: '/nonexistent', adapter: {} as never });
  assert.throws(
    refused,
    (err: Error) =>
      err instanceof TypeError && /^runProvider: provision is "pg:db\.main", not a name of 1 to 128.*: give the provision as the module/.test(err.message),
  );
  const dir = tempDir('consumers-');
  try {
    const path = join(dir, 'consumers.json');
    writeFileSync(path, JSON.stringify([{ consumer: 'n1', module: 'web', local: '../../module/victim/api-key', credential: 'c', value: {} }]));
    const read = await readConsumersFile(path);
    assert.equal(read.state === 'malformed' && read.reason, 'field "0.local" is not a local name (A-Z a-z 0-9 _ -, at most 128)');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

let nc: NatsConnection;

test.before(async () => {
  nc = await startProviderBus();
});

test.after(stopProviderBus);

test('a new consumer is created with its credential and values, and {as, user, values} is published under its key (a provision of the grammar is its own token)', async () => {
  const w = await world('pg_db-main');
  const fake = fakeAdapter();
  try {
    w.write([consumer('n1', 'web', null, 'cred-web-1'), consumer('n2', 'api', 'ro', 'cred-api-1', 'api')]);
    w.start(fake.adapter);
    const key = boundKey('n1', 'web', 'pg_db-main');
    assert.is(key, 'n1.web.pg_db-main');
    assert.equal(await waitFor('web bound', () => w.served(key)), { as: 'web_n1', user: 'web_n1', values: { host: 'db1', port: 5432, database: 'web' } });
    assert.equal(await waitFor('api bound', () => w.served('n2.api.pg_db-main.ro')), {
      as: 'api_n2_ro',
      user: 'api_n2_ro',
      values: { host: 'db1', port: 5432, database: 'api' },
    });
    const create = fake.calls.find((c) => c.op === 'create' && c.as === 'web_n1');
    assert.equal([create?.credential, create?.values], ['cred-web-1', { name: 'web' }]);
    const status = await (await openKv(nc, w.bucket)).status();
    assert.is(status.history, 1, 'the helper creates its bucket with history 1');
  } finally {
    await w.done();
  }
});

test('a rotated credential reaches the adapter, and no other consumer is created again', async () => {
  const w = await world();
  const fake = fakeAdapter();
  try {
    w.write([consumer('n1', 'web', null, 'cred-web-1'), consumer('n1', 'api', null, 'cred-api-1')]);
    const h = w.start(fake.adapter);
    await waitFor('both served', async () => (await w.bound('n1.web.database')) && (await w.bound('n1.api.database')));
    await h.reconciled();
    const before = (await (await openKv(nc, w.bucket)).get('n1.api.database'))?.revision;
    w.write([consumer('n1', 'web', null, 'cred-web-2'), consumer('n1', 'api', null, 'cred-api-1')]);
    await waitFor('a second create of web', () => fake.count('create', 'web_n1') === 2);
    await h.reconciled();
    assert.is(fake.calls.filter((c) => c.op === 'create' && c.as === 'web_n1').at(-1)?.credential, 'cred-web-2');
    assert.is(fake.count('create', 'api_n1'), 1, 'api was created again');
    assert.is(fake.calls.filter((c) => c.op === 'remove').length, 0);
    assert.is((await (await openKv(nc, w.bucket)).get('n1.api.database'))?.revision, before, 'api was published again');
  } finally {
    await w.done();
  }
});

test('each create is marked in the bound entry (values["credential-set"], random, new each time), published only once the adapter has set the credential', async () => {
  const w = await world();
  const fake = fakeAdapter();
  const marker = async (key: string) => ((await w.bound(key)) as { values?: Record<string, unknown> } | null)?.values?.[CREDENTIAL_SET];
  try {
    w.write([consumer('n1', 'web', null, 'cred-web-1'), consumer('n1', 'api', null, 'cred-api-1')]);
    const h = w.start(fake.adapter);
    await waitFor('both served', async () => (await w.served('n1.web.database')) && (await w.served('n1.api.database')));
    const [web, api] = [await marker('n1.web.database'), await marker('n1.api.database')];
    assert.type(web, 'string');
    assert.is.not(web, api);
    let open = () => {};
    fake.gates.set('web_n1', new Promise<void>((resolve) => (open = resolve)));
    w.write([consumer('n1', 'web', null, 'cred-web-2'), consumer('n1', 'api', null, 'cred-api-2')]);
    // api's rotation, published after web's create began, is the later change: web's create has not returned.
    await waitFor('api marked anew', async () => fake.count('create', 'web_n1') === 2 && (await marker('n1.api.database')) !== api);
    assert.is(await marker('n1.web.database'), web, 'web was marked before its adapter set the credential');
    open();
    await waitFor('web marked anew', async () => (await marker('n1.web.database')) !== web);
    await h.reconciled();
    assert.not.ok(String(await marker('n1.web.database')).includes('cred-web'), 'the marker is not derived from the credential');
  } finally {
    await w.done();
  }
});

test('a consumer gone from the file is removed by its login and its bound key deleted; an explicit [] withdraws every one', async () => {
  const w = await world();
  const fake = fakeAdapter();
  try {
    w.write([consumer('n1', 'web', null, 'cred-web-1'), consumer('n1', 'api', 'x', 'cred-api-1')]);
    w.start(fake.adapter);
    await waitFor('both served', async () => (await w.bound('n1.web.database')) && (await w.bound('n1.api.database.x')));
    w.write([consumer('n1', 'api', 'x', 'cred-api-1')]);
    await waitFor('web removed', () => fake.count('remove', 'web_n1') === 1);
    await waitFor('web key deleted', async () => (await w.bound('n1.web.database')) === null);
    assert.ok(await w.bound('n1.api.database.x'), 'api stays bound');
    assert.is(fake.count('remove', 'api_n1_x'), 0);
    w.write([]);
    await waitFor('api removed', () => fake.count('remove', 'api_n1_x') === 1);
    await waitFor('api key deleted', async () => (await w.bound('n1.api.database.x')) === null);
  } finally {
    await w.done();
  }
});

test('an absent consumers file withdraws nothing, removed while running or a wrong path at start; said at warning once, the file back serves as before, [] withdraws', async () => {
  const w = await world();
  const fake = fakeAdapter();
  const removes = () => fake.calls.filter((c) => c.op === 'remove');
  const absentSaid = () => w.log.lines.filter((l) => l.includes(`consumers file ${w.file} is absent`));
  try {
    const file = [consumer('n1', 'web', null, 'cred-web-1'), consumer('n1', 'api', 'x', 'cred-api-1')];
    w.write(file);
    const h = w.start(fake.adapter, { recheckMs: 100 });
    await waitFor('both served', async () => (await w.bound('n1.web.database')) && (await w.bound('n1.api.database.x')));
    await h.reconciled();
    unlinkSync(w.file);
    await waitFor('the absence said', () => absentSaid().length === 1);
    // Re-check ticks read the absent file again: still nothing withdrawn, and it is said once.
    await new Promise((resolve) => setTimeout(resolve, 350));
    await h.reconciled();
    assert.equal(removes(), [], 'an absent file withdrew a consumer');
    assert.ok(await w.bound('n1.web.database'), 'the web entry was deleted');
    assert.ok(await w.bound('n1.api.database.x'), 'the api entry was deleted');
    assert.is(absentSaid().length, 1, absentSaid().join('\n'));
    assert.match(
      absentSaid()[0]!,
      / warning consumers file .* is absent: nothing is withdrawn while it is absent \(keeping the last good list, 2 consumers\)$/,
    );
    // The file back: served as before, said at notice, nothing created again.
    const creates = fake.calls.filter((c) => c.op === 'create').length;
    w.write(file);
    await waitFor('its return said', () => w.log.lines.some((l) => / notice consumers file .* is there now/.test(l)));
    await h.reconciled();
    assert.is(fake.calls.filter((c) => c.op === 'create').length, creates, 'the file back created a consumer again');
    assert.equal(removes(), []);
    await h.stop();

    // A helper started on a path that does not exist while bound entries do: nothing withdrawn, the path questioned.
    const wrong = join(w.file, '..', 'consumer.json');
    const blind = fakeAdapter();
    const hb = runProvider({ nc, provider: w.provider, provision: w.provision, consumersFile: wrong, adapter: blind.adapter, log: w.log });
    try {
      await waitFor('the wrong path said', () =>
        w.log.lines.some((l) =>
          l.includes(`warning consumers file ${wrong} is absent: nothing is served or withdrawn until it is there (is --consumers right?)`),
        ),
      );
      await hb.reconciled();
      assert.equal(blind.calls, [], 'a helper without its file touched a consumer');
      assert.ok(await w.bound('n1.web.database'), 'the web entry was deleted at start');
      assert.ok(await w.bound('n1.api.database.x'), 'the api entry was deleted at start');
    } finally {
      await hb.stop();
    }

    // An explicit [] is a file that is there and names nobody: every consumer is withdrawn.
    const last = fakeAdapter();
    w.start(last.adapter);
    await waitFor('both re-checked', () => last.count('check', 'web_n1') === 1 && last.count('check', 'api_n1_x') === 1);
    w.write([]);
    await waitFor('both removed', () => last.count('remove', 'web_n1') === 1 && last.count('remove', 'api_n1_x') === 1);
    await waitFor('both keys deleted', async () => (await w.bound('n1.web.database')) === null && (await w.bound('n1.api.database.x')) === null);
  } finally {
    await w.done();
  }
});

test('a refused consumer is published {refused} while another consumer of the same file is served', async () => {
  const w = await world();
  const fake = fakeAdapter();
  fake.refuse.set('bad_n1', 'database name "bad" is taken');
  try {
    w.write([consumer('n1', 'bad', null, 'cred-bad-1'), consumer('n1', 'web', null, 'cred-web-1')]);
    const h = w.start(fake.adapter);
    assert.equal(await waitFor('bad refused', () => w.bound('n1.bad.database')), { refused: 'database name "bad" is taken' });
    assert.equal(await waitFor('web served', () => w.served('n1.web.database')), {
      as: 'web_n1',
      user: 'web_n1',
      values: { host: 'db1', port: 5432, database: 'web' },
    });
    w.write([consumer('n1', 'bad', null, 'cred-bad-1'), consumer('n1', 'web', null, 'cred-web-1'), consumer('n1', 'api', null, 'cred-api-1')]);
    await waitFor('api served', () => w.bound('n1.api.database'));
    await h.reconciled();
    assert.is(fake.count('create', 'bad_n1'), 1, 'a refusal is not retried until the consumer changes');
    assert.is(fake.count('create', 'web_n1'), 1);
    fake.refuse.delete('bad_n1');
    w.write([consumer('n1', 'bad', null, 'cred-bad-2'), consumer('n1', 'web', null, 'cred-web-1'), consumer('n1', 'api', null, 'cred-api-1')]);
    assert.equal(await waitFor('bad served once it changed', async () => 'as' in ((await w.bound('n1.bad.database')) as object)), true);
  } finally {
    await w.done();
  }
});

test('every served and refused entry names the request it answers (for); a new request is answered anew, its values the same; a file without the request writes none', async () => {
  const w = await world();
  const fake = fakeAdapter();
  fake.refuse.set('bad_n1_main', 'no database for you');
  const forOf = async (key: string) => ((await w.bound(key)) as { for?: string } | null)?.for;
  try {
    const web = asking(consumer('n1', 'web', null, 'cred-web-1'), w.provider, w.provision, { name: 'db-password' });
    const bad = asking(consumer('n1', 'bad', 'main', 'cred-bad-1'), w.provider, w.provision);
    w.write([web, bad, consumer('n1', 'old', null, 'cred-old-1')]);
    const h = w.start(fake.adapter);
    assert.is(await waitFor('web answered', () => forOf('n1.web.database')), requestDigest(web.provision!));
    assert.is(await waitFor('bad answered', () => forOf('n1.bad.database.main')), requestDigest(bad.provision!));
    assert.equal(await w.bound('n1.bad.database.main'), { refused: 'no database for you', for: requestDigest(bad.provision!) });
    await waitFor('old served', () => w.served('n1.old.database'));
    assert.is(await forOf('n1.old.database'), undefined, 'an entry whose request the file does not give names none');
    await h.reconciled();

    // The consumer's new build asks under another secret name: same credential, same values, a new request.
    const renamed = asking(consumer('n1', 'web', null, 'cred-web-1'), w.provider, w.provision, { name: 'db-secret' });
    w.write([renamed, bad, consumer('n1', 'old', null, 'cred-old-1')]);
    assert.is(await waitFor('web answered anew', async () => ((await forOf('n1.web.database')) === requestDigest(renamed.provision!) ? true : null)), true);
    assert.is(fake.count('create', 'web_n1'), 2);
    assert.is(fake.count('create', 'bad_n1_main'), 1, 'a request unchanged is not answered again');
    await h.stop();

    // Down while the build changed again: the entry found at start answers the request before; it is
    // checked against the new one and, holding, published again naming it (its marker kept), not made again.
    const marker = ((await w.bound('n1.web.database')) as { values: Record<string, unknown> }).values[CREDENTIAL_SET];
    const third = asking(consumer('n1', 'web', null, 'cred-web-1'), w.provider, w.provision, { name: 'db-third' });
    const old = asking(consumer('n1', 'old', null, 'cred-old-1'), w.provider, w.provision);
    w.write([third, bad, old]);
    const again = fakeAdapter();
    again.refuse.set('bad_n1_main', 'no database for you');
    const h2 = w.start(again.adapter);
    const answered = (key: string, entry: ConsumerEntry) => async () => ((await forOf(key)) === requestDigest(entry.provision!) ? true : null);
    assert.is(await waitFor('web answered after a restart', answered('n1.web.database', third)), true);
    assert.is(await waitFor('old answered after a restart', answered('n1.old.database', old)), true);
    await h2.reconciled();
    assert.equal([again.count('check', 'web_n1'), again.count('create', 'web_n1')], [1, 0]);
    assert.equal(
      [again.count('check', 'old_n1'), again.count('create', 'old_n1')],
      [1, 0],
      'an entry naming no request (an earlier release’s) is checked, then named',
    );
    assert.is(((await w.bound('n1.web.database')) as { values: Record<string, unknown> }).values[CREDENTIAL_SET], marker, 'the credential was set again');
    // A refused entry has nothing served to check: the request is asked of the adapter again.
    assert.is(again.count('create', 'bad_n1_main'), 1);
  } finally {
    await w.done();
  }
});

test('a consumers file whose provision asks other values or another local than its entry is malformed: nothing answers a request it was not asked', async () => {
  const w = await world();
  const fake = fakeAdapter();
  try {
    const web = asking(consumer('n1', 'web', null, 'cred-web-1'), w.provider, w.provision);
    w.write([{ ...web, provision: { ...web.provision!, values: { name: 'other' } } }]);
    w.start(fake.adapter);
    await waitFor('said', () => w.log.lines.find((l) => l.includes('gives n1/web a provision whose local or values are not the entry')));
    w.write([{ ...web, provision: { ...web.provision!, local: 'main' } }]);
    await waitFor('said again', () => w.log.lines.filter((l) => l.includes('gives n1/web a provision whose local or values are not the entry')).length === 2);
    assert.equal(fake.calls, []);
    w.write([web]);
    assert.is(
      await waitFor('served once right', () => w.bound('n1.web.database').then((e) => (e as { for?: string } | null)?.for)),
      requestDigest(web.provision!),
    );
  } finally {
    await w.done();
  }
});

test('a transient failure is retried for that consumer alone with a growing backoff, then served', async () => {
  const w = await world();
  const fake = fakeAdapter();
  fake.failures.set('web_n1', 2);
  try {
    w.write([consumer('n1', 'web', null, 'cred-web-1'), consumer('n1', 'api', null, 'cred-api-1')]);
    w.start(fake.adapter, { retry: { firstMs: 300, maxMs: 600 } });
    assert.ok(await waitFor('api served despite web failing', () => w.bound('n1.api.database')));
    // A change of the file while web waits for its retry neither hurries web nor waits on it.
    w.write([consumer('n1', 'web', null, 'cred-web-1'), consumer('n1', 'api', null, 'cred-api-1'), consumer('n1', 'new', null, 'cred-new-1')]);
    assert.ok(await waitFor('new served while web waits', () => w.bound('n1.new.database')));
    assert.ok(await waitFor('web served after two failures', () => w.bound('n1.web.database')));
    const tries = fake.calls.filter((c) => c.op === 'create' && c.as === 'web_n1').map((c) => c.at);
    assert.is(tries.length, 3);
    assert.ok(tries[1]! - tries[0]! >= 290, `first wait ${tries[1]! - tries[0]!} ms`);
    assert.ok(tries[2]! - tries[1]! >= 590, `second wait ${tries[2]! - tries[1]!} ms: the backoff doubles`);
    assert.is(fake.count('create', 'api_n1'), 1, 'api was created again');
    assert.is(fake.count('check', 'api_n1'), 1, "web's retries re-checked api (only the change of the file should)");
    assert.ok(
      w.log.lines.some((l) => l.includes('n1/web') && l.includes('serving failed') && l.includes('its message is withheld')),
      'the failure is said, its message withheld',
    );
  } finally {
    await w.done();
  }
});

test('check() returning false (drift) creates again on the re-check timer, and a true check creates nothing', async () => {
  const w = await world();
  const fake = fakeAdapter();
  try {
    w.write([consumer('n1', 'web', null, 'cred-web-1'), consumer('n1', 'api', null, 'cred-api-1')]);
    w.start(fake.adapter, { recheckMs: 100 });
    await waitFor('web served', () => w.bound('n1.web.database'));
    await waitFor('two re-checks of web', () => fake.count('check', 'web_n1') >= 2);
    assert.is(fake.count('create', 'web_n1'), 1, 'a check that holds creates nothing');
    fake.drifted.add('web_n1');
    await waitFor('web created again', () => fake.count('create', 'web_n1') === 2);
    assert.is(fake.calls.filter((c) => c.as === 'web_n1' && c.op !== 'check').at(-1)?.credential, 'cred-web-1');
    assert.is(fake.count('create', 'api_n1'), 1, 'api did not drift');
  } finally {
    await w.done();
  }
});

test('without a re-check timer, drift is found on the next reconcile (a change of the file)', async () => {
  const w = await world();
  const fake = fakeAdapter();
  try {
    w.write([consumer('n1', 'web', null, 'cred-web-1')]);
    const h = w.start(fake.adapter);
    await waitFor('web served', () => w.bound('n1.web.database'));
    await h.reconciled();
    fake.drifted.add('web_n1');
    w.write([consumer('n1', 'web', null, 'cred-web-1'), consumer('n1', 'api', null, 'cred-api-1')]);
    await waitFor('web created again', () => fake.count('create', 'web_n1') === 2);
    await waitFor('api served', () => w.bound('n1.api.database'));
  } finally {
    await w.done();
  }
});

test('a malformed file keeps the last good state: nothing removed or created, and it is said once', async () => {
  const w = await world();
  const fake = fakeAdapter();
  try {
    w.write([consumer('n1', 'web', null, 'cred-web-1'), consumer('n1', 'api', null, 'cred-api-1')]);
    const h = w.start(fake.adapter);
    await waitFor('both served', async () => (await w.bound('n1.web.database')) && (await w.bound('n1.api.database')));
    await h.reconciled();
    const before = fake.calls.length;
    w.write('[{"consumer":"n1","module":"web","credential":"cred-web-1"');
    await waitFor('not JSON said', () => w.log.lines.some((l) => l.includes('is not JSON')));
    w.write(JSON.stringify([{ consumer: 'n1', module: 'web', local: null, credential: 'cred-web-1' }]));
    await waitFor('the missing field said', () => w.log.lines.some((l) => l.includes('"0.value" is missing')));
    await h.reconciled();
    assert.equal(
      fake.calls.slice(before).filter((c) => c.op !== 'check'),
      [],
      'a malformed file changed what is served',
    );
    assert.ok(await w.bound('n1.web.database'));
    assert.ok(await w.bound('n1.api.database'));
    w.write([consumer('n1', 'api', null, 'cred-api-1')]);
    await waitFor('web removed once the file is good again', () => fake.count('remove', 'web_n1') === 1);
  } finally {
    await w.done();
  }
});

test('a restart removes a consumer dropped while the helper was down, and re-checks the served ones instead of re-creating them', async () => {
  const w = await world();
  const first = fakeAdapter();
  try {
    w.write([consumer('n1', 'web', null, 'cred-web-1'), consumer('n1', 'api', null, 'cred-api-1'), consumer('n1', 'bad', null, 'cred-bad-1')]);
    first.refuse.set('bad_n1', 'no');
    const h1 = w.start(first.adapter);
    await waitFor(
      'all three published',
      async () => (await w.bound('n1.web.database')) && (await w.bound('n1.api.database')) && (await w.bound('n1.bad.database')),
    );
    await h1.stop();
    w.write([consumer('n1', 'api', null, 'cred-api-1')]);
    const second = fakeAdapter();
    const h2 = w.start(second.adapter);
    await waitFor('web removed at start', () => second.count('remove', 'web_n1') === 1);
    await waitFor('the refused one removed at start', () => second.count('remove', 'bad_n1') === 1);
    await waitFor('web key deleted', async () => (await w.bound('n1.web.database')) === null);
    await waitFor('bad key deleted', async () => (await w.bound('n1.bad.database')) === null);
    await h2.reconciled();
    assert.is(second.count('check', 'api_n1'), 1, 'api was re-checked');
    assert.is(second.count('create', 'api_n1'), 0, 'api was created again though its check held');
    assert.ok(await w.bound('n1.api.database'));
    // A file malformed when the helper starts: nothing it holds is withdrawn or created.
    await h2.stop();
    w.write('not json');
    const blind = fakeAdapter();
    const hb = w.start(blind.adapter);
    await waitFor('not JSON said', () => w.log.lines.filter((l) => l.includes('is not JSON')).length === 1);
    await hb.reconciled();
    assert.equal(blind.calls, [], 'a helper without a good list touched a consumer');
    await hb.stop();
    w.write([consumer('n1', 'api', null, 'cred-api-1')]);
    // Without check(), a restart may only create again what it cannot check.
    const third = fakeAdapter(false);
    const h3 = w.start(third.adapter);
    await waitFor('api created again without a check', () => third.count('create', 'api_n1') === 1);
    await h3.reconciled();
    assert.is(third.calls.filter((c) => c.op === 'remove').length, 0);
  } finally {
    await w.done();
  }
});

test('an entry read back at start that is out of shape (refused beside served fields, an object value) is said and served again, never taken as served', async () => {
  const w = await world();
  const first = fakeAdapter();
  try {
    w.write([consumer('n1', 'web', null, 'cred-web-1'), consumer('n1', 'api', null, 'cred-api-1')]);
    const h1 = w.start(first.adapter);
    await waitFor('both served', async () => (await w.bound('n1.web.database')) && (await w.bound('n1.api.database')));
    await h1.stop();
    const kv = await openKv(nc, w.bucket);
    const served = { as: 'web_n1', user: 'web_n1', values: { host: 'db1', port: 5432, database: 'web' } };
    await kv.put('n1.web.database', JSON.stringify({ ...served, refused: 'planted' }));
    await kv.put('n1.api.database', JSON.stringify({ ...served, as: 'api_n1', user: 'api_n1', values: { host: { name: 'db1' } } }));
    const second = fakeAdapter();
    const h2 = w.start(second.adapter);
    await waitFor('web served again', async () => JSON.stringify(await w.served('n1.web.database')) === JSON.stringify(served));
    await waitFor('api served again', async () => (await w.bound('n1.api.database')) as { values?: { host?: unknown } } | null).then((entry) =>
      assert.is(entry.values?.host, 'db1'),
    );
    await h2.reconciled();
    assert.is(second.count('create', 'web_n1'), 1, 'the entry holding refused was taken as served');
    assert.is(second.count('check', 'web_n1'), 0);
    assert.is(second.count('create', 'api_n1'), 1, 'the entry with an object value was taken as served');
    assert.ok(
      w.log.lines.some((l) => l.includes(`${w.bucket} n1.web.database: out of shape (field "as" is not allowed beside "refused"); serving it again`)),
      w.log.lines.join('\n'),
    );
    assert.ok(
      w.log.lines.some((l) => l.includes(`${w.bucket} n1.api.database: out of shape (field "values.host" is neither a string nor a number); serving it again`)),
    );
  } finally {
    await w.done();
  }
});

test('a consumers file whose directory is not there yet is watched once it is', async () => {
  const w = await world();
  const fake = fakeAdapter();
  const later = join(w.file, '..', 'later');
  const file = join(later, 'consumers.json');
  try {
    const h = runProvider({
      nc,
      provider: w.provider,
      provision: w.provision,
      consumersFile: file,
      adapter: fake.adapter,
      log: w.log,
      retry: { firstMs: 50, maxMs: 100 },
    });
    try {
      await waitFor('the failed watch said', () => w.log.lines.some((l) => l.includes(`cannot watch ${file}`)));
      // Tried again at 50–100 ms: a directory not made yet is said once, at info (the state a provider starts in).
      await new Promise((resolve) => setTimeout(resolve, 400));
      const said = w.log.lines.filter((l) => l.includes(`cannot watch ${file}`));
      assert.is(said.length, 1, said.join('\n'));
      assert.match(said[0]!, / info cannot watch .* yet: /);
      mkdirSync(later);
      w.credentials.add('cred-web-1');
      writeFileSync(`${file}.tmp`, JSON.stringify([consumer('n1', 'web', null, 'cred-web-1')]));
      renameSync(`${file}.tmp`, file);
      await waitFor('web served', () => w.bound('n1.web.database'));
    } finally {
      await h.stop();
    }
  } finally {
    await w.done();
  }
});

test('no credential reaches a log line or a bound value, even from an adapter error or refusal that quotes it', async () => {
  const w = await world();
  const fake = fakeAdapter();
  const secret = 'cred-refused-7f3a9c';
  fake.refuse.set('bad_n1', `password ${secret} is too weak`);
  fake.failures.set('web_n1', 1);
  const leaky: Adapter = {
    ...fake.adapter,
    async create(g) {
      const served = await fake.adapter.create(g, new AbortController().signal);
      // An adapter serving the credential as a value: refused, never published.
      return g.as === 'api_n1' ? { ...served, values: { ...served.values, dsn: `postgres://api:${g.credential}@db1/api` } } : served;
    },
  };
  try {
    w.write([consumer('n1', 'bad', null, secret), consumer('n1', 'web', null, 'cred-web-9b1d4e'), consumer('n1', 'api', null, 'cred-api-5c2e8f')]);
    w.start(leaky, { retry: { firstMs: 50, maxMs: 50 } });
    assert.equal(await waitFor('bad refused', () => w.bound('n1.bad.database')), { refused: WITHHELD_REFUSAL });
    assert.equal(await waitFor('api refused', () => w.bound('n1.api.database')), { refused: WITHHELD_SERVED });
    await waitFor('web served after its failure', () => w.bound('n1.web.database'));
    assert.ok(
      w.log.lines.some((l) => l.includes('its message is withheld')),
      'the screen was exercised',
    );
  } finally {
    await w.done(); // scans every log line and bucket value for every credential written
  }
});

test.run();
