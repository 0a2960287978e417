// Drift end to end (DESIGN §14, issue 33 item 3, the client's side): a file of a module edited by
// hand is knocked for by the engine, sent again by the client (the client process, the bundle) and put
// back, its report naming it `restored` and counting it in `drift: {count, last}`; a file changed five
// times in 60 s is left, the module failed with the engine's reason.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { LEFT_REASON } from '../src/shared/contract/fill-protocol.ts';
import { ensureBuilt } from './helpers/bundle.ts';
import { withMesh, type ModuleSpec } from './helpers/mesh.ts';
import { waitFor } from './helpers/wait.ts';

test.before(() => ensureBuilt('client'));

const MODULE = 'web';
const FILLED = 'port=8080\n';

const SPEC: ModuleSpec = {
  build: '1',
  templates: { 'web.conf': 'port=${port:http}\n' },
  provisioning: { files: [{ path: '${dir:config}/web.conf', template: 'web.conf' }] },
};

test('a file edited by hand is put back within a second, its report saying restored and counting each restore; the fifth change in 60 s is left and the module failed', () =>
  withMesh(async (m) => {
    await m.publish(MODULE, SPEC);
    await m.assign('n1', MODULE);
    m.startClientProcess();
    await m.waitReport('n1', MODULE, (r) => r.state === 'applied');
    const path = join(m.root, 'etc', MODULE, 'web.conf');
    assert.is(readFileSync(path, 'utf8'), FILLED);
    for (let edit = 1; edit <= 4; edit++) {
      writeFileSync(path, `edited ${edit}\n`);
      const at = Date.now();
      await waitFor(`edit ${edit} put back`, () => readFileSync(path, 'utf8') === FILLED, 5000);
      assert.ok(Date.now() - at < 2000, `edit ${edit} put back after ${Date.now() - at} ms`);
      // The report is written only when it changes: the count makes each restore a report of its own.
      const report = await m.waitReport('n1', MODULE, (r) => r.state === 'applied' && r.files.some((f) => f.action === 'restored' && f.drift?.count === edit));
      const drift = report.files.find((f) => f.path === path)!.drift!;
      assert.ok(Date.parse(drift.last) >= at - 1000 && Date.parse(drift.last) <= Date.now(), `drift.last ${drift.last} is the time of edit ${edit}'s restore`);
    }
    writeFileSync(path, 'edited 5\n');
    const failed = await m.waitReport('n1', MODULE, (r) => r.state === 'failed');
    assert.ok(failed.reason?.includes(LEFT_REASON), failed.reason);
    assert.ok(
      failed.files.some((f) => f.action === 'left' && f.drift?.count === 4),
      'a file left keeps the count of its restores',
    );
    assert.is(readFileSync(path, 'utf8'), 'edited 5\n', 'the fifth change is left as it is');
  }));

test.run();
