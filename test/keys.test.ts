// Key encoding (DESIGN §2) and every key shape (§3).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import {
  boundKey,
  collectKey,
  configKey,
  decodeToken,
  encodeToken,
  needKey,
  nodeModuleKey,
  parseBoundKey,
  parseCollectKey,
  parseConfigKey,
  parseNeedKey,
  parseNodeModuleKey,
  parseRegistryKey,
} from '../src/shared/contract/keys.ts';
import { isSegmentName, SEGMENT_NAME_PATTERN, segmentNameProblem } from '../src/shared/contract/keys.ts';
import { moduleSecretVault, pairVault, parseVaultName, vaultOwnerProblem } from '../src/shared/contract/vault-names.ts';
import fc from 'fast-check';
import { SEED } from './helpers/random.ts';

const TOKEN = /^[A-Za-z0-9\-_/=]+$/;
/** Cases of the smallest property (MESH_FUZZ_RUNS); the others run a multiple of it. */
const RUNS = Number(process.env['MESH_FUZZ_RUNS'] ?? 500);

const codePoint = (min: number, max: number) => fc.integer({ min, max }).map((c) => String.fromCodePoint(c));
// Free text heavy in the characters a subject or a key treats apart, and in every UTF-8 length (no lone surrogate).
const utf8Text = fc
  .array(
    fc.oneof(
      codePoint(32, 126),
      fc.constantFrom(':', '.', '=', ' ', '*', '>', '\t', '\n', '/', '-', '_'),
      codePoint(0x80, 0x87e),
      codePoint(0x800, 0xd7ff),
      codePoint(0x10000, 0x10fffe),
      fc.constantFrom('é', 'ß', '日本', '🙂', 'Ω'),
    ),
    { minLength: 1, maxLength: 24, size: 'max' },
  )
  .map((pieces) => pieces.join(''));

test('the examples of the contract encode as written', () => {
  assert.is(encodeToken('shell:zsh:normal'), 'shell=3Azsh=3Anormal');
  assert.is(encodeToken('a.b'), 'a=2Eb');
  assert.is(encodeToken('x=y'), 'x=3Dy');
  assert.is(encodeToken('é'), '=C3=A9');
  assert.equal(decodeToken('shell=3Azsh=3Anormal'), { ok: true, value: 'shell:zsh:normal' });
});

test('any UTF-8 text round-trips through a token that is a valid NATS key token', () => {
  fc.assert(
    fc.property(utf8Text, (text) => {
      const token = encodeToken(text);
      assert.ok(TOKEN.test(token), `${JSON.stringify(text)} → ${token}`);
      assert.not.ok(token.includes('.') || token.includes('*') || token.includes('>') || /\s/.test(token));
      assert.equal(decodeToken(token), { ok: true, value: text }, JSON.stringify(text));
    }),
    { numRuns: RUNS * 10, seed: SEED },
  );
});

test('a token that is not an exact encoding is out of shape, never silently decoded', () => {
  for (const bad of ['', '=3', '=zz', '=3a', 'a b', 'a:b', '=41', '=C3', '=FF', 'a.b', 'x*']) {
    const parsed = decodeToken(bad);
    assert.is(parsed.ok, false, `"${bad}" decoded`);
  }
});

test('node.module keys parse back and reject bad names and token counts', () => {
  assert.is(nodeModuleKey('n1', 'web'), 'n1.web');
  assert.equal(parseNodeModuleKey('n1.web'), { ok: true, value: { node: 'n1', module: 'web' } });
  for (const bad of ['n1', 'n1.web.x', 'N1.web', 'n1.-web', 'n1.']) assert.is(parseNodeModuleKey(bad).ok, false, bad);
});

test('config keys keep the dots of the config key', () => {
  assert.is(configKey('n1', 'web', 'db.host'), 'n1.web.db.host');
  assert.equal(parseConfigKey('n1.web.db.host'), { ok: true, value: { node: 'n1', module: 'web', key: 'db.host' } });
  assert.is(parseConfigKey('n1.web').ok, false);
  assert.is(parseConfigKey('n1.web..x').ok, false);
});

test('a config key encodes each part between its dots as a token and parses back exactly (DESIGN §2)', () => {
  assert.is(configKey('n1', 'web', 'shell:zsh.a=b'), 'n1.web.shell=3Azsh.a=3Db');
  assert.is(configKey('n1', 'web', 'café'), 'n1.web.caf=C3=A9');
  fc.assert(
    fc.property(
      fc.array(
        utf8Text.filter((t) => !t.includes('.')),
        { minLength: 1, maxLength: 4 },
      ),
      (parts) => {
        const key = parts.join('.');
        const built = configKey('n1', 'web', key);
        assert.ok(
          built.split('.').every((t) => TOKEN.test(t)),
          built,
        );
        assert.equal(parseConfigKey(built), { ok: true, value: { node: 'n1', module: 'web', key } });
      },
    ),
    { numRuns: RUNS, seed: SEED + 2 },
  );
  for (const bad of ['n1.web.a:b', 'n1.web.=3', 'n1.web.a=2Eb', 'n1.web.=41']) assert.is(parseConfigKey(bad).ok, false, bad);
});

test('needs and collect keys encode their free-text tokens and parse back; a bound key takes only names of the grammar', () => {
  fc.assert(
    fc.property(utf8Text, (name) => {
      const need = needKey('n1', 'web', 'config', name);
      assert.equal(parseNeedKey(need), { ok: true, value: { node: 'n1', module: 'web', kind: 'config', name } });
      const collect = collectKey('n1', name, 'zsh');
      assert.equal(parseCollectKey(collect), { ok: true, value: { node: 'n1', collection: name, contributor: 'zsh' } });
      // A provision or local out of the grammar (DESIGN §2) is no bound key, however it is encoded.
      assert.is(parseBoundKey(boundKey('n1', 'web', name, 'main')).ok, /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/.test(name), name);
    }),
    { numRuns: RUNS, seed: SEED + 1 },
  );
  assert.is(collectKey('n1', 'shell:zsh:normal', 'git'), 'n1.shell=3Azsh=3Anormal.git');
  assert.equal(parseBoundKey('n1.web.database'), { ok: true, value: { node: 'n1', module: 'web', provision: 'database' } });
  assert.equal(parseBoundKey('n1.web.database.main_2'), { ok: true, value: { node: 'n1', module: 'web', provision: 'database', local: 'main_2' } });
  assert.match((parseBoundKey('n1.web.pg=3Adb.main') as { reason: string }).reason, /^provision is "pg=3Adb", not a name/);
  assert.match((parseBoundKey('n1.web.db.=2E=2E') as { reason: string }).reason, /^local is "=2E=2E", not a name/);
  assert.is(parseNeedKey('n1.web.config').ok, false);
  assert.is(parseNeedKey('n1.web.Config.x').ok, false);
  assert.is(parseCollectKey('n1.shell:zsh.git').ok, false);
  assert.is(parseRegistryKey('config').ok, true);
  assert.is(parseRegistryKey('Config').ok, false);
});

test('vault names follow the contract', () => {
  assert.is(pairVault({ provider: 'postgres', provision: 'database', node: 'n1', module: 'web', local: 'main' }), 'pair/postgres/database/n1/web/main');
  assert.is(pairVault({ provider: 'postgres', provision: 'database', node: 'n1', module: 'web' }), 'pair/postgres/database/n1/web');
});

const segmentName = fc.stringMatching(SEGMENT_NAME_PATTERN);
const SEGMENT_CLASS = /^[A-Za-z0-9_-]$/;

test('the grammar of secret names, provisions and locals: every name of the class is accepted, nothing else (DESIGN §2)', () => {
  fc.assert(
    fc.property(segmentName, (name) => {
      assert.ok(isSegmentName(name), name);
      assert.is(segmentNameProblem(name), undefined);
      assert.is(encodeToken(name), name, 'a name of the grammar is its own key token');
    }),
    { numRuns: RUNS * 4, seed: SEED },
  );
  // A name of the class with a `/`, a `.`, or any character outside the class put anywhere in it.
  const foreign = fc.oneof(
    fc.constantFrom('/', '.', '..', '../', ':', ' ', '\0', '\n', 'é', '=', '{'),
    fc.string({ minLength: 1, maxLength: 1, unit: 'binary' }).filter((c) => !SEGMENT_CLASS.test(c)),
  );
  fc.assert(
    fc.property(segmentName, foreign, fc.nat(), (name, bad, at) => {
      const i = at % (name.length + 1);
      const text = name.slice(0, i) + bad + name.slice(i);
      assert.not.ok(isSegmentName(text), JSON.stringify(text));
      assert.type(segmentNameProblem(text), 'string');
    }),
    { numRuns: RUNS * 4, seed: SEED },
  );
  for (const bad of ['', '-a', '_a', 'a'.repeat(129), '.', '..', '../victim/api-key']) assert.not.ok(isSegmentName(bad), bad);
  for (const good of ['a', 'A', '9', 'a'.repeat(128), 'db-password', 'db_main']) assert.ok(isSegmentName(good), good);
});

test('a vault name parses back to its parts only when every segment is in its grammar; whose it is, is judged by its parts', () => {
  fc.assert(
    fc.property(segmentName, segmentName, fc.option(segmentName, { nil: undefined }), (provision, name, local) => {
      const pair = pairVault({ provider: 'postgres', provision, node: 'n1', module: 'web', ...(local === undefined ? {} : { local }) });
      assert.equal(parseVaultName(pair), {
        ok: true,
        value: { kind: 'pair', provider: 'postgres', provision, node: 'n1', module: 'web', ...(local === undefined ? {} : { local }) },
      });
      assert.equal(parseVaultName(moduleSecretVault('web', name)), { ok: true, value: { kind: 'module', module: 'web', name } });
      assert.is(vaultOwnerProblem(pair, { module: 'web', node: 'n1' }), undefined);
    }),
    { numRuns: RUNS, seed: SEED },
  );
  const refused: [string, RegExp][] = [
    ['module/evil1/../victim/api-key', /^has a "\.\." segment$/],
    ['module/web/./api-key', /^has a "\." segment$/],
    ['module//api-key', /^has an empty segment$/],
    ['/etc/passwd', /^has an empty segment$/],
    ['module/web/api-key/', /^has an empty segment$/],
    ['pair/postgres/database/n1/evil1/../../../../../module/victim/api-key', /^has a "\.\." segment$/],
    ['module/web', /^is neither module\/<module>\/<name> nor pair/],
    ['secret/web/api-key', /^is neither/],
    ['module/Web/api-key', /^module "Web" is not a valid name \(a-z, 0-9 and -, at most 63\)$/],
    ['module/web/a:b', /^name is "a:b", not a name/],
    ['pair/postgres/data.base/n1/web', /^provision is "data\.base", not a name/],
    ['pair/postgres/database/n1/web/x y', /^local is "x y", not a name/],
    ['module/web/' + 'a'.repeat(2000), /past the limit of 1024/],
  ];
  for (const [vault, reason] of refused) assert.match((parseVaultName(vault) as { reason: string }).reason ?? 'accepted', reason, vault);
  assert.is(vaultOwnerProblem('module/victim/api-key', { module: 'evil1' }), 'belongs to module victim, not evil1');
  assert.is(vaultOwnerProblem('pair/postgres/database/n2/web', { module: 'web', node: 'n1' }), 'belongs to node n2, not n1');
  assert.is(vaultOwnerProblem('pair/postgres/database/n2/web', { module: 'web' }), undefined, 'the engine knows no node');
  assert.is(vaultOwnerProblem('module/web/b', { module: 'web', name: 'a' }), "is not the secret a's own (module/web/a)");
  assert.is(vaultOwnerProblem('module/web/a', { module: 'web', name: 'a' }), undefined);
});

test.run();
