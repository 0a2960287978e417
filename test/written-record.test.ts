// The client's record of written keys (src/client/report/written.ts) is saved when it changes, and
// only then: every report of a module puts the same key again, which must not rewrite the record.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readRecord, recordPath, WrittenRecord } from '../src/client/report/written.ts';
import { memoryLogger } from '../src/shared/cli/log.ts';
import { RECORD_SAVE_MS, RecordFile } from '../src/client/report/record-file.ts';
import { waitFor } from './helpers/wait.ts';

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

test('a record file is saved within the time its change asks, or sooner when another change asks sooner, and on flush', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'record-file-'));
  try {
    const path = join(dir, 'r', 'n1.json');
    let saves = 0;
    const file = new RecordFile({ path, what: 'the record', instead: 'reads it whole' }, () => (saves++, '{}'), memoryLogger());
    // A change that may wait a minute (a watch's progress alone) is not saved at once.
    file.changed(60_000);
    await new Promise((r) => setTimeout(r, 3 * RECORD_SAVE_MS));
    assert.is(saves, 0, 'not saved yet');
    // A change of the record's content is saved within RECORD_SAVE_MS all the same, once.
    file.changed();
    await waitFor('the record saved', () => existsSync(path) || undefined, 2000);
    file.changed(60_000);
    await file.flush();
    assert.is(saves, 2, 'the second change saved by the flush, not left to its minute');
    await file.flush();
    assert.is(saves, 2, 'nothing pending: nothing saved again');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
