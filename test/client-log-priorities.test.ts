// The client bundle's log priorities under systemd (issue 20 item 11, README "Log priorities"): a
// file the engine refused is a warning (`journalctl -p warning` shows it), and a module's waiting
// line names what it waits for from the first one on. Run as a process with JOURNAL_STREAM set, as
// systemd starts it, so each line carries the sd-daemon prefix journald keeps.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ensureBuilt } from './helpers/bundle.ts';
import { withMesh, type ModuleSpec } from './helpers/mesh.ts';

test.before(() => ensureBuilt('client'));

const SECRET: ModuleSpec = {
  templates: { 'sec.conf': 'key=${secret:api-key}\n' },
  provisioning: { files: [{ path: '${dir:config}/sec.conf', template: 'sec.conf', change: 'restart' }], secrets: [{ name: 'api-key' }] },
};
const CONFIG: ModuleSpec = {
  templates: { 'cfg.conf': 'host ${config:db.host}\nport ${port:http}\n' },
  provisioning: { files: [{ path: '${dir:config}/cfg.conf', template: 'cfg.conf', change: 'restart' }] },
};

test('a file the engine refused is logged at <4> warning; the first waiting line names the value waited for, at <6> info', () =>
  withMesh(async (m) => {
    await m.publish('sec', SECRET);
    await m.publish('cfg', CONFIG);
    await m.assign('n1', 'sec');
    await m.assign('n1', 'cfg');
    const client = m.startClientProcess({ env: { JOURNAL_STREAM: '8:12345' } });
    // The vault holds no module/sec/api-key: the engine refuses the file and the module waits for a knock.
    await m.waitReport('n1', 'sec', (r) => r.state === 'waiting' && r.files.some((f) => f.action === 'refused'));
    await m.waitReport('n1', 'cfg', (r) => r.state === 'waiting');
    // A line is written once its report landed: wait for both.
    await client.waitForLog(/n1\.sec: waiting/);
    await client.waitForLog(/n1\.cfg: waiting/);
    const lines = client.stderr().split('\n');
    const sec = lines.filter((l) => l.includes('n1.sec: waiting'));
    assert.ok(sec.length > 0, client.stderr());
    for (const line of sec)
      assert.match(
        line,
        /^<4>n1\.sec: waiting \(engine refused \S+sec\.conf \(.*api-key.*\); waiting for a knock \(the engine starting, or its socket touched\)\)$/,
        line,
      );
    const cfg = lines.filter((l) => l.includes('n1.cfg: waiting'));
    assert.equal(cfg, ['<6>n1.cfg: waiting for config:db.host'], client.stderr());
  }));

test.run();
