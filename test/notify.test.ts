// Readiness under systemd (Type=notify): READY=1 once the client asked for every module's first fill
// (the seat once it serves), STOPPING=1 on SIGTERM, nothing without $NOTIFY_SOCKET, and a failed
// notification is one warning, never the program's end. The socket is a real unix datagram socket.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { chmodSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { connectBus } from '../src/shared/bus/bus.ts';
import { memoryLogger } from '../src/shared/cli/log.ts';
import { notifySystemd, sendNotification } from '../src/shared/cli/notify.ts';
import { cleanupBundles, ensureBuilt, ROOT, startBundle, type Running, type Runtime } from './helpers/bundle.ts';
import { startMesh, type Mesh } from './helpers/mesh.ts';
import { createInputBuckets } from './helpers/mesh-bus.ts';
import { startNats } from './helpers/nats.ts';
import { listenForNotifications } from './helpers/notify-socket.ts';
import { sleep, waitFor } from './helpers/wait.ts';
import { tempDir as newTempDir } from './helpers/temp.ts';

const MODULES = ['alpha', 'beta', 'gamma'];
const DIST = join(ROOT, 'dist');
const dirs: string[] = [];

test.before(() => {
  ensureBuilt('client');
  ensureBuilt('server');
});
test.after(() => {
  cleanupBundles();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = newTempDir('mesh-notify-');
  dirs.push(dir);
  return dir;
}

/** A systemd-notify of the test's own in a fresh dir: records its arguments, then exits `code` saying `said`. */
function fakeNotify(code: number, said = ''): { path: string; calls(): string[] } {
  const dir = tempDir();
  const record = join(dir, 'calls');
  writeFileSync(join(dir, 'systemd-notify'), `#!/bin/sh\necho "$NOTIFY_SOCKET $*" >> '${record}'\n${said ? `echo '${said}' >&2\n` : ''}exit ${code}\n`);
  chmodSync(join(dir, 'systemd-notify'), 0o755);
  return { path: dir, calls: () => (existsSync(record) ? readFileSync(record, 'utf8').split('\n').filter(Boolean) : []) };
}

function clientArgs(m: Mesh): string[] {
  return ['--node', 'n1', '--nats', m.nats.url, '--socket', m.socketPath, '--cache', m.cacheDir, '--archive-dir', m.archiveDir, '--settle', '0'];
}

async function publishAndAssign(m: Mesh): Promise<void> {
  for (const name of MODULES) {
    await m.publish(name, {
      templates: { [`${name}.conf`]: `name ${name}\n` },
      provisioning: { files: [{ path: `\${dir:config}/${name}.conf`, template: `${name}.conf` }] },
    });
    await m.assign('n1', name);
  }
  await waitFor(
    'the seat’s plans of every module',
    async () => {
      const entries = await Promise.all(MODULES.map((name) => m.kv.plans.get(`n1.${name}`)));
      return entries.every((e) => e?.operation === 'PUT');
    },
    15_000,
  );
}

test('notifySystemd does nothing without NOTIFY_SOCKET', async () => {
  const fake = fakeNotify(0);
  const log = memoryLogger();
  notifySystemd(log, Promise.resolve(), { PATH: fake.path });
  await sleep(300);
  assert.equal(fake.calls(), []);
  assert.equal(log.lines, []);
});

test('notifySystemd sends READY=1 at once and STOPPING=1 only when stopping resolves', async () => {
  const fake = fakeNotify(0);
  const log = memoryLogger();
  let stop = () => {};
  notifySystemd(log, new Promise<void>((r) => (stop = r)), { PATH: fake.path, NOTIFY_SOCKET: '/run/test/notify' });
  await waitFor('READY=1', () => fake.calls().length === 1);
  await sleep(200);
  assert.equal(fake.calls(), ['/run/test/notify READY=1']);
  stop();
  await waitFor('STOPPING=1', () => fake.calls().length === 2);
  assert.equal(fake.calls(), ['/run/test/notify READY=1', '/run/test/notify STOPPING=1']);
  assert.equal(log.lines, []);
});

test('a notification that fails, or no systemd-notify at all, is one warning naming it and the reason', async () => {
  const failing = fakeNotify(1, 'Failed to notify init system: Connection refused');
  const log = memoryLogger();
  await sendNotification('READY=1', log, { PATH: failing.path, NOTIFY_SOCKET: '/run/test/notify' });
  assert.is(log.lines.length, 1, log.lines.join('\n'));
  assert.match(
    log.lines[0]!,
    /warning could not tell systemd READY=1 on \/run\/test\/notify: systemd-notify exited 1: Failed to notify init system: Connection refused/,
  );
  const none = memoryLogger();
  await sendNotification('READY=1', none, { PATH: tempDir(), NOTIFY_SOCKET: '/run/test/notify' });
  assert.is(none.lines.length, 1, none.lines.join('\n'));
  assert.match(none.lines[0]!, /warning could not tell systemd READY=1 on \/run\/test\/notify: systemd-notify: spawn systemd-notify ENOENT/);
});

test('systemd-notify delivers READY=1 on a unix datagram socket, by path and abstract (@)', async () => {
  for (const address of [join(tempDir(), 'notify.sock'), `@mesh-notify-test-${process.pid}`]) {
    const socket = await listenForNotifications(address, () => undefined);
    try {
      const log = memoryLogger();
      await sendNotification('READY=1', log, { ...process.env, NOTIFY_SOCKET: address });
      assert.equal(log.lines, []);
      await socket.waitFor('READY=1', 5000);
    } finally {
      await socket.close();
    }
  }
});

test('the client bundle sends READY=1 only once the bus is back and every module’s first fill was asked for, and STOPPING=1 on SIGTERM', async () => {
  const m = await startMesh();
  let client: Running | undefined;
  const socket = await listenForNotifications(join(tempDir(), 'notify.sock'), () => client?.stderr() ?? '');
  try {
    await publishAndAssign(m);
    await m.nats.stop();
    client = startBundle('node', DIST, 'client', clientArgs(m), { NOTIFY_SOCKET: socket.address });
    // Without the bus the client cannot read its plans: not ready, however long it waits.
    await sleep(1500);
    assert.equal(socket.received(), []);
    assert.not.match(client.stderr(), /client ready/);
    await m.nats.restart();
    const ready = await socket.waitFor('READY=1', 30_000);
    // The client's log as it stood when READY=1 arrived: every module's fill asked for, then ready.
    const asked = ready.mark.indexOf(`start: filling ${MODULES.length} module(s) again`);
    assert.ok(asked >= 0, `READY=1 came before the first fills were asked for; the log then:\n${ready.mark}`);
    assert.ok(ready.mark.indexOf('client ready') > asked, ready.mark);
    for (const name of MODULES) await waitFor(`${name}.conf at the engine`, () => m.moduleFile(name) === `name ${name}\n`, 15_000);
    client.child.kill('SIGTERM');
    await socket.waitFor('STOPPING=1', 10_000);
    assert.is((await client.exited).code, 0, client.stderr());
    assert.equal(
      socket.received().map((n) => n.text),
      ['READY=1', 'STOPPING=1'],
    );
    assert.not.match(client.stderr(), /could not tell systemd/);
  } finally {
    client?.kill();
    await socket.close();
    await m.close();
  }
});

for (const runtime of ['node', 'deno'] as Runtime[]) {
  test(`under ${runtime}, the seat says READY=1 after "seat ready", the client after "client ready", both STOPPING=1 on SIGTERM`, async () => {
    const nats = await startNats();
    const nc = await connectBus({ servers: [nats.url], name: 'test' });
    const dir = tempDir();
    const running: Running[] = [];
    const socket = await listenForNotifications(join(dir, 'notify.sock'), () => running.map((r) => r.stderr()));
    try {
      await createInputBuckets(nc);
      const seat = startBundle(runtime, DIST, 'server', ['--nats', nats.url], { NOTIFY_SOCKET: socket.address });
      running.push(seat);
      const seatReady = await socket.waitFor('READY=1', 30_000);
      assert.match(seatReady.mark[0]!, /seat ready/);
      // No engine: the client asks for no fill at all here, and is ready once it has read its plans.
      const client = startBundle(
        runtime,
        DIST,
        'client',
        ['--node', 'n1', '--nats', nats.url, '--socket', join(dir, 'fill.sock'), '--cache', join(dir, 'cache')],
        { NOTIFY_SOCKET: socket.address },
      );
      running.push(client);
      await waitFor('the client’s READY=1', () => socket.received().length === 2, 30_000);
      assert.equal(
        socket.received().map((n) => n.text),
        ['READY=1', 'READY=1'],
      );
      assert.match(socket.received()[1]!.mark[1]!, /client ready/);
      for (const r of running) r.child.kill('SIGTERM');
      for (const r of running) assert.is((await r.exited).code, 0, r.stderr());
      await waitFor('two STOPPING=1', () => socket.received().filter((n) => n.text === 'STOPPING=1').length === 2, 10_000);
      for (const r of running) assert.not.match(r.stderr(), /could not tell systemd/);
    } finally {
      for (const r of running) r.kill();
      await socket.close();
      await nc.close();
      await nats.cleanup();
    }
  });
}

test('a client whose NOTIFY_SOCKET leads nowhere warns once and keeps running', async () => {
  const m = await startMesh();
  const client = startBundle('node', DIST, 'client', clientArgs(m), { NOTIFY_SOCKET: join(tempDir(), 'nobody-listens.sock') });
  try {
    await publishAndAssign(m);
    await client.waitForLog(/could not tell systemd READY=1 on \S+nobody-listens\.sock: systemd-notify exited 1/, 30_000);
    await waitFor('alpha.conf at the engine', () => m.moduleFile('alpha') === 'name alpha\n', 15_000);
    client.child.kill('SIGTERM');
    assert.is((await client.exited).code, 0, client.stderr());
    assert.is(
      client
        .stderr()
        .split('\n')
        .filter((l) => l.includes('could not tell systemd')).length,
      2,
      client.stderr(),
    );
  } finally {
    client.kill();
    await m.close();
  }
});

test.run();
