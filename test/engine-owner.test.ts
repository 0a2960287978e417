// A file's `owner` (DESIGN §9) as the reference engine applies it when it runs as root: the real
// user's uid and gid on the file, and an owner the node has no user of refused, naming it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createEngineClient } from '../src/client/handoff/fill-socket.ts';
import { findUser } from '../src/engine/owner.ts';
import { startEngine } from '../src/engine/start.ts';
import { contentDigest, type FillFile, type FillReply } from '../src/shared/contract/fill-protocol.ts';
import { memoryLogger } from '../src/shared/cli/log.ts';
import { tempDir } from './helpers/temp.ts';

const TEST_USER = 'mesh-test-owner';
const isRoot = process.getuid?.() === 0;

/** A real non-root user for the test: one made for it (removed after), or `nobody` when useradd is not there. */
function makeUser(): { name: string; remove(): void } {
  try {
    execFileSync('useradd', ['--system', '--no-create-home', TEST_USER], { stdio: 'pipe' });
    return { name: TEST_USER, remove: () => execFileSync('userdel', [TEST_USER], { stdio: 'pipe' }) };
  } catch (err) {
    // Left over from a run killed before its userdel: the user is there all the same.
    if (findUser(readFileSync('/etc/passwd', 'utf8'), TEST_USER))
      return { name: TEST_USER, remove: () => execFileSync('userdel', [TEST_USER], { stdio: 'pipe' }) };
    console.log(`# useradd unavailable (${(err as Error).message.split('\n')[0]}): using nobody`);
    return { name: 'nobody', remove: () => {} };
  }
}

function file(path: string, content: string, more: Partial<FillFile> = {}): FillFile {
  return { path, content, digest: contentDigest(content), mode: 'owned', change: 'none', ...more };
}

function only(reply: FillReply): { action: string; reason?: string } {
  assert.ok(reply.ok, JSON.stringify(reply));
  return reply.ok ? reply.files[0]! : { action: 'none' };
}

if (!isRoot) {
  console.log(`# skipped: the engine applies owner only as root, and this runs as uid ${process.getuid?.()}`);
  test.skip('a file is given its owner when the engine runs as root');
} else {
  test("a file is given its owner's uid and gid when the engine runs as root, and an unknown owner is refused naming it", async () => {
    const user = makeUser();
    const dir = tempDir('engine-owner-');
    const socketPath = join(dir, 'fill.sock');
    const client = createEngineClient({ socketPath, log: memoryLogger(), pollMs: 30 });
    const engine = await startEngine({ socketPath, root: dir, log: memoryLogger() });
    try {
      const expected = findUser(readFileSync('/etc/passwd', 'utf8'), user.name)!;
      assert.ok(expected && expected.uid !== 0, `${user.name}: ${JSON.stringify(expected)}`);
      const path = join(dir, 'etc/web/web.conf');
      assert.is(only(await client.fill({ module: 'web', build: '1', files: [file(path, 'a=1\n', { owner: user.name, fileMode: '0640' })] })).action, 'written');
      const info = statSync(path);
      assert.equal([info.uid, info.gid, info.mode & 0o777], [expected.uid, expected.gid, 0o640]);

      // Given away by hand, the owner is put back, though the bytes are the same (DESIGN §14: a restore).
      execFileSync('chown', ['0:0', path]);
      assert.is(
        only(await client.fill({ module: 'web', build: '1', files: [file(path, 'a=1\n', { owner: user.name, fileMode: '0640' })] })).action,
        'restored',
      );
      assert.is(statSync(path).uid, expected.uid);

      const unknown = join(dir, 'etc/web/other.conf');
      const refused = only(await client.fill({ module: 'web', build: '1', files: [file(unknown, 'b=1\n', { owner: 'mesh-no-such-user' })] }));
      assert.is(refused.action, 'refused');
      assert.match(refused.reason ?? '', /mesh-no-such-user/);
      assert.not.ok(existsSync(unknown), 'a refused file is not written');
    } finally {
      client.close();
      await engine.close();
      rmSync(dir, { recursive: true, force: true });
      user.remove();
    }
  });
}

test.run();
