// --once (issue 14): the client bundle on a real bus fills every module once and exits — 0 when all
// are applied, 1 naming each module not applied (a value that never comes, after --timeout; a
// failure, at once) — having written its reports as usual; SIGTERM still ends it cleanly.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import { cleanupBundles, ensureBuilt } from './helpers/bundle.ts';
import { withMesh, type Mesh } from './helpers/mesh.ts';
import { waitFor } from './helpers/wait.ts';

test.after(() => cleanupBundles());
test.before(() => ensureBuilt('client'));

const WEB = {
  templates: { 'web.conf': 'listen ${port:http}\nhost ${config:db.host}\nkey ${secret:api-key}\n' },
  provisioning: {
    files: [{ path: '${dir:config}/web.conf', template: 'web.conf', mode: 'owned', change: 'restart' }],
    secrets: [{ name: 'api-key' }],
  },
};

/** Publishes and assigns a module, and waits until the seat has written its plan (a --once started before it sees no plan). */
async function place(m: Mesh, node: string, module: string, spec: Parameters<Mesh['publish']>[1]): Promise<void> {
  await m.publish(module, spec);
  await m.assign(node, module);
  await waitFor(`plan ${node}.${module}`, async () => (await m.kv.plans.get(`${node}.${module}`))?.operation === 'PUT');
}

/** Runs the node's client bundle with --once and the args; resolves with how it ended and how long it took. */
async function once(m: Mesh, args: string[], node = 'n1') {
  const started = Date.now();
  const running = m.node(node).startClientProcess({ args: ['--once', ...args] });
  const { code } = await running.exited;
  return { code, ms: Date.now() - started, stdout: running.stdout(), stderr: running.stderr() };
}

test('--once exits 0 within a few seconds when every module is applied, its files written and its report put', () =>
  withMesh(async (m) => {
    m.secret('module/web/api-key', 's3cret');
    await m.setConfig('n1', 'web', 'db.host', 'db.internal');
    await place(m, 'n1', 'web', WEB);
    const run = await once(m, ['--timeout', '30']);
    assert.is(run.code, 0, run.stderr);
    assert.ok(run.ms < 8000, `took ${run.ms} ms`);
    assert.match(run.stdout, /n1: 1 module\(s\) applied/);
    assert.is(m.file(join(m.root, 'etc', 'web', 'web.conf')), 'listen 8080\nhost db.internal\nkey s3cret\n');
    assert.is((await m.report('n1', 'web'))?.state, 'applied');
  }));

test('--once waits for a value that comes after the first fill, and exits 0 once it is applied', () =>
  withMesh(async (m) => {
    m.secret('module/web/api-key', 'k');
    await place(m, 'n1', 'web', WEB);
    const running = m.node('n1').startClientProcess({ args: ['--once', '--timeout', '30'] });
    await m.waitReport('n1', 'web', (r) => r.state === 'waiting');
    await m.setConfig('n1', 'web', 'db.host', 'late');
    const { code } = await running.exited;
    assert.is(code, 0, running.stderr());
    assert.match(m.file(join(m.root, 'etc', 'web', 'web.conf')) ?? '', /host late/);
  }));

test('--once exits 1 after --timeout naming the module and the value it still waits for', () =>
  withMesh(async (m) => {
    m.secret('module/web/api-key', 'k');
    await place(m, 'n1', 'web', WEB);
    const run = await once(m, ['--timeout', '2']);
    assert.is(run.code, 1, run.stderr);
    assert.ok(run.ms >= 2000, `exited after ${run.ms} ms, before the timeout`);
    assert.match(run.stderr, /node-provisioner: web: waiting for config:db\.host \(\S+web\.conf\)/);
    assert.match(run.stderr, /n1: 1 of 1 module\(s\) not applied after 2 s/);
    assert.is((await m.report('n1', 'web'))?.state, 'waiting');
  }));

test('--once exits 1 at once for a module that fails, with the reason, while the others are applied', () =>
  withMesh(async (m) => {
    await place(m, 'n1', 'good', {
      templates: { 'good.conf': 'port ${port:http}\n' },
      provisioning: { files: [{ path: '${dir:config}/good.conf', template: 'good.conf' }] },
    });
    await place(m, 'n1', 'bad', {
      templates: { 'bad.conf': 'x ${nope:thing}\n' },
      provisioning: { files: [{ path: '${dir:config}/bad.conf', template: 'bad.conf' }] },
    });
    const run = await once(m, ['--timeout', '30']);
    assert.is(run.code, 1, run.stderr);
    assert.ok(run.ms < 8000, `a failure waits for nothing, yet it took ${run.ms} ms`);
    assert.match(run.stderr, /node-provisioner: bad: failed: template bad\.conf line 1: \$\{nope:thing\}: unknown kind "nope"/);
    assert.not.match(run.stderr, /^node-provisioner: good:/m);
    assert.match(run.stderr, /1 of 2 module\(s\) not applied\n/);
    assert.is((await m.report('n1', 'good'))?.state, 'applied');
  }));

test('a template’s config key with a typo waits naming the nearest key the module has, in the report and the line; a near key set later brings the hint', () =>
  withMesh(async (m) => {
    const typo = (module: string) => ({
      templates: { [`${module}.conf`]: 'color ${config:colr}\n' },
      provisioning: { files: [{ path: `\${dir:config}/${module}.conf`, template: `${module}.conf` }] },
    });
    await m.setConfig('n1', 'web', 'color', 'blue');
    await m.setConfig('n1', 'web', 'size', 'xl');
    await place(m, 'n1', 'web', typo('web'));
    // Its keys come after its first fill: no hint then, the hint once one near the typo is set.
    await place(m, 'n1', 'late', typo('late'));
    const run = await once(m, ['--timeout', '2']);
    assert.is(run.code, 1, run.stderr);
    assert.match(run.stderr, /node-provisioner: web: waiting for config:colr \(\S+web\.conf\): config:colr: did you mean "color"\?\n/);
    assert.match(run.stderr, /node-provisioner: late: waiting for config:colr \(\S+late\.conf\)\n/);
    assert.is((await m.report('n1', 'web'))?.reason, 'config:colr: did you mean "color"?');
    const before = (await m.kv.applied.get('n1.late'))!.revision;
    const client = m.node('n1').startClientProcess();
    try {
      // Its first report of late written, so the key below comes after that fill: only a change of the module's keys can bring the hint.
      await waitFor('late reported by the running client', async () => (await m.kv.applied.get('n1.late'))!.revision > before);
      await m.setConfig('n1', 'late', 'color', 'red');
      const hinted = await m.waitReport('n1', 'late', (r) => r.reason !== undefined);
      assert.equal([hinted.state, hinted.reason], ['waiting', 'config:colr: did you mean "color"?']);
    } finally {
      client.child.kill('SIGTERM');
      await client.exited;
    }
  }));

test('--once on a node with no plans exits 0 saying so', () =>
  withMesh(async (m) => {
    const run = await once(m, ['--timeout', '10'], 'n9');
    assert.is(run.code, 0, run.stderr);
    assert.match(run.stdout, /n9: no plans for this node/);
  }));

test('--once ends cleanly on SIGTERM while a module waits', () =>
  withMesh(async (m) => {
    m.secret('module/web/api-key', 'k');
    await place(m, 'n1', 'web', WEB);
    const running = m.node('n1').startClientProcess({ args: ['--once', '--timeout', '60'] });
    await m.waitReport('n1', 'web', (r) => r.state === 'waiting');
    const killed = Date.now();
    running.child.kill('SIGTERM');
    const { code, signal } = await running.exited;
    assert.equal({ code, signal }, { code: 0, signal: null }, running.stderr());
    assert.ok(Date.now() - killed < 5000);
  }));

test.run();
