// End to end: plans → archive → fill → engine → files on disk and reports on the bus (DESIGN §7, §9).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import { withMesh, type Mesh } from './helpers/mesh.ts';
import { waitFor } from './helpers/wait.ts';

/** The settle window of the test that changes five keys at once. */
const SETTLE_MS = 100;

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

/** A journal line without its time: `restart web`. */
const action = (line: string) => line.split(' ').slice(1).join(' ');

/** The fill requests of `module` the in-process engine answers from now on: it logs `info fill <module> <build>: …` for each. */
function engineFills(m: Mesh, module: string) {
  const mark = m.engineLog.lines.length;
  const lines = () => m.engineLog.lines.slice(mark).filter((l) => l.includes(` info fill ${module} `));
  return { lines, since: () => lines().length };
}

test('a module is filled, written by the engine with its secret, and reported applied', () =>
  withMesh(
    async (m) => {
      // The secret is there before the engine watches the dir: a secret written later knocks, and the
      // fill of that knock would report the files `unchanged` in place of the first fill's `written`.
      m.secret('module/web/api-key', 's3cret\n');
      await m.startEngine();
      await m.publish('web', WEB);
      await m.setConfig('n1', 'web', 'db.host', 'db.internal');
      await m.setConfig('n1', 'web', 'mode', 'production');
      await m.assign('n1', 'web');
      await m.startClient();
      const report = await m.waitReport('n1', 'web', (r) => r.state === 'applied');
      assert.is(m.file(confPath(m, 'web', 'web.conf')), 'listen 8080\nhost db.internal\nkey s3cret\n# keep ${HOME} and ${config:x}\n');
      assert.is(m.file(confPath(m, 'web', 'web.env')), 'MODE=production\n');
      assert.equal(report.files.map((f) => f.action).sort(), ['written', 'written']);
      assert.ok(report.files.every((f) => /^sha256:[0-9a-f]{64}$/.test(f.digest)));
      assert.equal(m.journal().map(action), ['restart web']);
      const need = await m.kv.needs.get('n1.web.config.db=2Ehost');
      assert.equal(need?.json(), { node: 'n1', module: 'web', kind: 'config', name: 'db.host', files: [confPath(m, 'web', 'web.conf')], met: true });
    },
    { engine: false },
  ));

test('five config keys changed together rewrite the file once and restart once', () =>
  withMesh(async (m) => {
    const keys = ['a', 'b', 'c', 'd', 'e'];
    await m.publish('app', {
      templates: { 'app.conf': keys.map((k) => `${k}=\${config:${k}}`).join('\n') + '\n' },
      provisioning: { files: [{ path: '${dir:config}/app.conf', template: 'app.conf', change: 'restart' }] },
    });
    for (const k of keys) await m.setConfig('n1', 'app', k, '1');
    await m.assign('n1', 'app');
    // A settle window wide enough that five puts at once land in it on a loaded machine too.
    await m.startClient(SETTLE_MS);
    await m.waitReport('n1', 'app', (r) => r.state === 'applied');
    assert.is(m.journal().length, 1);
    await m.idle();
    const fills = engineFills(m, 'app');
    await Promise.all(keys.map((k) => m.setConfig('n1', 'app', k, '2')));
    await waitFor('file rewritten', () => m.file(confPath(m, 'app', 'app.conf')) === 'a=2\nb=2\nc=2\nd=2\ne=2\n');
    await m.idle();
    // A later change, applied: any second fill of the five would have come before it.
    await m.setConfig('n1', 'app', 'a', '3');
    await waitFor('the later change on disk', () => m.file(confPath(m, 'app', 'app.conf')) === 'a=3\nb=2\nc=2\nd=2\ne=2\n');
    await m.idle();
    assert.is(fills.since(), 2, `the engine's fills of app: ${fills.lines().join(' | ')}`);
    assert.equal(m.journal().map(action), ['restart app', 'restart app', 'restart app']);
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
    assert.equal(
      r.files.map((f) => f.path),
      [confPath(m, 'web', 'web.env')],
    );
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
    await m.idle();
    const before = m.journal().length;
    const fillsOfB = engineFills(m, 'b');
    // The config watch delivers in order: whatever b's unused key would schedule is scheduled before
    // a's fill, so it has run by the time the client is idle after a is rewritten.
    await m.setConfig('n1', 'b', 'unused', 'x');
    await m.setConfig('n1', 'a', 'v', '2');
    await waitFor('a rewritten', () => m.file(confPath(m, 'a', 'x.conf')) === 'v=2\n');
    await m.idle();
    // A later change b names, applied: the only fill of b since the mark must be this one.
    await m.setConfig('n1', 'b', 'v', '2');
    await waitFor('b rewritten', () => m.file(confPath(m, 'b', 'x.conf')) === 'v=2\n');
    await m.idle();
    assert.is(fillsOfB.since(), 1, `the engine's fills of b: ${fillsOfB.lines().join(' | ')}`);
    assert.equal(m.journal().slice(before).map(action), ['restart a', 'restart b']);
  }));

test.run();
