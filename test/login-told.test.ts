// What an operator is told when the login or the bus is wrong (issue 22, the user's-chair pass): each
// program says what is wrong, at a priority the journal shows, instead of waiting quietly or quoting
// the server. Run as the bundles, on the generated bus, with the seeds an operator would mistake.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { publicKeyOfSeedText } from '../src/shared/login.ts';
import { USERS } from '../src/server/commands/bus-config/config.ts';
import { cleanupBundles, copyBundleAlone, ensureBuilt, runBundle, startBundle } from './helpers/bundle.ts';
import { withIsolatedMesh } from './helpers/isolated-mesh.ts';
import { startNats } from './helpers/nats.ts';

test.before(() => {
  ensureBuilt('client');
  ensureBuilt('server');
});
test.after(() => cleanupBundles());

/** The public key of `user`'s seed in the mesh's credentials. */
const publicKeyOf = (seedFile: string) => publicKeyOfSeedText(readFileSync(seedFile, 'utf8'))!;

test("a client given another node's seed, or its runner's, says so at error once, naming the node, the key and the seed to give, and exits 1", () =>
  withIsolatedMesh({ nodes: ['n1', 'n2'] }, async (m) => {
    const dir = copyBundleAlone('client');
    for (const user of [USERS.client('n2'), USERS.runner('n1')]) {
      const work = mkdtempSync(join(tmpdir(), 'mesh-login-'));
      const args = ['--node', 'n1', '--nats', m.nats.url, '--nkey', m.nkey(user), '--socket', join(work, 'fill.sock'), '--cache', join(work, 'cache')];
      // As systemd runs it: each line carries its priority, as `journalctl -p` reads it.
      const run = await runBundle('node', dir, 'client', args, { JOURNAL_STREAM: '8:1' }, 20_000);
      assert.is(run.code, 1, `${user}: ${run.stderr}`);
      const errors = run.stderr.split('\n').filter((l) => l.startsWith('<3>'));
      assert.is(errors.length, 1, run.stderr);
      assert.match(
        errors[0]!,
        /the bus refuses node n1.s subscriptions to its own keys \(Permissions Violation for Subscription to "_INBOX_node_n1\.\S+"\) for this login/,
      );
      assert.match(errors[0]!, `(public key ${publicKeyOf(m.nkey(user))}): is --nkey the seed of provisioner.n1?`);
      assert.not.match(run.stderr, /waiting for bucket/, run.stderr);
    }
  }));

test('the seat and the client say at warning, once, that the bus cannot be reached at start, and at notice when they reach it', async () => {
  const nats = await startNats();
  try {
    await nats.stop();
    const work = mkdtempSync(join(tmpdir(), 'mesh-unreachable-'));
    const env = { JOURNAL_STREAM: '8:1' };
    const seat = startBundle('node', copyBundleAlone('server'), 'server', ['--nats', nats.url, '--debug'], env);
    const client = startBundle(
      'node',
      copyBundleAlone('client'),
      'client',
      ['--node', 'n1', '--nats', nats.url, '--socket', join(work, 'fill.sock'), '--cache', join(work, 'cache'), '--debug'],
      env,
    );
    const stopping = startBundle('node', copyBundleAlone('server'), 'server', ['--nats', nats.url], env);
    const first = new RegExp(`^<4>cannot reach the bus at ${nats.url} \\(connection refused.*\\); trying again$`);
    for (const p of [seat, client, stopping]) await p.waitForLog(first, 5000);
    // SIGTERM while it waits for the bus: it stops at once, with 0.
    const asked = Date.now();
    stopping.child.kill('SIGTERM');
    assert.equal(await stopping.exited, { code: 0, signal: null });
    assert.ok(Date.now() - asked < 1000, `stopped after ${Date.now() - asked} ms`);
    // Tries go on meanwhile (250 ms, 500 ms, 1 s…), each at debug only.
    await new Promise((r) => setTimeout(r, 2000));
    for (const p of [seat, client]) {
      const lines = p.stderr().split('\n');
      assert.is(lines.filter((l) => l.startsWith('<4>')).length, 1, p.stderr());
      assert.ok(lines.filter((l) => /^<7>cannot reach the bus at .*; trying again in \d+ ms$/.test(l)).length >= 2, p.stderr());
    }
    await nats.restart();
    for (const p of [seat, client]) await p.waitForLog(new RegExp(`^<5>bus: connected to 127\\.0\\.0\\.1:${nats.port} after \\d+ failed tries$`), 10_000);
    await seat.waitForLog(/^<6>seat ready$/, 10_000);
    seat.kill();
    client.kill();
  } finally {
    await nats.cleanup();
  }
});

test.run();
