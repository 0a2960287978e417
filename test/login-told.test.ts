// What an operator is told when the login or the bus is wrong (issue 22, the user's-chair pass): each
// program says what is wrong, at a priority the journal shows, instead of waiting quietly or quoting
// the server. Run as the bundles, on the generated bus, with the seeds an operator would mistake.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { chmodSync, copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { commandFirst } from '../src/shared/cli/command-first.ts';
import { publicKeyOfSeedText } from '../src/shared/bus/login.ts';
import { USERS } from '../src/server/commands/bus-config/users.ts';
import { cleanupBundles, copyBundleAlone, ensureBuilt, runBundle, startBundle } from './helpers/bundle.ts';
import { withIsolatedMesh } from './helpers/isolated-mesh.ts';
import { createUser } from '@nats-io/nkeys';
import { startNats } from './helpers/nats.ts';
import { tempDir } from './helpers/temp.ts';

test.before(() => {
  for (const program of ['client', 'server', 'vault', 'postgres-provider']) ensureBuilt(program);
});
test.after(() => cleanupBundles());

/** The public key of `user`'s seed in the mesh's credentials. */
const publicKeyOf = (seedFile: string) => publicKeyOfSeedText(readFileSync(seedFile, 'utf8'))!;

test("a client given another node's seed, or its runner's, says so at error once, naming the node, the key and the seed to give, and exits 1", () =>
  withIsolatedMesh({ nodes: ['n1', 'n2'] }, async (m) => {
    const dir = copyBundleAlone('client');
    for (const user of [USERS.client('n2'), USERS.runner('n1')]) {
      const work = tempDir('mesh-login-');
      const args = ['--node', 'n1', '--nats', m.nats.url, '--nkey', m.nkey(user), '--socket', join(work, 'fill.sock'), '--cache', join(work, 'cache')];
      // As systemd runs it: each line carries its priority, as `journalctl -p` reads it.
      const run = await runBundle('node', dir, 'client', args, { JOURNAL_STREAM: '8:1' }, 20_000);
      assert.is(run.code, 1, `${user}: ${run.stderr}`);
      const errors = run.stderr.split('\n').filter((l) => l.startsWith('<3>'));
      assert.is(errors.length, 1, run.stderr);
      // The runner may not publish the direct get either: the server may say that refusal first.
      assert.match(
        errors[0]!,
        /the bus refuses node n1.s subscriptions to its own keys \(Permissions Violation for (Subscription to "_INBOX_node_n1\.\S+"|Publish to "\$JS\.API\.DIRECT\.GET\.\S+")\) for this login/,
      );
      assert.match(errors[0]!, `(public key ${publicKeyOf(m.nkey(user))}): is --nkey the seed of provisioner.n1?`);
      assert.not.match(run.stderr, /waiting for bucket/, run.stderr);
    }
  }));

test("the seat given a node's seed, the runner's or the vault's says so at error once, naming the key and the seed to give, and exits 1; a second seat is warned of", () =>
  withIsolatedMesh({ nodes: ['n1'], seat: 'in-process' }, async (m) => {
    const dir = copyBundleAlone('server');
    for (const user of [USERS.client('n1'), USERS.runner('n1'), USERS.vault]) {
      const run = await runBundle('node', dir, 'server', ['--nats', m.nats.url, '--nkey', m.nkey(user)], { JOURNAL_STREAM: '8:1' }, 20_000);
      assert.is(run.code, 1, `${user}: ${run.stderr}`);
      const errors = run.stderr.split('\n').filter((l) => l.startsWith('<3>'));
      assert.is(errors.length, 1, run.stderr);
      assert.match(
        errors[0]!,
        /^<3>the bus refuses the seat's requests \(Permissions Violation for (Subscription to "_INBOX_seat\.\S+"|Publish to "\$JS\.API\.INFO")\) for this login/,
      );
      assert.match(errors[0]!, `(public key ${publicKeyOf(m.nkey(user))}): is --nkey the seed of provisioner?`);
      assert.not.match(run.stderr, /waiting for bucket|seat ready/, run.stderr);
    }
    // The seat's own seed passes the check; the seat in this process already serves the mesh, which a
    // second seat says at warning (two write the same plans) and still starts.
    const own = startBundle('node', dir, 'server', ['--nats', m.nats.url, '--nkey', m.nkey(USERS.seat)], { JOURNAL_STREAM: '8:1' });
    await own.waitForLog(/^<6>seat ready$/, 20_000);
    assert.match(own.stderr(), /^<4>another seat already answers mesh-provisioner\.provisioning on this bus: run one seat per mesh/m);
    own.kill();
  }));

test('the seat and the client say at warning, once, that the bus cannot be reached at start, and at notice when they reach it', async () => {
  const nats = await startNats();
  try {
    await nats.stop();
    const work = tempDir('mesh-unreachable-');
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
    assert.not.match(seat.stderr(), /another seat/, 'a seat alone on its bus is not warned of another');
    seat.kill();
    client.kill();
  } finally {
    await nats.cleanup();
  }
});

test('a seed file that is no seed is said as such by every program, exit 2, never blamed on the bus', async () => {
  const work = tempDir('mesh-seed-');
  const garbage = join(work, 'g.nk');
  writeFileSync(garbage, 'garbage\n', { mode: 0o600 });
  // Nothing listens there: a program that got as far as the bus would say it cannot reach it.
  const bus = ['--nats', 'nats://127.0.0.1:1', '--nkey', garbage];
  const runs: [string, string[]][] = [
    ['server', ['status', ...bus]],
    ['server', bus],
    ['client', ['--node', 'n1', ...bus]],
    ['vault', ['--store', work, ...bus]],
    ['postgres-provider', ['--consumers', join(work, 'consumers.json'), '--pg-password-file', garbage, ...bus]],
  ];
  for (const [program, args] of runs) {
    const run = await runBundle('node', copyBundleAlone(program), program, args);
    assert.is(run.code, 2, `${program} ${args.join(' ')}: ${run.stderr}`);
    assert.match(run.stderr, `--nkey ${garbage}: not an nkey user seed`);
    assert.not.match(run.stderr, /cannot reach|nkeys:/);
  }
});

test('a seed file others may read is warned of once, naming the file and chmod 600, and used', () =>
  withIsolatedMesh({ nodes: ['n1'] }, async (m) => {
    const work = tempDir('mesh-seed-');
    const loose = join(work, 'admin.nk');
    copyFileSync(m.nkey(USERS.admin), loose);
    chmodSync(loose, 0o644);
    const status = await runBundle('node', copyBundleAlone('server'), 'server', ['status', '--nats', m.nats.url, '--nkey', loose]);
    assert.is(status.code, 0, status.stderr);
    assert.equal(status.stderr.split('\n').filter(Boolean), [`mesh-provisioner: --nkey ${loose}: mode 644 lets others read the seed; chmod 600 ${loose}`]);

    const clientSeed = join(work, 'n1.nk');
    copyFileSync(m.nkey(USERS.client('n1')), clientSeed);
    chmodSync(clientSeed, 0o640);
    const args = ['--node', 'n1', '--nats', m.nats.url, '--nkey', clientSeed, '--socket', join(work, 'fill.sock'), '--cache', join(work, 'cache')];
    const client = startBundle('node', copyBundleAlone('client'), 'client', args, { JOURNAL_STREAM: '8:1' });
    await client.waitForLog(/^<6>client ready$/, 15_000);
    client.kill();
    assert.equal(
      client
        .stderr()
        .split('\n')
        .filter((l) => l.startsWith('<4>')),
      [`<4>--nkey ${clientSeed}: mode 640 lets others read the seed; chmod 600 ${clientSeed}`],
    );
  }));

test('status with a node’s or runner’s seed, and rollout with the seat’s, say which login they need instead of the raw violation', () =>
  withIsolatedMesh({ nodes: ['n1'] }, async (m) => {
    for (const user of [USERS.runner('n1'), USERS.client('n1')]) {
      // Refused its inbox and the verb's subject alike: the server may say either first.
      const status = await m.serverCommand(user, ['status']);
      assert.is(status.code, 1, status.stderr);
      assert.match(
        status.stderr,
        /^mesh-provisioner: status: this login may not ask mesh-provisioner\.provisioning: query and status need the seat's login or admin's \(provisioner\.nk or admin\.nk, as --nkey\); the bus said: Permissions Violation for (Subscription to "_INBOX_seat\.|Publish to "mesh-provisioner\.provisioning")/,
      );
    }
    const rollout = await m.serverCommand(USERS.seat, ['rollout', 'abort', 'web']);
    assert.is(rollout.code, 1, rollout.stderr);
    assert.match(
      rollout.stderr,
      /^mesh-provisioner: rollout abort web: this login may not do it: rollout needs the admin login \(its seed, admin\.nk, as --nkey\); the bus said: Permissions Violation/,
    );
    const shown = await m.serverCommand(USERS.seat, ['rollout']);
    assert.is(shown.code, 1, shown.stderr);
    assert.match(shown.stderr, /^mesh-provisioner: rollout: reading mesh-provisioner_rollouts: this login may not do it: rollout needs the admin login/);
    // The logins they need still work.
    assert.is((await m.serverCommand(USERS.seat, ['status'])).code, 0);
    assert.is((await m.serverCommand(USERS.admin, ['rollout'])).code, 0);
  }));

test('a command whose login the bus refuses says the login it needs, never that the bus cannot be reached', () =>
  withIsolatedMesh({ nodes: ['n1'] }, async (m) => {
    const server = copyBundleAlone('server');
    const none = await runBundle('node', server, 'server', ['status', '--nats', m.nats.url]);
    assert.is(none.code, 1, none.stderr);
    assert.is(
      none.stderr.trim(),
      `mesh-provisioner: the bus at ${m.nats.url} refuses this login (none given): give the seed of provisioner or admin with --nkey (Authorization Violation)`,
    );
    // A seed the bus does not know (another mesh's, say), for an input command: the login it needs is admin.
    const stranger = join(tempDir('mesh-stranger-'), 'stranger.nk');
    writeFileSync(stranger, new TextDecoder().decode(createUser().getSeed()), { mode: 0o600 });
    const key = publicKeyOfSeedText(readFileSync(stranger, 'utf8'));
    const set = await runBundle('node', server, 'server', ['config', 'set', 'n1', 'web', 'level', 'x', '--nats', m.nats.url, '--nkey', stranger]);
    assert.is(set.code, 1, set.stderr);
    assert.is(
      set.stderr.trim(),
      `mesh-provisioner: the bus at ${m.nats.url} refuses this login (public key ${key}): is --nkey the seed of admin? (Authorization Violation)`,
    );
    const rotate = await runBundle(
      'node',
      copyBundleAlone('vault'),
      'vault',
      ['rotate', 'module/web/k', '--store', join(m.dir, 'store'), '--nats', m.nats.url],
      {},
      20_000,
    );
    assert.is(rotate.code, 1, rotate.stderr);
    assert.match(rotate.stderr, /the bus at \S+ refuses this login \(none given\): give the seed of vault with --nkey \(Authorization Violation\)/);
    assert.not.match(none.stderr + set.stderr + rotate.stderr, /cannot reach/);
  }));

test('flags before the command: each program shows the line with the command first, exit 2', async () => {
  const hub = 'nats://127.0.0.1:4222';
  const runs: [string, string[], string][] = [
    ['server', ['--nats', hub, '--nkey', 'admin.nk', 'status'], `node server.js status --nats ${hub} --nkey admin.nk`],
    [
      'server',
      ['--nats', hub, 'publish', 'examples/web/templates', '--composition', 'examples/web/composition.json'],
      `node server.js publish --nats ${hub} examples/web/templates --composition examples/web/composition.json`,
    ],
    ['server', ['--debug', 'rollout', 'abort', 'web'], 'node server.js rollout --debug abort web'],
    ['vault', ['--store', '/tmp/s', 'rotate', 'module/web/api-key'], 'node vault.js rotate --store /tmp/s module/web/api-key'],
    ['client', ['--json', 'lint', 'web'], 'node client.js lint --json web'],
  ];
  for (const [program, args, line] of runs) {
    const run = await runBundle('node', copyBundleAlone(program), program, args);
    assert.is(run.code, 2, run.stderr);
    assert.is(run.stderr.replace(/^[\w-]+: /, ''), `the command comes first: ${line}\n`);
  }
  // The seat's own flags alone are still the seat's, and a word that is no command still unexpected.
  const stray = await runBundle('node', copyBundleAlone('server'), 'server', ['--nats', hub, 'stats']);
  assert.is(stray.stderr, 'mesh-provisioner: unexpected argument "stats" (see --help)\n');
});

test('the line shown with the command first leaves out a password or a token, and quotes what a shell would split', () => {
  assert.is(
    commandFirst(['--user', 'a', '--password', 's3cret', '--token=t0k', 'status', 'n 1'], ['status'], 'server.js'),
    "the command comes first: node server.js status --user a --password … --token=… 'n 1'",
  );
  assert.is(commandFirst(['status'], ['status'], 'server.js'), undefined, 'already first');
  assert.is(commandFirst(['--nats', 'x'], ['status'], 'server.js'), undefined);
});

test.run();
