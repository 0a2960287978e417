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
import { cleanupBundles, copyBundleAlone, ensureBuilt, runBundle } from './helpers/bundle.ts';
import { withIsolatedMesh } from './helpers/isolated-mesh.ts';

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

test.run();
