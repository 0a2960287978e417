// End to end: bad input fails one module with a reason naming it, and touches nothing else (DESIGN §3, §7, §8).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import { withMesh, type Mesh, type ModuleSpec } from './helpers/mesh.ts';
import { archiveDigest, packTemplates, writeComposition } from './helpers/archive.ts';

const OK: ModuleSpec = {
  templates: { 'ok.conf': 'port ${port:http}\n' },
  provisioning: { files: [{ path: '${dir:config}/ok.conf', template: 'ok.conf', change: 'restart' }] },
};

function spec(template: string, extra: Record<string, unknown> = {}, build = '1'): ModuleSpec {
  return {
    build,
    templates: { 'bad.conf': template },
    provisioning: { files: [{ path: '${dir:config}/bad.conf', template: 'bad.conf', change: 'restart' }], ...extra },
  };
}

/** Publishes `bad` beside a good module and returns the bad one's failed report; the good one must apply. */
async function failsAlone(m: Mesh, bad: ModuleSpec) {
  await m.publish('ok', OK);
  await m.publish('bad', bad);
  await m.assign('n1', 'ok');
  await m.assign('n1', 'bad');
  await m.startClient();
  await m.waitReport('n1', 'ok', (r) => r.state === 'applied');
  return m.waitReport('n1', 'bad', (r) => r.state === 'failed');
}

test('a digest mismatch fails the module and leaves its old files untouched', () =>
  withMesh(async (m) => {
    await m.publish('bad', spec('v1 ${port:http}\n'));
    await m.assign('n1', 'bad');
    await m.startClient();
    await m.waitReport('n1', 'bad', (r) => r.state === 'applied');
    const path = join(m.root, 'etc/bad/bad.conf');
    assert.is(m.file(path), 'v1 8080\n');
    await m.publish('bad', { ...spec('v2 ${port:http}\n', {}, '2'), digest: 'sha256:' + '0'.repeat(64) });
    const r = await m.waitReport('n1', 'bad', (x) => x.state === 'failed');
    assert.match(r.reason ?? '', /digest mismatch: wants sha256:0{64}/);
    assert.match(r.reason ?? '', /obj:\/\/mesh-catalog_archives\/bad-2\.tar/);
    assert.is(r.build, '2');
    assert.is(m.file(path), 'v1 8080\n');
  }));

test('an archive with a traversal name is refused, naming the entry', () =>
  withMesh(async (m) => {
    const bad = spec('x\n');
    bad.templates['../evil'] = 'pwned';
    const r = await failsAlone(m, bad);
    assert.match(r.reason ?? '', /entry "\.\.\/evil": "\.\." segment refused/);
    assert.is(m.file(join(m.root, 'etc/bad/bad.conf')), undefined);
  }));

test('a secret the plan does not name fails the module with template, line and name', () =>
  withMesh(async (m) => {
    const r = await failsAlone(m, spec('a\nkey ${secret:nope}\n'));
    assert.is(r.reason, 'template bad.conf line 2: ${secret:nope}: secret "nope" is not named by the plan');
  }));

test('a placeholder of an unknown kind fails the module with kind, template and line', () =>
  withMesh(async (m) => {
    const r = await failsAlone(m, spec('a\nb\nc ${vault:x}\n'));
    assert.is(r.reason, 'template bad.conf line 3: ${vault:x}: unknown kind "vault" (write $${vault:x} to keep it as text)');
  }));

test('a config value that is not UTF-8 fails its module alone, naming the key', () =>
  withMesh(async (m) => {
    await m.setConfig('n1', 'bad', 'blob', new Uint8Array([0xff, 0xfe]));
    const r = await failsAlone(m, spec('v ${config:blob}\n'));
    assert.match(r.reason ?? '', /mesh-config_resolved n1\.bad\.blob: value is not UTF-8/);
  }));

test('a plan that does not validate fails its module with the key and field', () =>
  withMesh(async (m) => {
    await m.publish('ok', OK);
    await m.assign('n1', 'ok');
    await m.startClient();
    await m.waitReport('n1', 'ok', (r) => r.state === 'applied');
    // The seat would never write this; an operator or a bug might.
    await m.kv.plans.put('n1.junk', JSON.stringify({ node: 'n1', module: 'junk', build: '1' }));
    const r = await m.waitReport('n1', 'junk', (x) => x.state === 'failed');
    assert.match(r.reason ?? '', /^mesh-provisioner_plans n1\.junk: field "archive"/);
    assert.is((await m.report('n1', 'ok'))?.state, 'applied');
  }));

test('a template missing from the archive fails the module naming it', () =>
  withMesh(async (m) => {
    const bad = spec('x\n');
    (bad.provisioning['files'] as unknown[]).push({ path: '${dir:config}/other.conf', template: 'other.conf' });
    const r = await failsAlone(m, bad);
    assert.match(r.reason ?? '', /template other\.conf .* is not in the archive/);
  }));

test('two plans naming one digest by two refs, one a mismatch and one missing: each module names its own plan’s ref', () =>
  withMesh(async (m) => {
    const digest = archiveDigest(await packTemplates({ 'other.conf': 'other\n' }));
    // web's ref holds other bytes than the digest says; api's ref names no object at all.
    const web = await m.publish('web', { ...spec('web ${port:http}\n'), digest });
    const apiRef = 'obj://mesh-catalog_archives/api-gone.tar';
    await writeComposition(m.kv.modules, { ...web.composition, module: 'api', archive: { ref: apiRef, digest } });
    await m.assign('n1', 'web');
    await m.assign('n1', 'api');
    // Started with both plans there, as after a restart: both archives are loaded at once.
    await m.startClient();
    const w = await m.waitReport('n1', 'web', (r) => r.state === 'failed');
    const a = await m.waitReport('n1', 'api', (r) => r.state === 'failed');
    assert.is(w.reason, `archive ${web.composition.archive.ref}: digest mismatch: wants ${digest}, got ${archiveDigest(web.tar)}`);
    assert.is(a.reason, `archive ${apiRef}: no object "api-gone.tar" in bucket mesh-catalog_archives`);
  }));

test.run();
