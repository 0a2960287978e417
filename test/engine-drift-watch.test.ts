// Drift's parts in the test's own process (DESIGN §14): the window of five changes on an injected
// clock, the stat poll that stands in for a directory that cannot be watched, and the inotify
// watches an engine holds — one per directory of a file it wrote, none left after a removal or
// its close.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { chmodSync, mkdirSync, unwatchFile, watchFile, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DriftMemory } from '../src/engine/drift-memory.ts';
import type { Held } from '../src/engine/drift-mark.ts';
import { DriftWatches, type WatchCalls } from '../src/engine/drift-watch.ts';
import { startEngine } from '../src/engine/start.ts';
import { contentDigest, DRIFT_LIMIT, DRIFT_WINDOW_MS, type FillFile } from '../src/shared/contract/fill-protocol.ts';
import { memoryLogger } from '../src/shared/cli/log.ts';
import { LineClient } from './helpers/fill-line-client.ts';
import { sleep, waitFor } from './helpers/wait.ts';
import { tempDir } from './helpers/temp.ts';

function held(digest: string): Held {
  return { module: 'web', path: '/etc/web.conf', target: '/root/etc/web.conf', kind: 'owned', comment: '', digest, mode: 0o644 };
}

test('the fifth change within 60 s is left; changes older than the window do not count; another content starts again', () => {
  let now = 1_000_000;
  const memory = new DriftMemory(() => now);
  memory.hold(held('a'));
  for (let i = 1; i < DRIFT_LIMIT; i++) assert.is(memory.judge(held('a')), 'restored', `change ${i}`);
  now += DRIFT_WINDOW_MS;
  // The first four are 60 s old now: out of the window.
  assert.is(memory.judge(held('a')), 'restored');
  now += 1000;
  for (let i = 2; i < DRIFT_LIMIT; i++) assert.is(memory.judge(held('a')), 'restored', `change ${i} of the new window`);
  assert.is(memory.judge(held('a')), 'left');
  assert.ok(memory.isLeft(held('a')));
  assert.is(memory.watched('web\n/etc/web.conf'), undefined, 'a file left is not watched');

  assert.not.ok(memory.isLeft(held('b')), 'another content is not left');
  assert.is(memory.judge(held('b')), 'written');
  memory.hold(held('b'));
  assert.ok(memory.watched('web\n/etc/web.conf'));
  for (let i = 1; i < DRIFT_LIMIT; i++) assert.is(memory.judge(held('b')), 'restored', `change ${i} of the new content`);
});

test('a directory that cannot be watched has its files polled by stat: a chmod is seen once, and a file removed from the watch is polled no more', async () => {
  const dir = tempDir('drift-poll-');
  const path = join(dir, 'a.conf');
  writeFileSync(path, 'a\n');
  const changed: string[][] = [];
  const cannot: string[] = [];
  // fs.watch failing as it does once inotify's watches are used up; the stat polls counted.
  const polls = new Set<unknown>();
  const calls: WatchCalls = {
    watch: (() => {
      throw Object.assign(new Error('ENOSPC: System limit for number of file watchers reached'), { code: 'ENOSPC' });
    }) as unknown as WatchCalls['watch'],
    watchFile: ((file: string, opts: object, listener: () => void) => {
      polls.add(listener);
      return watchFile(file, opts, listener);
    }) as WatchCalls['watchFile'],
    unwatchFile: ((file: string, listener: () => void) => {
      polls.delete(listener);
      unwatchFile(file, listener);
    }) as WatchCalls['unwatchFile'],
  };
  const watches = new DriftWatches(
    (keys) => changed.push([...keys]),
    (d) => cannot.push(d),
    { pollMs: 20, calls },
  );
  try {
    watches.add(path, 'web\na.conf');
    assert.equal(cannot, [dir]);
    // The poll takes its first stat on its first tick.
    await sleep(100);
    chmodSync(path, 0o600);
    await waitFor('the chmod seen by the poll', () => changed.length > 0, 2000);
    assert.equal(changed[0], ['web\na.conf']);
    watches.remove(path, 'web\na.conf');
    const seen = changed.length;
    chmodSync(path, 0o640);
    await sleep(200);
    assert.is(changed.length, seen, 'polled no more');
    assert.is(polls.size, 0, 'its poll stopped');
    // Watched again: one poll, so one call a change (a poll left behind by the removal would make two).
    watches.add(path, 'db\na.conf');
    await sleep(100);
    chmodSync(path, 0o600);
    await waitFor('the chmod seen again', () => changed.length > seen, 2000);
    await sleep(200);
    assert.equal(changed.slice(seen), [['db\na.conf']]);
    assert.is(polls.size, 1);
  } finally {
    watches.close();
    rmSync(dir, { recursive: true, force: true });
  }
  assert.is(polls.size, 0, 'closed');
});

/** The inotify watches this process holds (each a `inotify wd:` line of its inotify descriptor's fdinfo). */
function inotifyWatches(): number {
  let count = 0;
  for (const fd of readdirSync('/proc/self/fd')) {
    let link = '';
    try {
      link = readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      continue;
    }
    if (link !== 'anon_inode:inotify') continue;
    count += readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('inotify wd:')).length;
  }
  return count;
}

function file(path: string, content: string, more: Partial<FillFile> = {}): FillFile {
  return { path, content, digest: contentDigest(content), mode: 'owned', change: 'none', ...more };
}

test("the engine watches one directory per directory of its files, a seed's not; a removal and the engine's close leave none", async () => {
  const dir = tempDir('drift-watches-');
  const root = join(dir, 'root');
  const declare = join(dir, 'declare.json');
  mkdirSync(root);
  const paths = [join(root, 'etc/web/a.conf'), join(root, 'etc/web/b.conf'), join(root, 'etc/hosts'), join(root, 'var/seed.db')];
  writeFileSync(declare, JSON.stringify(paths));
  const baseline = inotifyWatches();
  const log = memoryLogger();
  const engine = await startEngine({
    socketPath: join(dir, 'fill.sock'),
    root,
    declareFile: declare,
    journalFile: join(dir, 'journal.log'),
    log,
    declarePollMs: 30,
  });
  const c = await LineClient.connect(join(dir, 'fill.sock'));
  try {
    const [a, b, hosts, seed] = paths as [string, string, string, string];
    assert.equal(await c.fill('web', [file(a, 'a\n'), file(b, 'b\n'), file(hosts, 'h\n', { mode: 'managed' }), file(seed, 's\n', { mode: 'seed' })]), [
      'written',
      'written',
      'written',
      'written',
    ]);
    assert.is(inotifyWatches() - baseline, 2, 'etc/web and etc (var holds a seed alone)');

    writeFileSync(declare, JSON.stringify([a, seed]));
    await waitFor(
      'b.conf and the hosts block removed',
      () => readdirSync(join(root, 'etc/web')).length === 1 && !readdirSync(join(root, 'etc')).includes('hosts'),
    );
    await waitFor('the watch of etc closed', () => inotifyWatches() - baseline === 1, 2000);
    await sleep(200);
    assert.equal(c.knocks(), [], "the engine's own removal knocks for nothing");
  } finally {
    c.close();
    await engine.close();
  }
  try {
    assert.is(inotifyWatches(), baseline, 'closed with the engine');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
