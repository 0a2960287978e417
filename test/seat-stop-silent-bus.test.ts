// The seat's bundle stops on SIGTERM whatever its bus does: here a nats-server stopped (SIGSTOP),
// which holds the connection open and answers nothing — not the drain's flush, not the creates of the
// seat's watches, which are given up and asked again while the seat stops.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import { DRAIN_WAIT_MS } from '../src/shared/bus/connect.ts';
import { USERS } from '../src/server/commands/bus-config/users.ts';
import { ensureBuilt, ROOT } from './helpers/bundle.ts';
import { startIsolatedMesh } from './helpers/isolated-mesh.ts';
import { collectStderr, hasExited, spawnQuiet } from './helpers/spawn.ts';
import { waitFor } from './helpers/wait.ts';

test('the seat bundle asked to stop while its bus answers nothing says so, says it stopped, and exits 0 within the drain wait', async () => {
  ensureBuilt('server');
  const mesh = await startIsolatedMesh({ nodes: ['n1'] });
  const seat = spawnQuiet('seat', process.execPath, [join(ROOT, 'dist', 'server.js'), '--nats', mesh.nats.url, '--nkey', mesh.nkey(USERS.seat), '--debug']);
  const said = collectStderr(seat);
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => seat.once('exit', (code, signal) => resolve({ code, signal })));
  const pid = mesh.nats.pid()!;
  let frozen = false;
  try {
    await waitFor('the seat to say it is ready', () => said().includes('seat ready'));
    // At once: the creates of the watches the seat starts as it says ready go unanswered.
    process.kill(pid, 'SIGSTOP');
    frozen = true;
    // A give-up re-makes a consumer on a timer: one firing while the seat drains threw from nats.js and
    // ended the seat with a stack and exit 1. (Waited for, not required: a fast bus may have answered them all.)
    await waitFor('a create of a watch given up', () => said().includes('went unanswered'), 3000).catch(() => undefined);
    const asked = Date.now();
    seat.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const end = await Promise.race([exited, new Promise((resolve) => (timer = setTimeout(() => resolve('still running'), DRAIN_WAIT_MS + 10_000)))]);
    clearTimeout(timer);
    const took = Date.now() - asked;
    assert.equal(end, { code: 0, signal: null }, said());
    assert.ok(took < DRAIN_WAIT_MS + 3000, `stopped ${took} ms after SIGTERM`);
    assert.match(said(), new RegExp(`warning bus: not drained \\(no answer within ${DRAIN_WAIT_MS} ms\\): closed without it\\n.* info stopped\\n`));
    assert.not.match(said(), /Error|    at /, 'no stack');
  } finally {
    if (frozen) process.kill(pid, 'SIGCONT');
    if (!hasExited(seat)) seat.kill('SIGKILL');
    await mesh.close();
  }
});

test.run();
