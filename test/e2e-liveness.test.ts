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
import { HEALTH_SUBJECT } from '../src/shared/contract/subjects.ts';

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
  const running: Running[] = [];
  const run = (r: Running) => (running.push(r), r);
  return {
    engine: (): Running =>
      run(
        startBundle('node', dist, 'engine', ['--socket', paths.socketPath, '--root', paths.root, '--secrets', paths.secrets, '--journal', paths.journalFile]),
      ),
    client: (args: string[] = []): Running =>
      run(
        startBundle('node', dist, 'client', [
          ...['--node', name, '--nats', m.nats.url, '--nkey', m.nkey(`provisioner.${name}`)],
          ...['--socket', paths.socketPath, '--cache', paths.cacheDir, '--archive-dir', m.archiveDir, ...args],
        ]),
      ),
    async stop() {
      for (const r of running.splice(0)) {
        r.child.kill('SIGCONT');
        r.child.kill('SIGKILL');
        await r.exited;
      }
    },
  };
}

/** `server.js status [args]` as the operator runs it, with the seat's login. */
async function status(m: IsolatedMesh, args: string[] = []) {
  return m.serverCommand('provisioner', ['status', ...args]);
}

/** Waits until `status` exits 0 with the node's word heard (its version shown): the client is up and has spoken. */
async function heardAndApplied(m: IsolatedMesh, ms = 30_000): Promise<void> {
  await waitFor(
    'status exit 0, the client heard',
    async () => {
      const s = await status(m, ['--json']);
      return s.code === 0 && JSON.parse(s.stdout).nodes.every((n: { version?: string }) => n.version !== undefined);
    },
    ms,
  );
}

async function meshWithWeb(): Promise<IsolatedMesh> {
  const m = await startIsolatedMesh({ nodes: ['n1'], seat: 'process' });
  // The mesh is handed over once its buckets are there, which init made: the seat's process may not yet
  // listen. A word or an event sent before it does is one it never hears (it waits a period for the next).
  await waitFor('the seat ready', () => m.seatSaid().includes('seat ready'), 15_000);
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

test('a client killed is silent in status 5 s after its connection closed (exit 1, said on provisioner_health), and back once it runs again (exit 0)', async () => {
  const m = await meshWithWeb();
  const n1 = nodeOf(m, 'n1');
  try {
    const said = healthLines(m.admin);
    n1.engine();
    let client = n1.client();
    await m.waitReport('n1', 'web', (r) => r.state === 'applied', 30_000);
    await heardAndApplied(m);
    const ok = await status(m);
    assert.match(ok.stdout, /VERSION\s+LAST WORD/);

    client.child.kill('SIGKILL');
    await client.exited;
    const killed = Date.now();
    const silent = await waitFor(
      'status says silent',
      async () => {
        const s = await status(m);
        return s.stdout.includes('silent') ? s : undefined;
      },
      15_000,
    );
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
    await heardAndApplied(m, 15_000);
    assert.ok(said.some((l) => JSON.stringify(l).includes('"reason":"no word from its client since')));
    assert.ok(said.some((l) => JSON.stringify(l).includes('"reason":"ended: no word from its client since')));
    assert.ok(
      said.every((l) => !('module' in (l as object))),
      JSON.stringify(said),
    );
  } finally {
    await n1.stop();
    await m.close();
  }
});

test("a runner's connection closing says nothing of the client", async () => {
  const m = await meshWithWeb();
  const n1 = nodeOf(m, 'n1');
  try {
    n1.engine();
    n1.client();
    await heardAndApplied(m);
    const runner = await m.connect('runner.n1', 'module web');
    await runner.close();
    // Past the 5 s a client's close would take.
    await new Promise((r) => setTimeout(r, 6000));
    assert.is((await status(m)).code, 0);
  } finally {
    await n1.stop();
    await m.close();
  }
});

test('a hung client (SIGSTOP, --alive 1) is silent after two periods + 15 s and back on SIGCONT; its engine killed is said once its alive says so', async () => {
  const m = await meshWithWeb();
  const n1 = nodeOf(m, 'n1');
  try {
    const engine = n1.engine();
    const client = n1.client(['--alive', '1']);
    await heardAndApplied(m);
    client.child.kill('SIGSTOP');
    const hung = Date.now();
    let last = '';
    const silent = await waitFor(
      'silent by age',
      async () => {
        const s = await status(m);
        last = s.stdout + s.stderr;
        return s.stdout.includes('no word from its client for 17 s') ? s : undefined;
      },
      30_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}; status said: ${last}`);
    });
    const seconds = (Date.now() - hung) / 1000;
    assert.is(silent.code, 1);
    // Its last word came up to a period before the stop; a status run takes about a second.
    assert.ok(seconds >= 15 && seconds < 17 + 3, `silent after ${seconds} s`);
    client.child.kill('SIGCONT');
    await heardAndApplied(m, 10_000);

    engine.child.kill('SIGKILL');
    await engine.exited;
    const down = await waitFor(
      'engine down',
      async () => {
        const s = await status(m);
        return s.stdout.includes('engine down') ? s : undefined;
      },
      15_000,
    );
    assert.is(down.code, 1);
    assert.match(down.stdout, /engine down since \d{4}-/);
    n1.engine();
    await heardAndApplied(m, 15_000);
  } finally {
    await n1.stop();
    await m.close();
  }
});

test.run();
