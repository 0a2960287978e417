// The reference engine removes the files no declaration names any more (DESIGN §7.12): an owned
// file deleted, a managed block cut out of a shared file, a seed left; each journaled, across restarts.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createEngineClient, type EngineClient } from '../src/client/handoff/fill-socket.ts';
import { startEngine, type RunningEngine } from '../src/engine/start.ts';
import { WrittenRecord } from '../src/engine/record.ts';
import { contentDigest, type FillFile, type FillReply } from '../src/shared/contract/fill-protocol.ts';
import { memoryLogger } from '../src/shared/cli/log.ts';
import { waitFor } from './helpers/wait.ts';
import { tempDir } from './helpers/temp.ts';

type Rig = {
  root: string;
  journal: string;
  declare: string;
  client: EngineClient;
  engine?: RunningEngine;
  start(): Promise<void>;
  stop(): Promise<void>;
  declareNow(declaration: unknown): void;
  cleanup(): Promise<void>;
};

function rig(): Rig {
  const dir = tempDir('engine-removal-');
  const socketPath = join(dir, 'run', 'fill.sock');
  const r: Rig = {
    root: join(dir, 'root'),
    journal: join(dir, 'journal.log'),
    declare: join(dir, 'declare.json'),
    client: createEngineClient({ socketPath, log: memoryLogger(), pollMs: 30 }),
    async start() {
      r.engine = await startEngine({ socketPath, root: r.root, journalFile: r.journal, declareFile: r.declare, log: memoryLogger(), declarePollMs: 30 });
    },
    async stop() {
      await r.engine?.close();
      r.engine = undefined;
    },
    declareNow: (declaration) => writeFileSync(r.declare, JSON.stringify(declaration)),
    async cleanup() {
      r.client.close();
      await r.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  mkdirSync(r.root, { recursive: true });
  return r;
}

function file(path: string, content: string, more: Partial<FillFile> = {}): FillFile {
  return { path, content, digest: contentDigest(content), mode: 'owned', change: 'none', ...more };
}

function actions(reply: FillReply): string[] {
  assert.ok(reply.ok, JSON.stringify(reply));
  return reply.ok ? reply.files.map((f) => (f.action === 'refused' ? `refused: ${f.reason}` : f.action)) : [];
}

/** The journal's lines without their times. */
function journal(r: Rig): string[] {
  return existsSync(r.journal)
    ? readFileSync(r.journal, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => l.split(' ').slice(1).join(' '))
    : [];
}

test('a path dropped from the declaration is removed, the path still declared stays, and the journal says so', async () => {
  const r = rig();
  try {
    const [a, b] = [join(r.root, 'etc/web/a.conf'), join(r.root, 'etc/web/b.conf')];
    r.declareNow([a, b]);
    await r.start();
    assert.equal(actions(await r.client.fill({ module: 'web', build: '1', files: [file(a, 'a=1\n'), file(b, 'b=1\n')] })), ['written', 'written']);
    r.declareNow([b]);
    await waitFor('a.conf removed', () => !existsSync(a), 5000);
    assert.is(readFileSync(b, 'utf8'), 'b=1\n');
    await waitFor('the journal line', () => journal(r).length > 0, 5000);
    assert.equal(journal(r), [`remove web ${a}`]);
    // The record beside the journal comes to name only b.conf (saved once the removal is done).
    const recorded = () => (JSON.parse(readFileSync(`${r.journal}.files.json`, 'utf8')) as { files: { path: string }[] }).files.map((f) => f.path);
    await waitFor('the record without a.conf', () => recorded().length === 1, 5000);
    assert.equal(recorded(), [b]);
  } finally {
    await r.cleanup();
  }
});

test("a module's managed block is cut from a shared file when its declaration goes, and the other block and the host's lines stay byte-exact", async () => {
  const r = rig();
  try {
    const shared = join(r.root, 'etc/profile.d/mesh.sh');
    const own = join(r.root, 'etc/web/web.conf');
    mkdirSync(join(r.root, 'etc/profile.d'), { recursive: true });
    // The host's own lines, no trailing newline, and a non-UTF-8 byte: nothing of them may move.
    writeFileSync(shared, Buffer.from('# host\nexport HOST=1 \xff', 'latin1'));
    r.declareNow({ web: [shared, own], api: [shared] });
    await r.start();
    const block = (text: string) => file(shared, text, { mode: 'managed', comment: '#' });
    assert.equal(actions(await r.client.fill({ module: 'web', build: '1', files: [block('export WEB=1\n'), file(own, 'port=80\n')] })), ['written', 'written']);
    assert.equal(actions(await r.client.fill({ module: 'api', build: '1', files: [block('export API=1\n')] })), ['written']);
    const before = readFileSync(shared);
    const webBlock = Buffer.from('# BEGIN web\nexport WEB=1\n# END web\n');
    const at = before.indexOf(webBlock);
    assert.ok(at > 0, before.toString('latin1'));

    r.declareNow({ api: [shared] });
    await waitFor('web.conf removed', () => !existsSync(own), 5000);
    await waitFor('two journal lines', () => journal(r).length === 2, 5000);
    const after = readFileSync(shared);
    assert.ok(after.equals(Buffer.concat([before.subarray(0, at), before.subarray(at + webBlock.length)])), after.toString('latin1'));
    assert.ok(after.includes(Buffer.from('# BEGIN api\nexport API=1\n# END api\n')));
    assert.equal(journal(r).sort(), [`cut web ${shared}`, `remove web ${own}`].sort());
  } finally {
    await r.cleanup();
  }
});

test('a declaration changed while the engine was down is acted on at start, from the record it kept', async () => {
  const r = rig();
  try {
    const [a, seed] = [join(r.root, 'a.conf'), join(r.root, 'seed.key')];
    r.declareNow({ web: [a, seed] });
    await r.start();
    assert.equal(actions(await r.client.fill({ module: 'web', build: '1', files: [file(a, 'a\n'), file(seed, 'k\n', { mode: 'seed' })] })), [
      'written',
      'written',
    ]);
    await r.stop();
    r.declareNow({});
    await r.start();
    assert.not.ok(existsSync(a));
    // A seed is the program's once written: left, and journaled as left.
    assert.is(readFileSync(seed, 'utf8'), 'k\n');
    assert.equal(journal(r).sort(), [`leave web ${seed}`, `remove web ${a}`].sort());
  } finally {
    await r.cleanup();
  }
});

test('a burst of requests is recorded whole, the record saved once for the burst, and every reply waits for its save', async () => {
  const dir = tempDir('engine-record-');
  try {
    const state = join(dir, 'state.json');
    const record = await WrittenRecord.load(state, memoryLogger());
    const saves: string[] = [];
    const done: string[] = [];
    record.note({ module: 'a', path: '/a', mode: 'owned' });
    const first = record.saved(false).then(() => done.push('a'));
    record.note({ module: 'b', path: '/b', mode: 'owned' });
    const second = record.saved(false).then(() => done.push('b'));
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.not.ok(existsSync(state), 'nothing saved while requests are queued');
    assert.equal(done, [], 'no reply before its save');
    record.note({ module: 'c', path: '/c', mode: 'owned' });
    await record.saved(true).then(() => saves.push(readFileSync(state, 'utf8')));
    await Promise.all([first, second]);
    assert.equal(done.sort(), ['a', 'b']);
    assert.equal(
      (JSON.parse(saves[0]!) as { files: { module: string }[] }).files.map((f) => f.module),
      ['a', 'b', 'c'],
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('two hundred requests sent at once with a declaration are all written and recorded, and the declared paths removed when it goes', async () => {
  const r = rig();
  try {
    const paths = Array.from({ length: 200 }, (_, i) => join(r.root, `m${i}`, 'f.conf'));
    r.declareNow(paths);
    await r.start();
    const replies = await Promise.all(paths.map((p, i) => r.client.fill({ module: `m${i}`, build: '1', files: [file(p, `v${i}\n`)] })));
    assert.equal(new Set(replies.flatMap(actions)), new Set(['written']));
    const recorded = (JSON.parse(readFileSync(`${r.journal}.files.json`, 'utf8')) as { files: { path: string }[] }).files.map((f) => f.path);
    assert.equal(recorded.sort(), [...paths].sort());
    r.declareNow([]);
    await waitFor('the undeclared files removed', () => paths.every((p) => !existsSync(p)), 10_000);
  } finally {
    await r.cleanup();
  }
});

test('a declaration rewritten in place at once, same size, is seen by the next request', async () => {
  const r = rig();
  try {
    const [one, two] = [join(r.root, 'one.conf'), join(r.root, 'two.conf')];
    r.declareNow([one]);
    await r.start();
    assert.equal(actions(await r.client.fill({ module: 'web', build: '1', files: [file(one, '1\n')] })), ['written']);
    // Same length, same inode, within a millisecond: the engine keeps what it parsed only while the file's stat stands for it.
    writeFileSync(r.declare, JSON.stringify([two]));
    assert.equal(actions(await r.client.fill({ module: 'web', build: '1', files: [file(two, '2\n')] })), ['written']);
    assert.equal(actions(await r.client.fill({ module: 'web', build: '2', files: [file(one, '1b\n')] })), ['refused: not declared']);
  } finally {
    await r.cleanup();
  }
});

test('a declaration file that cannot be read or is out of shape removes nothing', async () => {
  const r = rig();
  try {
    const a = join(r.root, 'a.conf');
    r.declareNow([a]);
    await r.start();
    assert.equal(actions(await r.client.fill({ module: 'web', build: '1', files: [file(a, 'a\n')] })), ['written']);
    writeFileSync(r.declare, '[half');
    await new Promise((s) => setTimeout(s, 200));
    rmSync(r.declare);
    await new Promise((s) => setTimeout(s, 200));
    assert.is(readFileSync(a, 'utf8'), 'a\n');
    assert.equal(journal(r), []);
    // An empty list is a declaration that names nothing: then the file goes.
    r.declareNow([]);
    await waitFor('a.conf removed', () => !existsSync(a), 5000);
  } finally {
    await r.cleanup();
  }
});

test('without --declare every path is declared and nothing is recorded or removed', async () => {
  const dir = tempDir('engine-removal-');
  const socketPath = join(dir, 'fill.sock');
  const client = createEngineClient({ socketPath, log: memoryLogger(), pollMs: 30 });
  const engine = await startEngine({ socketPath, root: dir, journalFile: join(dir, 'journal.log'), log: memoryLogger() });
  try {
    assert.equal(actions(await client.fill({ module: 'web', build: '1', files: [file(join(dir, 'a.conf'), 'a\n')] })), ['written']);
    assert.not.ok(existsSync(join(dir, 'journal.log.files.json')));
  } finally {
    client.close();
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a module may write only what its own declaration names when the declaration is per module', async () => {
  const r = rig();
  try {
    const a = join(r.root, 'a.conf');
    r.declareNow({ api: [a] });
    await r.start();
    assert.equal(actions(await r.client.fill({ module: 'web', build: '1', files: [file(a, 'a\n')] })), ['refused: not declared']);
    assert.equal(actions(await r.client.fill({ module: 'api', build: '1', files: [file(a, 'a\n')] })), ['written']);
  } finally {
    await r.cleanup();
  }
});

test.run();
