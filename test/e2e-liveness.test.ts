// Liveness end to end (DESIGN §14, issue 33 item 1, the seat's side): on the bus bus-config generates,
// the seat's bundle as `provisioner`, a node's client bundle as `provisioner.n1`, the engine's bundle,
// and `status` run as an operator runs it. A client killed is silent within 5 s of its connection
// closing (the bus's disconnect event) and back once it connects again; a client that says nothing
// (hung) is silent after two of its periods + 15 s; an engine down is said once the alive says so.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import { mkdirSync } from 'node:fs';
import type { NatsConnection } from '@nats-io/transport-node';
import { ensureBuilt, startBundle, ROOT, type Running } from './helpers/bundle.ts';
import { startIsolatedMesh, type IsolatedMesh } from './helpers/isolated-mesh.ts';
import { nodePaths } from './helpers/mesh-node.ts';
import { waitFor } from './helpers/wait.ts';
import { aliveSubject, HEALTH_SUBJECT } from '../src/shared/contract/subjects.ts';
import { clientConnectionName, type Alive } from '../src/shared/contract/alive.ts';
import { jsonBytes } from '../src/shared/base/bytes.ts';

test.before(() => ['server', 'client', 'engine'].forEach((b) => ensureBuilt(b)));

const SPEC = {
  build: '1',
  templates: { 'web.conf': 'level ${config:level}\n' },
  provisioning: { files: [{ path: '${dir:config}/web.conf', template: 'web.conf' }] },
};

/** A node of the test: its engine and client bundles on its own paths, the client on its own seed. */
function nodeOf(m: IsolatedMesh, name: string) {
  const paths = nodePaths(join(m.dir, name));
  mkdirSync(paths.root, { recursive: true });
  mkdirSync(paths.secrets, { recursive: true });
  const dist = join(ROOT, 'dist');
  return {
    engine: (): Running => startBundle('node', dist, 'engine', ['--socket', paths.socketPath, '--root', paths.root, '--secrets', paths.secrets, '--journal', paths.journalFile]),
    client: (args: string[] = []): Running =>
      startBundle('node', dist, 'client', ['--node', name, '--nats', m.nats.url, '--nkey', m.nkey(`provisioner.${name}`), '--socket', paths.socketPath, '--cache', paths.cacheDir, '--archive-dir', m.archiveDir, ...args]),
  };
}

/** `server.js status [args]` as the operator runs it, with the seat's login. */
async function status(m: IsolatedMesh, args: string[] = []) {
  return m.serverCommand('provisioner', ['status', ...args]);
}

async function meshWithWeb(): Promise<IsolatedMesh> {
  const m = await startIsolatedMesh({ nodes: ['n1'], seat: 'process' });
  await m.publish('web', SPEC);
  await m.kv.config.put('n1.web.level', 'info');
  await m.assign('n1', 'web');
  return m;
}

function healthLines(nc: NatsConnection): unknown[] {
  const lines: unknown[] = [];
  nc.subscribe(HEALTH_SUBJECT, { callback: (_e, msg) => void lines.push(msg.json()) });
  return lines;
}

test('a client killed is silent in status within 5 s of its death (exit 1), and back once it runs again (exit 0)', async () => {
  const m = await meshWithWeb();
  try {
    const said = healthLines(m.admin);
    const n1 = nodeOf(m, 'n1');
    n1.engine();
    let client = n1.client();
    await m.waitReport('n1', 'web', (r) => r.state === 'applied', 30_000);
    await waitFor('status exit 0', async () => (await status(m)).code === 0, 15_000);
    const ok = await status(m);
    assert.match(ok.stdout, /VERSION\s+LAST WORD/);

    client.child.kill('SIGKILL');
    await client.exited;
    const killed = Date.now();
    const silent = await waitFor('status says silent', async () => {
      const s = await status(m);
      return s.stdout.includes('silent') ? s : undefined;
    }, 15_000);
    const seconds = (Date.now() - killed) / 1000;
    assert.is(silent.code, 1, silent.stdout);
    assert.ok(seconds < 5 + 2, `silent after ${seconds} s (5 s from the close, and a status run)`);
    assert.match(silent.stdout, /no word from its client since its connection closed at/);
    const detail = await status(m, ['n1']);
    assert.is(detail.code, 1);
    assert.match(detail.stdout, /n1 web: silent \(last report applied/);
    const json = JSON.parse((await status(m, ['--json'])).stdout);
    assert.is(json.nodes[0].liveness, 'silent');

    client = n1.client();
    await waitFor('status exit 0 again', async () => (await status(m)).code === 0, 15_000);
    assert.ok(said.some((l) => JSON.stringify(l).includes('"reason":"no word from its client since')));
    assert.ok(said.some((l) => JSON.stringify(l).includes('"reason":"ended: no word from its client since')));
    assert.ok(said.every((l) => !('module' in (l as object))), JSON.stringify(said));
  } finally {
    await m.close();
  }
});

test("a runner's connection closing says nothing of the client; an alive message on another node's subject is not taken", async () => {
  const m = await meshWithWeb();
  try {
    const n1 = nodeOf(m, 'n1');
    n1.engine();
    n1.client();
    await waitFor('status exit 0', async () => (await status(m)).code === 0, 30_000);
    const runner = await m.connect('runner.n1', 'module web');
    await runner.close();
    // Past the 5 s a client's close would take.
    await new Promise((r) => setTimeout(r, 6000));
    assert.is((await status(m)).code, 0);
  } finally {
    await m.close();
  }
});

test('a hung client (no word for two periods + 15 s) is silent, back when it speaks; an engine down is said', async () => {
  const m = await meshWithWeb();
  try {
    // The alive messages by hand with the node's own seed, named as its client, until the client sends them.
    const nc = await m.connect('provisioner.n1', clientConnectionName('n1'));
    const word = (engine: 'up' | 'down'): Alive => ({ node: 'n1', version: '9.9.9', every: 1, engine: { state: engine, since: '2026-12-06T10:00:00.000Z' }, modules: 1, at: new Date().toISOString() });
    nc.publish(aliveSubject('n1'), jsonBytes(word('up')));
    await waitFor('the word heard', async () => (await status(m)).stdout.includes('9.9.9'), 10_000);
    const hung = Date.now();
    const silent = await waitFor('silent by age', async () => {
      const s = await status(m);
      return s.stdout.includes('no word from its client for 17 s') ? s : undefined;
    }, 25_000);
    const seconds = (Date.now() - hung) / 1000;
    assert.is(silent.code, 1);
    assert.ok(seconds >= 16 && seconds < 17 + 3, `silent after ${seconds} s`);
    nc.publish(aliveSubject('n1'), jsonBytes(word('down')));
    const down = await waitFor('engine down', async () => {
      const s = await status(m);
      return s.stdout.includes('engine down since 2026-12-06T10:00:00.000Z') ? s : undefined;
    }, 10_000);
    assert.is(down.code, 1);
  } finally {
    await m.close();
  }
});

test.run();
