// End to end: plans → archive → fill → engine → files on disk and reports on the bus (DESIGN §7, §9).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import { withMesh, type Mesh } from './helpers/mesh.ts';
import { sleep, waitFor } from './helpers/wait.ts';

const WEB = {
  templates: {
    'web.conf': 'listen ${port:http}\nhost ${config:db.host}\nkey ${secret:api-key}\n# keep ${HOME} and $${config:x}\n',
    'web.env': 'MODE=${config:mode}\n',
  },
  provisioning: {
    files: [
      { path: '${dir:config}/web.conf', template: 'web.conf', mode: 'owned', change: 'restart' },
      { path: '${dir:config}/web.env', template: 'web.env', mode: 'owned', change: 'restart' },
    ],
    secrets: [{ name: 'api-key' }],
  },
};

function confPath(m: Mesh, module: string, file: string): string {
  return join(m.root, 'etc', module, file);
}

test('a module is filled, written by the engine with its secret, and reported applied', () =>
  withMesh(async (m) => {
    await m.publish('web', WEB);
    await m.setConfig('n1', 'web', 'db.host', 'db.internal');
    await m.setConfig('n1', 'web', 'mode', 'production');
    await m.assign('n1', 'web');
    m.secret('module/web/api-key', 's3cret\n');
    await m.startClient();
    const report = await m.waitReport('n1', 'web', (r) => r.state === 'applied');
    assert.is(m.file(confPath(m, 'web', 'web.conf')), 'listen 8080\nhost db.internal\nkey s3cret\n# keep ${HOME} and ${config:x}\n');
    assert.is(m.file(confPath(m, 'web', 'web.env')), 'MODE=production\n');
    assert.equal(report.files.map((f) => f.action).sort(), ['written', 'written']);
    assert.ok(report.files.every((f) => /^sha256:[0-9a-f]{64}$/.test(f.digest)));
    assert.equal(m.journal().map((l) => l.split(' ').slice(1).join(' ')), ['restart web']);
    const need = await m.kv.needs.get('n1.web.config.db=2Ehost');
    assert.equal(need?.json(), { node: 'n1', module: 'web', kind: 'config', name: 'db.host', files: [confPath(m, 'web', 'web.conf')], met: true });
  }));

test('five config keys changed together rewrite the file once and restart once', () =>
  withMesh(async (m) => {
    const keys = ['a', 'b', 'c', 'd', 'e'];
    await m.publish('app', {
      templates: { 'app.conf': keys.map((k) => `${k}=\${config:${k}}`).join('\n') + '\n' },
      provisioning: { files: [{ path: '${dir:config}/app.conf', template: 'app.conf', change: 'restart' }] },
    });
    for (const k of keys) await m.setConfig('n1', 'app', k, '1');
    await m.assign('n1', 'app');
    await m.startClient();
    await m.waitReport('n1', 'app', (r) => r.state === 'applied');
    assert.is(m.journal().length, 1);
    await Promise.all(keys.map((k) => m.setConfig('n1', 'app', k, '2')));
    await waitFor('file rewritten', () => m.file(confPath(m, 'app', 'app.conf')) === 'a=2\nb=2\nc=2\nd=2\ne=2\n');
    await sleep(300);
    await m.client!.idle();
    assert.is(m.journal().length, 2, `journal: ${m.journal().join(' | ')}`);
  }));

test('a missing value gives waiting naming it, while the module’s other file is written', () =>
  withMesh(async (m) => {
    await m.publish('web', WEB);
    await m.setConfig('n1', 'web', 'mode', 'dev');
    m.secret('module/web/api-key', 'k');
    await m.assign('n1', 'web');
    await m.startClient();
    const r = await m.waitReport('n1', 'web', (x) => x.state === 'waiting');
    assert.equal(r.waiting, [{ kind: 'config', name: 'db.host', files: [confPath(m, 'web', 'web.conf')] }]);
    assert.is(m.file(confPath(m, 'web', 'web.env')), 'MODE=dev\n');
    assert.is(m.file(confPath(m, 'web', 'web.conf')), undefined);
    assert.equal(r.files.map((f) => f.path), [confPath(m, 'web', 'web.env')]);
    const need = await m.kv.needs.get('n1.web.config.db=2Ehost');
    assert.is((need?.json() as { met: boolean }).met, false);
    await m.setConfig('n1', 'web', 'db.host', 'h');
    await m.waitReport('n1', 'web', (x) => x.state === 'applied');
    assert.match(m.file(confPath(m, 'web', 'web.conf')) ?? '', /host h/);
  }));

test('a change fills only the modules that name it', () =>
  withMesh(async (m) => {
    for (const name of ['a', 'b']) {
      await m.publish(name, {
        templates: { 'x.conf': `v=\${config:v}\n` },
        provisioning: { files: [{ path: '${dir:config}/x.conf', template: 'x.conf', change: 'restart' }] },
      });
      await m.setConfig('n1', name, 'v', '1');
      await m.assign('n1', name);
    }
    await m.startClient();
    await m.waitReport('n1', 'a', (r) => r.state === 'applied');
    await m.waitReport('n1', 'b', (r) => r.state === 'applied');
    await m.client!.idle();
    const before = m.journal().length;
    await m.setConfig('n1', 'a', 'v', '2');
    await m.setConfig('n1', 'b', 'unused', 'x');
    await waitFor('a rewritten', () => m.file(confPath(m, 'a', 'x.conf')) === 'v=2\n');
    await sleep(200);
    await m.client!.idle();
    assert.equal(m.journal().slice(before).map((l) => l.split(' ').slice(1).join(' ')), ['restart a']);
  }));

test.run();
