// A login the bus refuses for a while (issue 22): a server reloaded with a node's new key before the
// node has its seed, or thousands of nodes reconnecting at once past the server's authentication
// timeout. nats.js gives up reconnecting for good after two refusals in a row, and a daemon then ran
// on with a dead connection until someone restarted it; now it keeps trying and comes back by itself.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createUser, fromSeed } from '@nats-io/nkeys';
import { USERS } from '../src/server/commands/bus-config/users.ts';
import { connectBus, reconnectWait, RECONNECT_FIRST_WAIT_MS, RECONNECT_MAX_WAIT_MS, watchConnection } from '../src/shared/bus/connect.ts';
import { memoryLogger } from '../src/shared/cli/log.ts';
import { webAppliedOn, withIsolatedMesh } from './helpers/isolated-mesh.ts';
import { startNats } from './helpers/nats.ts';
import { waitFor } from './helpers/wait.ts';

const NODE = 'n1';

test("a node's client whose login the bus refuses for a while, past two refusals, comes back by itself once the bus takes it again", () =>
  withIsolatedMesh({ nodes: [NODE] }, async (m) => {
    const node = await webAppliedOn(m, NODE);
    await waitFor('the first fill', () => node.moduleFile('web') === 'level info\n', 15_000);

    // The server reloaded with another key for the node (a rotation done out of order): its connection
    // is refused, and so is every try to come back.
    const conf = join(m.nats.dir, 'nats.conf');
    const before = readFileSync(conf, 'utf8');
    const nodeKey = fromSeed(new TextEncoder().encode(readFileSync(m.nkey(USERS.client(NODE)), 'utf8').trim())).getPublicKey();
    assert.ok(before.includes(nodeKey), 'the generated configuration names the node’s key');
    writeFileSync(conf, before.replace(nodeKey, createUser().getPublicKey()));
    process.kill(m.nats.pid()!, 'SIGHUP');
    const refusals = () =>
      m
        .serverSaid()
        .split('\n')
        .filter((l) => l.includes(`authentication error - Nkey "${nodeKey}"`)).length;
    await waitFor('three refused logins (nats.js stops after two)', () => refusals() >= 3, 15_000);

    writeFileSync(conf, before);
    process.kill(m.nats.pid()!, 'SIGHUP');
    await m.kv.config.put(`${NODE}.web.level`, 'debug');
    await waitFor('the change at the engine, without a restart', () => node.moduleFile('web') === 'level debug\n', 15_000).catch((err: Error) => {
      throw new Error(`${err.message}; the client said: ${node.log.lines.slice(-20).join('\n')}`);
    });
    assert.match(
      node.log.lines.join('\n'),
      /bus: the login is refused \(Authorization Violation\): is it still in the bus's configuration, and is --nkey its own seed\? trying again/,
    );
  }));

test('refused logins by user and password are one disconnect, one refusal said and one return: the client does not fill everything again at each try', async () => {
  const server = await startNats('authorization { users: [ { user: a, password: b } ] }');
  const conf = join(server.dir, 'nats.conf');
  const nc = await connectBus({ servers: [server.url], name: 'test', user: 'a', pass: 'b' });
  try {
    const log = memoryLogger();
    let back = 0;
    watchConnection(nc, log, () => back++);
    const before = readFileSync(conf, 'utf8');
    writeFileSync(conf, before.replace('password: b', 'password: c'));
    process.kill(server.pid()!, 'SIGHUP');
    // nats.js says each try a reconnect before the server refuses it.
    await new Promise((resolve) => setTimeout(resolve, 2000));
    assert.is(back, 0, 'no return while every login is refused');
    writeFileSync(conf, before);
    process.kill(server.pid()!, 'SIGHUP');
    await waitFor('the connection back', () => back > 0, 10_000);
    await nc.flush();
    assert.is(back, 1);
    const said = log.lines.map((l) => l.replace(/^\S+ /, '').replace(/127\.0\.0\.1:\d+/, 'the server'));
    assert.equal(said, [
      "warning bus: the login is refused (Authorization Violation): is it still in the bus's configuration, and is --nkey its own seed? trying again",
      'warning bus: disconnected from the server',
      'notice bus: reconnected to the server',
    ]);
  } finally {
    await nc.close();
    await server.cleanup();
  }
});

test('the wait between reconnect tries: 250 ms at first, a quarter of the time down, at most 5 s, up to a fifth more at random', () => {
  const none = () => 0;
  const most = () => 0.999999;
  assert.is(reconnectWait(0, none), RECONNECT_FIRST_WAIT_MS);
  assert.is(reconnectWait(800, none), RECONNECT_FIRST_WAIT_MS);
  assert.is(reconnectWait(4000, none), 1000);
  assert.is(reconnectWait(4000, most), 1200);
  assert.is(reconnectWait(60_000, none), RECONNECT_MAX_WAIT_MS);
  assert.is(reconnectWait(3_600_000, most), 6000);
});

test('a login refused for long is tried less and less often, not four times a second; the connection comes back within the wait once taken again', async () => {
  const server = await startNats('authorization { users: [ { user: a, password: b } ] }');
  const conf = join(server.dir, 'nats.conf');
  const nc = await connectBus({ servers: [server.url], name: 'test', user: 'a', pass: 'b' });
  try {
    let tries = 0;
    let back = false;
    void (async () => {
      for await (const s of nc.status()) {
        if (s.type === 'reconnecting') tries++;
        if (s.type === 'reconnect')
          void nc.flush().then(
            () => (back = true),
            () => {},
          );
      }
    })();
    const before = readFileSync(conf, 'utf8');
    writeFileSync(conf, before.replace('password: b', 'password: c'));
    process.kill(server.pid()!, 'SIGHUP');
    await waitFor('the connection refused', () => tries > 0, 10_000);
    back = false;
    await new Promise((resolve) => setTimeout(resolve, 8000));
    // At 250 ms a try, 32 in 8 s; waits growing with the time refused (reconnectWait), about 12.
    assert.ok(tries <= 16, `${tries} tries in 8 s`);
    assert.ok(tries >= 5, `${tries} tries in 8 s: it still tries`);
    assert.not.ok(back);
    writeFileSync(conf, before);
    process.kill(server.pid()!, 'SIGHUP');
    const at = Date.now();
    await waitFor('the connection back', () => back, 10_000);
    assert.ok(Date.now() - at < 1.2 * RECONNECT_MAX_WAIT_MS + 1000, `back after ${Date.now() - at} ms`);
  } finally {
    await nc.close();
    await server.cleanup();
  }
});

test.run();
