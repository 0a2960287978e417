// Secret names that leave their place (issue 18, item 4) and files holding a secret (item 5), end to
// end against the bundles on a real nats-server: the seat, the client and the reference engine each
// run as their own process. A module `victim` holds `api-key`; `evil…` modules try to read it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createEngineClient, type EngineClient } from '../src/client/handoff/fill-socket.ts';
import { jsonBytes } from '../src/shared/base/bytes.ts';
import { contentDigest, type FillContent, type FillFile, type FillReply } from '../src/shared/contract/fill-protocol.ts';
import { memoryLogger } from '../src/shared/cli/log.ts';
import { PROVISIONING_VERB } from '../src/shared/contract/subjects.ts';
import type { Report } from '../src/shared/contract/report.ts';
import type { VerbReply } from '../src/shared/contract/verb.ts';
import { cleanupBundles, ensureBuilt, type Running } from './helpers/bundle.ts';
import { startMesh, type Mesh } from './helpers/mesh.ts';
import { plantPlan } from './helpers/planted.ts';
import { waitFor } from './helpers/wait.ts';

const SECRET = 'TOPSECRET-victim';
const STOLEN = '../victim/api-key';
const CLIMB = '../../../../../module/victim/api-key';

let m: Mesh;
let engine: Running;
let client: Running;
let direct: EngineClient;

test.before(async () => {
  ensureBuilt('server');
  ensureBuilt('client');
  ensureBuilt('engine');
  m = await startMesh({ engine: false });
  // Every secret and link is in place before the engine starts: a change of its secrets dir is a knock.
  m.secret('module/victim/api-key', SECRET);
  m.secret('module/modes/api-key', 'modes-secret');
  writeFileSync(join(m.dir, 'outside.txt'), `${SECRET}-outside`);
  symlinkSync(join(m.dir, 'outside.txt'), join(m.secrets, 'module/modes/outside'));
  symlinkSync(m.dir, join(m.secrets, 'module/modes/dir'));
  engine = m.startEngineProcess();
  await engine.waitForLog(/listening/);
  client = m.startClientProcess();
  await client.waitForLog(/start: filling/);
  direct = createEngineClient({ socketPath: m.socketPath, log: memoryLogger(), pollMs: 50, timeoutMs: 10_000 });
});

test.after(async () => {
  direct?.close();
  await m?.close();
  cleanupBundles();
});

/** Every regular file under `dir` (links not followed) whose bytes hold the victim's secret. */
function holdingSecret(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .map((name) => join(dir, name))
    .filter((path) => lstatSync(path).isFile() && readFileSync(path, 'utf8').includes(SECRET));
}

/** The files of the engine's root holding the secret, besides the victim's own. */
function leaked(): string[] {
  return holdingSecret(m.root).filter((path) => !path.startsWith(join(m.root, 'etc', 'victim') + '/'));
}

/** The seat's health entries by key; empty when the seat answers {error} (one without `health`). */
async function health(): Promise<Map<string, { state: string; reason: string }>> {
  const reply = (await m.nc.request(PROVISIONING_VERB, jsonBytes({ what: 'health' }), { timeout: 5000 })).json<VerbReply & { error?: string }>();
  return new Map((reply.entries ?? []).map((e) => [e.key, e.value as { state: string; reason: string }]));
}

/** Publishes and assigns a one-file module whose template is `template`. */
async function oneFile(module: string, template: string, provisioning: Record<string, unknown>, fileMode?: string): Promise<void> {
  await m.publish(module, {
    templates: { [`${module}.conf`]: template },
    provisioning: {
      files: [{ path: '${dir:config}/' + module + '.conf', template: `${module}.conf`, change: 'restart', ...(fileMode ? { fileMode } : {}) }],
      ...provisioning,
    },
  });
  await m.assign('n1', module);
}

/** Proves the client has been through everything before: a later module reaches the engine. */
async function passedOver(module: string): Promise<void> {
  await oneFile(module, 'ok\n', {});
  await m.waitReport('n1', module, (r) => r.state === 'applied');
}

const failed = (r: Report) => r.state === 'failed';

test('the victim’s own secret is written where its template names it, 0600 with no fileMode (item 5)', async () => {
  await oneFile('victim', 'key=${secret:api-key}\n', { secrets: [{ name: 'api-key' }] });
  await m.waitReport('n1', 'victim', (r) => r.state === 'applied');
  const path = join(m.root, 'etc/victim/victim.conf');
  assert.is(readFileSync(path, 'utf8'), `key=${SECRET}\n`);
  assert.is(statSync(path).mode & 0o777, 0o600);
});

test('a composition naming another module’s secret (a name, a name with a path, a provision’s local) fails its plan in the seat’s health, naming the field; no file ever holds the secret', async () => {
  await oneFile('evil1', `k=\${secret:${STOLEN}}\n`, { secrets: [{ name: STOLEN }] });
  await oneFile('evil2', 'x\n', { secrets: [{ name: STOLEN, path: '${dir:config}/stolen.key' }] });
  await oneFile('evil3', 'k=${secret:db-password}\n', { provisions: [{ provider: 'postgres', provision: 'database', local: CLIMB, name: 'db-password' }] });
  const evil = ['evil1', 'evil2', 'evil3'];
  // Said by the seat, or (had it composed them) reported by the client: either way every evil plan's fate is known.
  await waitFor('health or reports of evil1, evil2, evil3', async () => {
    const entries = await health();
    const reports = await Promise.all(evil.map((module) => m.report('n1', module)));
    return evil.every((module, i) => entries.has(`n1.${module}`) || reports[i]);
  });
  await passedOver('after-evil');
  assert.equal(leaked(), [], 'a file of an evil module holds the victim’s secret');
  const said = await health();
  const name = (field: string, value: string) =>
    new RegExp(
      `^composition does not validate: field "provisioning\\.${field.replace(/\./g, '\\.')}" is ${JSON.stringify(value).replace(/[.]/g, '\\.')}, not a name`,
    );
  assert.equal(said.get('n1.evil1')?.state, 'failed');
  assert.match(said.get('n1.evil1')!.reason, name('secrets.0.name', STOLEN));
  assert.match(said.get('n1.evil2')!.reason, name('secrets.0.name', STOLEN));
  assert.match(said.get('n1.evil3')!.reason, name('provisions.0.local', CLIMB));
  for (const module of evil) assert.is(await m.kv.plans.get(`n1.${module}`), null, `a plan of ${module}`);
});

/**
 * Plants a plan of `module` as a compromised seat could: its archive real (published under another,
 * unassigned module), its assignment kept and its composition missing, so the seat holds the plan.
 */
async function plantPublished(module: string, template: string, plan: Record<string, unknown>): Promise<void> {
  const published = await m.publish(`${module}-archive`, { templates: { [`${module}.conf`]: template }, provisioning: {} });
  await plantPlan(m.kv, 'n1', module, {
    archive: published.composition.archive,
    files: [{ path: join(m.root, 'etc', module, `${module}.conf`), template: `${module}.conf`, mode: 'owned', change: 'none' }],
    ...plan,
  });
}

test('a planted plan whose secret’s vault name is not its own module’s is refused by the client: failed naming the field; the engine never writes the secret', async () => {
  const cases: [string, Record<string, unknown>, RegExp][] = [
    [
      'evil4',
      { secrets: [{ name: 'api-key', vault: 'module/victim/api-key' }] },
      /field "secrets\.0\.vault" is "module\/victim\/api-key", which belongs to module victim, not evil4/,
    ],
    [
      'evil5',
      { secrets: [{ name: 'api-key', vault: 'module/evil5/../victim/api-key' }] },
      /field "secrets\.0\.vault" is "module\/evil5\/\.\.\/victim\/api-key", which has a "\.\." segment/,
    ],
    ['evil6', { secrets: [{ name: 'api-key', vault: 'pair/postgres/database/n2/evil6' }] }, /field "secrets\.0\.vault" .*which belongs to node n2, not n1/],
    [
      'evil7',
      {
        secrets: [{ name: 'api-key', vault: `pair/postgres/database/n1/evil7/${CLIMB}` }],
        provisions: [{ provider: 'postgres', provision: 'database', node: 'n1', local: CLIMB, name: 'api-key' }],
      },
      /field "provisions\.0\.local" is "\.\.\/\.\.\/.*", not a name/,
    ],
  ];
  for (const [module, plan] of cases) await plantPublished(module, 'k=${secret:api-key}\n', plan);
  for (const [module, , reason] of cases) assert.match((await m.waitReport('n1', module, failed)).reason!, reason, module);
  await passedOver('after-planted');
  assert.equal(leaked(), []);
  for (const [module] of cases) assert.not.ok(existsSync(join(m.root, 'etc', module)), `${module}'s file was written`);
});

function file(path: string, content: FillContent, more: Partial<FillFile> = {}): FillFile {
  return { path, content, digest: contentDigest(content), mode: 'owned', change: 'none', ...more };
}

/** A fill sent straight to the engine's socket, sent again when a knock dropped it (as the client does). */
async function fillDirect(req: Parameters<EngineClient['fill']>[0]): Promise<FillReply> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await direct.fill(req);
    } catch (err) {
      if (attempt === 3 || !/knocked/.test((err as Error).message)) throw err;
    }
  }
}

function only(reply: FillReply): { action: string; reason?: string } {
  assert.ok(reply.ok, JSON.stringify(reply));
  return reply.ok ? reply.files[0]! : { action: 'none' };
}

test('a fill request straight to the engine’s socket naming another module’s secret, a vault name with ..  or an empty segment, or a link out of the secrets dir, refuses that file', async () => {
  const cases: [string, string, RegExp][] = [
    ['evil1', 'module/victim/api-key', /^secret "k": vault name "module\/victim\/api-key" belongs to module victim, not evil1$/],
    ['evil1', 'module/evil1/../victim/api-key', /^secret "k": vault name "module\/evil1\/\.\.\/victim\/api-key" has a "\.\." segment$/],
    ['evil1', `pair/postgres/database/n1/evil1/${CLIMB}`, /has a "\.\." segment$/],
    ['evil1', 'module//api-key', /has an empty segment$/],
    ['evil1', 'module/evil1/./api-key', /has a "\." segment$/],
    ['evil1', 'pair/postgres/database/n1/victim', /belongs to module victim, not evil1$/],
    ['evil1', '/etc/passwd', /has an empty segment$/],
    ['modes', 'module/modes/outside', /^secret "module\/modes\/outside" is a link leading out of the secrets directory$/],
  ];
  for (const [module, vault, reason] of cases) {
    const path = join(m.root, 'etc', module, 'direct.conf');
    const reply = await fillDirect({ module, build: '1', files: [file(path, ['k=', { secret: 'k' }, '\n'])], secrets: { k: vault } });
    const result = only(reply);
    assert.is(result.action, 'refused', `${module} ${vault}`);
    assert.match(result.reason!, reason);
    assert.not.ok(existsSync(path), `${path} written`);
  }
  // A directory link that leads out is refused the same way: the file is resolved, not its name.
  const path = join(m.root, 'etc/modes/direct.conf');
  const viaDir = only(await fillDirect({ module: 'modes', build: '1', files: [file(path, [{ secret: 'k' }])], secrets: { k: 'module/modes/dir' } }));
  assert.match(viaDir.reason ?? '', /is a link leading out of the secrets directory|, not a regular file/);
  assert.equal(leaked(), []);
});

test('a file holding a secret part and no fileMode is written 0600, a rewrite keeps it, a declared fileMode wins, a file without a secret keeps the default (item 5)', async () => {
  const at = (name: string) => join(m.root, 'etc/modes', name);
  const secrets = { k: 'module/modes/api-key' };
  const mode = (name: string) => statSync(at(name)).mode & 0o777;
  const fill = async (files: FillFile[]) => {
    const reply = await fillDirect({ module: 'modes', build: '1', files, secrets });
    assert.ok(reply.ok, JSON.stringify(reply));
    return reply.ok ? reply.files.map((f) => f.action) : [];
  };
  mkdirSync(at(''), { recursive: true });
  writeFileSync(at('before.conf'), 'k=modes-secret\n', { mode: 0o644 });
  assert.equal(
    await fill([
      file(at('secret.conf'), ['k=', { secret: 'k' }, '\n']),
      file(at('declared.conf'), ['k=', { secret: 'k' }, '\n'], { fileMode: '0640' }),
      file(at('plain.conf'), 'no secret\n'),
      file(at('managed.conf'), ['k=', { secret: 'k' }, '\n'], { mode: 'managed' }),
      file(at('seed.conf'), ['k=', { secret: 'k' }, '\n'], { mode: 'seed' }),
      file(at('before.conf'), ['k=', { secret: 'k' }, '\n']),
    ]),
    ['written', 'written', 'written', 'written', 'written', 'written'],
  );
  assert.equal(
    ['secret.conf', 'declared.conf', 'plain.conf', 'managed.conf', 'seed.conf', 'before.conf'].map(mode),
    [0o600, 0o640, 0o644, 0o600, 0o600, 0o600],
  );
  assert.is(readFileSync(at('secret.conf'), 'utf8'), 'k=modes-secret\n');
  assert.equal(await fill([file(at('secret.conf'), ['k2=', { secret: 'k' }, '\n'])]), ['written']);
  assert.is(mode('secret.conf'), 0o600, 'a rewrite keeps 0600');
  assert.equal(await fill([file(at('secret.conf'), ['k2=', { secret: 'k' }, '\n'])]), ['unchanged']);
});

test.run();
