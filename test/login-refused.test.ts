// A login the bus refuses for a while (issue 22): a server reloaded with a node's new key before the
// node has its seed, or thousands of nodes reconnecting at once past the server's authentication
// timeout. nats.js gives up reconnecting for good after two refusals in a row, and a daemon then ran
// on with a dead connection until someone restarted it; now it keeps trying and comes back by itself.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createUser, fromSeed } from '@nats-io/nkeys';
import { USERS } from '../src/server/commands/bus-config/config.ts';
import { withIsolatedMesh } from './helpers/isolated-mesh.ts';
import { waitFor } from './helpers/wait.ts';

const NODE = 'n1';

test("a node's client whose login the bus refuses for a while, past two refusals, comes back by itself once the bus takes it again", () =>
  withIsolatedMesh({ nodes: [NODE] }, async (m) => {
    const node = m.node(NODE);
    await m.publish('web', {
      templates: { 'web.conf': 'level ${config:level}\n' },
      provisioning: { files: [{ path: '${dir:config}/web.conf', template: 'web.conf' }] },
    });
    await m.kv.config.put(`${NODE}.web.level`, 'info');
    await m.assign(NODE, 'web');
    await node.startEngine();
    await node.startClient();
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
    assert.match(node.log.lines.join('\n'), /bus: Authorization Violation/);
  }));

test.run();
