// The reference engine beside a secret it may not read (issue 20 item 9): run as the bundle, as an
// unprivileged user, with a root-owned 0600 file in its secrets directory — what `sudo install -m
// 0600` makes. The file is refused and said, at warning, and the engine goes on serving: before,
// the recursive watch met EACCES and the process died on an unhandled 'error'.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createEngineClient } from '../src/client/handoff/fill-socket.ts';
import { findUser } from '../src/engine/owner.ts';
import { contentDigest, type FillContent, type FillFile, type FillReply } from '../src/shared/contract/fill-protocol.ts';
import { memoryLogger } from '../src/shared/cli/log.ts';
import { cleanEnv, ensureBuilt, ROOT } from './helpers/bundle.ts';
import { tempDir } from './helpers/temp.ts';

/** The user the engine runs as; test/helpers/postgres.ts runs PostgreSQL as the same. */
const USER = 'nobody';
const isRoot = process.getuid?.() === 0;

function file(path: string, content: FillContent): FillFile {
  return { path, content, digest: contentDigest(content), mode: 'owned', change: 'none' };
}

function actionOf(reply: FillReply): { action: string; reason?: string } {
  assert.ok(reply.ok, JSON.stringify(reply));
  return reply.ok ? reply.files[0]! : { action: 'none' };
}

/** Writes `text` to `path` as root with mode 0600, as `sudo install -m 0600` does. */
function installAsRoot(path: string, text: string): void {
  writeFileSync(path, text, { mode: 0o600 });
  chownSync(path, 0, 0);
  chmodSync(path, 0o600);
}

/** Resolves once `read()` holds a line matching `pattern`; rejects with what it holds after `ms` or once the child has exited. */
async function waitForLine(child: ChildProcess, read: () => string, pattern: RegExp, ms = 10_000): Promise<string> {
  const until = Date.now() + ms;
  for (;;) {
    const line = read()
      .split('\n')
      .find((l) => pattern.test(l));
    if (line !== undefined) return line;
    if (child.exitCode !== null || child.signalCode !== null || Date.now() > until) {
      throw new Error(
        `${child.exitCode !== null || child.signalCode !== null ? `engine exited (${child.exitCode ?? child.signalCode})` : `no line within ${ms} ms`} matching ${pattern}; stderr:\n${read()}`,
      );
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

if (!isRoot) {
  console.log(`# skipped: making a file the engine may not read needs root to own it, and this runs as uid ${process.getuid?.()}`);
  test.skip('a root-owned 0600 secret is refused and said, and the engine goes on');
} else {
  test('a root-owned 0600 secret is refused and said at warning, before and after start, and the engine goes on serving and knocking', async () => {
    ensureBuilt('engine');
    const user = findUser(readFileSync('/etc/passwd', 'utf8'), USER);
    assert.ok(user && user.uid !== 0, `${USER}: ${JSON.stringify(user)}`);
    const own = (path: string) => chownSync(path, user!.uid, user!.gid);
    const dir = tempDir('engine-unreadable-');
    chmodSync(dir, 0o755);
    const root = join(dir, 'root');
    const secrets = join(dir, 'secrets');
    const web = join(secrets, 'module/web');
    const socketPath = join(dir, 'run/fill.sock');
    for (const d of [root, web, join(dir, 'run')]) mkdirSync(d, { recursive: true });
    for (const d of [root, secrets, join(secrets, 'module'), web, join(dir, 'run')]) own(d);
    copyFileSync(join(ROOT, 'dist', 'engine.js'), join(dir, 'engine.js'));
    writeFileSync(join(web, 'api-key'), 'readable\n');
    own(join(web, 'api-key'));
    installAsRoot(join(web, 'db-password'), 'root-only\n');

    const child = spawn('runuser', ['-u', USER, '--', process.execPath, 'engine.js', '--root', root, '--secrets', secrets, '--socket', socketPath], {
      cwd: dir,
      env: cleanEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.stdout!.resume();
    const client = createEngineClient({ socketPath, log: memoryLogger(), pollMs: 30 });
    try {
      await waitForLine(child, () => stderr, /engine listening on/);
      const readable = join(root, 'etc/web/api.env');
      const request = (path: string, name: string) => ({
        module: 'web',
        build: '1',
        files: [file(path, ['KEY=', { secret: 'k' }, '\n'])],
        secrets: { k: `module/web/${name}` },
      });
      assert.is(actionOf(await client.fill(request(readable, 'api-key'))).action, 'written');
      assert.is(readFileSync(readable, 'utf8'), 'KEY=readable\n');
      const refused = actionOf(await client.fill(request(join(root, 'etc/web/db.env'), 'db-password')));
      assert.is(refused.action, 'refused');
      assert.match(refused.reason ?? '', /secret "module\/web\/db-password" is unreadable \(EACCES\)/);

      // One installed while the engine runs (what killed it before), then a secret that arrives after it still knocks.
      installAsRoot(join(web, 'late-root'), 'root-only\n');
      // And a directory it may not list: said, not fatal either.
      mkdirSync(join(secrets, 'module/locked'), { mode: 0o700 });
      const knocked = new Promise<void>((resolve) => client.onKnock(resolve));
      writeFileSync(join(web, 'late-key'), 'late\n');
      own(join(web, 'late-key'));
      await Promise.race([
        knocked,
        new Promise((_, reject) => setTimeout(() => reject(new Error(`no knock after a readable secret arrived; stderr:\n${stderr}`)), 5000)),
      ]);
      assert.is(actionOf(await client.fill(request(readable, 'late-key'))).action, 'written');
      assert.is(readFileSync(readable, 'utf8'), 'KEY=late\n');
      assert.is(child.exitCode, null, `the engine is still running; stderr:\n${stderr}`);

      // Each is said once, at warning, naming the file and what to do; the directory it may not list too.
      const said = await waitForLine(child, () => stderr, /db-password/);
      assert.match(said, / warning .*unreadable by the engine \(uid \d+\): EACCES; a fill naming it is refused until the engine's user may read it/);
      assert.match(await waitForLine(child, () => stderr, /late-root/), / warning .*unreadable by the engine/);
      assert.match(await waitForLine(child, () => stderr, /module\/locked/), / warning .*cannot watch/);
      assert.is(stderr.split('\n').filter((l) => /unreadable by the engine/.test(l) && l.includes('db-password')).length, 1, `said once; stderr:\n${stderr}`);
      assert.not.match(stderr, /Unhandled|EACCES: permission denied, watch/);
    } finally {
      client.close();
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

test.run();
