// End to end: knocks, removal, engine and bus restarts, and many modules (DESIGN §7 points 10–12, §9;
// a node of more than WHOLE_READ_MODULES modules reads its config whole before its first fills).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { utimesSync, writeFileSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import type { Report } from '../src/shared/contract/report.ts';
import { startMesh, type Mesh, type ModuleSpec } from './helpers/mesh.ts';
import { waitFor } from './helpers/wait.ts';
import { CONFIG } from '../src/shared/contract/buckets.ts';
import { WHOLE_READ_MODULES } from '../src/client/sources/index.ts';

function module(name: string): ModuleSpec {
  return {
    templates: { [`${name}.conf`]: `name ${name}\nport \${port:http}\nlevel \${config:level}\n`, [`${name}.env`]: `X=1\n` },
    provisioning: {
      files: [
        { path: `\${dir:config}/${name}.conf`, template: `${name}.conf`, mode: 'owned', change: 'restart' },
        { path: `\${dir:config}/${name}.env`, template: `${name}.env`, mode: 'owned', change: 'reload' },
      ],
    },
  };
}

async function withApplied(names: string[], fn: (m: Mesh) => Promise<void>): Promise<void> {
  const m = await startMesh();
  try {
    for (const n of names) {
      await m.publish(n, module(n));
      await m.setConfig('n1', n, 'level', 'info');
      await m.assign('n1', n);
    }
    await m.startClient();
    for (const n of names) await m.waitReport('n1', n, (r) => r.state === 'applied');
    await fn(m);
  } finally {
    await m.close();
  }
}

const conf = (m: Mesh, n: string) => join(m.root, 'etc', n, `${n}.conf`);

test('an owned file edited on disk is put back after a knock', () =>
  withApplied(['web'], async (m) => {
    writeFileSync(conf(m, 'web'), 'edited by hand\n');
    const restarts = m.journal().length;
    const later = new Date(Date.now() + 5000);
    utimesSync(m.socketPath, later, later);
    await waitFor('the file put back', () => m.file(conf(m, 'web')) === 'name web\nport 8080\nlevel info\n');
    await waitFor('the restart of the put-back', () => m.journal().length === restarts + 1);
    // Waited for, not read at once: the engine's own drift watch (DESIGN §14) knocks for the edited
    // module too, and its knock can put the file back before the socket's poll comes round (once, in a loaded pool).
    await waitFor('the knock said', () => m.log.lines.some((l) => l.includes('engine knocked: filling 1 module(s) again')));
  }));

test('an unassigned module reports removed, and its needs and report go', () =>
  withApplied(['web', 'db'], async (m) => {
    const seen: Report[] = [];
    m.nc.subscribe('prov.applied.n1.web', {
      callback: (_e, msg) => {
        seen.push(msg.json() as Report);
      },
    });
    assert.ok(await m.kv.needs.get('n1.web.config.level'));
    await m.unassign('n1', 'web');
    await waitFor('removed published', () => seen.some((r) => r.state === 'removed'));
    await waitFor('the report deleted', async () => (await m.kv.applied.get('n1.web'))?.operation === 'DEL');
    await waitFor('the needs deleted', async () => {
      const need = await m.kv.needs.get('n1.web.config.level');
      const port = await m.kv.needs.get('n1.web.port.http');
      return need?.operation === 'DEL' && port?.operation === 'DEL';
    });
    assert.is((await m.report('n1', 'db'))?.state, 'applied');
    assert.ok((await m.kv.plans.get('n1.web'))?.operation !== 'PUT', 'the seat retired the plan');
  }));

test('every module is filled again when the engine restarts', () =>
  withApplied(['web', 'db'], async (m) => {
    await m.stopEngine();
    unlinkSync(conf(m, 'web'));
    writeFileSync(conf(m, 'db'), 'drifted\n');
    await m.startEngine();
    await waitFor('web written again', () => m.file(conf(m, 'web')) === 'name web\nport 8080\nlevel info\n');
    await waitFor('db put back', () => m.file(conf(m, 'db')) === 'name db\nport 8080\nlevel info\n');
  }));

test('a change while the engine is away is written once it comes back', () =>
  withApplied(['web'], async (m) => {
    await m.stopEngine();
    await m.setConfig('n1', 'web', 'level', 'debug');
    await waitFor('the client saying the engine is away', () => m.log.lines.some((l) => l.includes('engine not reachable')));
    await m.startEngine();
    await waitFor('the new value on disk', () => m.file(conf(m, 'web'))?.includes('level debug'));
  }));

test('after nats-server is stopped (SIGTERM) and restarted, the client resumes and fills from the current values', () =>
  withApplied(['web'], async (m) => {
    await m.nats.stop();
    await m.nats.restart();
    await waitFor('the bus back', () => m.log.lines.some((l) => l.includes('bus back: filling 1 module(s) again')), 20_000);
    await waitFor(
      'a put through the restarted bus',
      async () => {
        try {
          await m.setConfig('n1', 'web', 'level', 'after-restart');
          return true;
        } catch {
          return false;
        }
      },
      20_000,
    );
    await waitFor('the new value on disk', () => m.file(conf(m, 'web'))?.includes('level after-restart'), 40_000);
    await m.waitReport('n1', 'web', (r) => r.state === 'applied');
  }));

/** Whether the needs bucket holds `key` now (a put, not a delete). */
async function holdsNeed(m: Mesh, key: string): Promise<boolean> {
  return (await m.kv.needs.get(key))?.operation === 'PUT';
}

test('needs of a module whose plan went while its client was down are deleted when the client starts again', () =>
  withApplied(['web', 'db'], async (m) => {
    await m.stopClient();
    await m.unassign('n1', 'web');
    await waitFor('the seat retiring the plan', async () => (await m.kv.plans.get('n1.web'))?.operation !== 'PUT');
    assert.ok(await holdsNeed(m, 'n1.web.config.level'), 'left behind while the client was down');
    await m.startClient();
    await waitFor('web’s needs deleted', async () => !(await holdsNeed(m, 'n1.web.config.level')) && !(await holdsNeed(m, 'n1.web.port.http')), 5000);
    assert.ok(await holdsNeed(m, 'n1.db.config.level'), 'a planned module keeps its needs');
    assert.ok(
      m.log.lines.some((l) => l.includes('mesh-provisioner_needs: needs and report of web, which has no plan on n1, deleted')),
      m.log.lines.join('\n'),
    );
  }));

test('a need a plan’s new build no longer names is deleted by the module’s first fill after a restart', () =>
  withApplied(['web'], async (m) => {
    await m.stopClient();
    const spec = module('web');
    await m.publish('web', { ...spec, build: '2', templates: { ...spec.templates, 'web.conf': 'name web\nport ${port:http}\n' } });
    await waitFor('the plan of build 2', async () => ((await m.kv.plans.get('n1.web'))?.json() as { build?: string } | undefined)?.build === '2');
    assert.ok(await holdsNeed(m, 'n1.web.config.level'));
    await m.startClient();
    await m.waitReport('n1', 'web', (r) => r.state === 'applied' && r.build === '2');
    await waitFor('the need of level deleted', async () => !(await holdsNeed(m, 'n1.web.config.level')), 5000);
    assert.ok(await holdsNeed(m, 'n1.web.port.http'), 'a need still named stays');
  }));

test(`more than ${WHOLE_READ_MODULES} modules on one node all reach applied, their config read whole before the first fills: no get`, async () => {
  const m = await startMesh();
  try {
    const count = WHOLE_READ_MODULES + 1;
    const names = Array.from({ length: count }, (_, i) => `m${i}`);
    // One archive shared by all: templates may not name their module, so this one names none.
    const shared = module('shared');
    for (const n of names) {
      await m.publish(n, { ...shared, provisioning: { files: [{ path: `\${dir:config}/${n}.conf`, template: 'shared.conf', change: 'restart' }] } });
      await m.setConfig('n1', n, 'level', n);
      await m.assign('n1', n);
    }
    let gets = 0;
    // The modules' keys only: the client's login check reads a key of its own (login-check.ts).
    m.nc.subscribe(`$JS.API.DIRECT.GET.KV_${CONFIG}.$KV.${CONFIG}.n1.*.level`, { callback: () => void gets++ });
    await m.nc.flush();
    await m.startClient();
    await waitFor(
      `${count} applied`,
      async () => {
        let applied = 0;
        for (const n of names) if ((await m.report('n1', n))?.state === 'applied') applied++;
        return applied === count;
      },
      60_000,
    );
    assert.is(m.file(join(m.root, 'etc', `m${count - 1}`, `m${count - 1}.conf`)), `name shared\nport 8080\nlevel m${count - 1}\n`);
    assert.is(gets, 0, 'no module key read by get');
    assert.ok(
      m.log.lines.some((l) => l.includes('reading n1.> whole once (before the first fills)')),
      m.log.lines.slice(0, 20).join('\n'),
    );
  } finally {
    await m.close();
  }
});

test.run();
