// Key encoding (DESIGN §2) and every key shape (§3).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { boundKey, collectKey, configKey, decodeToken, encodeToken, needKey, nodeModuleKey, pairVault, parseBoundKey, parseCollectKey, parseConfigKey, parseNeedKey, parseNodeModuleKey, parseRegistryKey } from '../src/shared/keys.ts';
import { SEED, seeded } from './helpers/random.ts';

const TOKEN = /^[A-Za-z0-9\-_/=]+$/;

function randomText(r: ReturnType<typeof seeded>): string {
  const pools = [
    () => String.fromCharCode(32 + r.int(95)),
    () => r.pick([':', '.', '=', ' ', '*', '>', '\t', '\n', '/', '-', '_']),
    () => String.fromCodePoint(0x80 + r.int(0x7ff)),
    () => String.fromCodePoint(0x800 + r.int(0xd000)),
    () => String.fromCodePoint(0x10000 + r.int(0xfffff)),
    () => r.pick(['é', 'ß', '日本', '🙂', 'Ω']),
  ];
  let s = '';
  const n = 1 + r.int(24);
  for (let i = 0; i < n; i++) s += r.pick(pools)();
  return s;
}

test('the examples of the contract encode as written', () => {
  assert.is(encodeToken('shell:zsh:normal'), 'shell=3Azsh=3Anormal');
  assert.is(encodeToken('a.b'), 'a=2Eb');
  assert.is(encodeToken('x=y'), 'x=3Dy');
  assert.is(encodeToken('é'), '=C3=A9');
  assert.equal(decodeToken('shell=3Azsh=3Anormal'), { ok: true, value: 'shell:zsh:normal' });
});

test('any UTF-8 text round-trips through a token that is a valid NATS key token', () => {
  const r = seeded(SEED);
  for (let i = 0; i < 5000; i++) {
    const text = randomText(r);
    const token = encodeToken(text);
    assert.ok(TOKEN.test(token), `seed ${SEED} case ${i}: ${JSON.stringify(text)} → ${token}`);
    assert.not.ok(token.includes('.') || token.includes('*') || token.includes('>') || /\s/.test(token));
    assert.equal(decodeToken(token), { ok: true, value: text }, `seed ${SEED} case ${i}: ${JSON.stringify(text)}`);
  }
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

test('needs, collect and bound keys encode their free-text tokens and parse back', () => {
  const r = seeded(SEED + 1);
  for (let i = 0; i < 500; i++) {
    const name = randomText(r);
    const need = needKey('n1', 'web', 'config', name);
    assert.equal(parseNeedKey(need), { ok: true, value: { node: 'n1', module: 'web', kind: 'config', name } });
    const collect = collectKey('n1', name, 'zsh');
    assert.equal(parseCollectKey(collect), { ok: true, value: { node: 'n1', collection: name, contributor: 'zsh' } });
    const bound = boundKey('n1', 'web', name, name);
    assert.equal(parseBoundKey(bound), { ok: true, value: { node: 'n1', module: 'web', provision: name, local: name } });
  }
  assert.is(collectKey('n1', 'shell:zsh:normal', 'git'), 'n1.shell=3Azsh=3Anormal.git');
  assert.equal(parseBoundKey('n1.web.database'), { ok: true, value: { node: 'n1', module: 'web', provision: 'database' } });
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

test.run();
