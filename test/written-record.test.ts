// The client's record of written keys (src/client/report/written.ts) is saved when it changes, and
// only then: every report of a module puts the same key again, which must not rewrite the record.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readRecord, recordPath, WrittenRecord } from '../src/client/report/written.ts';
import { memoryLogger } from '../src/shared/cli/log.ts';

test('a key written again leaves the saved record as it is; a new key saves it', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'written-record-'));
  try {
    const log = memoryLogger();
    const record = new WrittenRecord(dir, 'n1', log);
    record.report('web', true);
    record.need('n1.web.config.a', '{"x":1}');
    await record.flush();
    const path = recordPath(dir, 'n1');
    assert.ok(existsSync(path), 'the first report and need are saved');
    // Removed behind the record's back: a save from here on would make it again.
    rmSync(path);
    record.report('web', true);
    record.need('n1.web.config.a', '{"x":1}');
    await record.flush();
    assert.not.ok(existsSync(path), 'the same report and need again: nothing saved');
    record.need('n1.web.config.a', '{"x":2}');
    await record.flush();
    assert.equal((await readRecord(dir, 'n1', log))?.needs.get('n1.web.config.a'), '{"x":2}', "a need's new bytes are saved");
    rmSync(path);
    record.report('api', true);
    await record.flush();
    assert.equal([...((await readRecord(dir, 'n1', log))?.applied ?? [])].sort(), ['api', 'web'], 'a new report is saved, with the ones before');
    assert.equal(log.lines, []);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
