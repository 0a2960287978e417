// `bus-config` (DESIGN §11, issue 12): a stable configuration nats-server accepts, seeds kept 0600
// and never printed unless asked, refused when others can read them; logins that work.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { nkeys } from '@nats-io/transport-node';
import { connectBus } from '../src/shared/bus/bus.ts';
import { INBOX_PREFIXES, renderBusConfig } from '../src/server/commands/bus-config/config.ts';
import { nodeImports, seatPublish } from '../src/server/commands/bus-config/grants.ts';
import { inboxPrefixesOf, loginCollision, usersOf } from '../src/server/commands/bus-config/users.ts';
import { loadOrCreateLogins, publicKeyOf } from '../src/server/commands/bus-config/credentials.ts';
import { ensureBuilt, ROOT } from './helpers/bundle.ts';
import { freePort } from './helpers/nats.ts';
import { tempDir } from './helpers/temp.ts';

const dirs: string[] = [];
const temp = () => {
  const d = tempDir('mesh-bus-config-');
  dirs.push(d);
  return d;
};
test.after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

/** Runs `node dist/server.js bus-config …`. */
function busConfig(args: string[]): { status: number | null; stdout: string; stderr: string } {
  ensureBuilt('server');
  return spawnSync(process.execPath, [join(ROOT, 'dist/server.js'), 'bus-config', ...args], { encoding: 'utf8' });
}

test('the same mesh gives the same bytes, whatever the order and repeats of the names', () => {
  const creds = join(temp(), 'creds');
  const a = busConfig(['--node', 'nb', '--node', 'na', '--provider', 'postgres', '--credentials', creds]);
  const b = busConfig(['--node', 'na,nb', '--node', 'na', '--provider', 'postgres', '--credentials', creds]);
  assert.is(a.status, 0, a.stderr);
  assert.is(a.stdout, b.stdout);
  assert.match(a.stderr, /generated the nkey seed of provisioner\.na/);
  assert.not.match(b.stderr, /generated/, 'the second run reads the seeds the first wrote');
  const c = busConfig(['--node', 'na', '--node', 'nb', '--node', 'nc', '--provider', 'postgres', '--credentials', creds]);
  const added = c.stdout.split('\n').filter((l) => !a.stdout.split('\n').includes(l));
  assert.ok(
    added.length > 0 && added.every((l) => /nc|\]|\}|users:|imports:|exports:|^\s*$/.test(l)),
    `adding a node changes only its own lines:\n${added.join('\n')}`,
  );
});

test('seeds are files of mode 0600 in a 0700 directory, never on stdout unless asked', () => {
  const creds = join(temp(), 'creds');
  const run = busConfig(['--node', 'na', '--credentials', creds]);
  assert.is(run.status, 0, run.stderr);
  assert.is(statSync(creds).mode & 0o777, 0o700);
  const files = readdirSync(creds).sort();
  assert.equal(files, ['admin.nk', 'provisioner.na.nk', 'provisioner.nk', 'runner.na.nk', 'vault.nk']);
  for (const f of files) {
    assert.is(statSync(join(creds, f)).mode & 0o777, 0o600, f);
    const seed = readFileSync(join(creds, f), 'utf8').trim();
    assert.not.ok(run.stdout.includes(seed), `the seed of ${f} is not printed`);
    assert.ok(run.stdout.includes(publicKeyOf(seed)!), `the configuration names the public key of ${f}`);
  }
  const shown = busConfig(['--node', 'na', '--credentials', creds, '--show-credentials']);
  assert.is(shown.status, 0);
  assert.ok(shown.stdout.includes(readFileSync(join(creds, 'provisioner.na.nk'), 'utf8').trim()), 'asked: the seeds are printed');
});

test('a seed others can read, a directory others can list, or a file that is no seed is refused naming it, and nothing is printed', () => {
  const creds = join(temp(), 'creds');
  assert.is(busConfig(['--node', 'na', '--credentials', creds]).status, 0);
  chmodSync(join(creds, 'runner.na.nk'), 0o644);
  const open = busConfig(['--node', 'na', '--credentials', creds]);
  assert.is(open.status, 1);
  assert.match(open.stderr, /runner\.na\.nk: mode 644 lets others read the seed; it must be 0600/);
  assert.is(open.stdout, '');
  chmodSync(join(creds, 'runner.na.nk'), 0o600);
  writeFileSync(join(creds, 'vault.nk'), 'not a seed\n', { mode: 0o600 });
  assert.match(busConfig(['--node', 'na', '--credentials', creds]).stderr, /vault\.nk: not an nkey user seed/);
  chmodSync(creds, 0o755);
  assert.match(busConfig(['--node', 'na', '--credentials', creds]).stderr, /must be 0700/);
});

test('bad flags exit 2 with the flag and the reason', () => {
  for (const [args, reason] of [
    [[], /needs at least one --node/],
    [['--node', 'Bad_Name'], /--node: "Bad_Name" is not a valid name/],
    [['--node', 'a', '--provider', 'x.y'], /--provider: "x\.y" is not a valid name/],
    [['--node', 'a', '--listen', 'nowhere'], /--listen: "nowhere" is not HOST:PORT/],
  ] as const) {
    const run = busConfig([...args, '--credentials', join(temp(), 'c')]);
    assert.is(run.status, 2, run.stderr);
    assert.match(run.stderr, reason);
  }
});

test('--out writes the file whole; nats-server accepts the configuration and a user logs in with its seed', async () => {
  const dir = temp();
  const port = await freePort();
  const conf = join(dir, 'nats.conf');
  const run = busConfig([
    '--node',
    'na',
    '--provider',
    'postgres',
    '--credentials',
    join(dir, 'creds'),
    '--out',
    conf,
    '--listen',
    `127.0.0.1:${port}`,
    '--store-dir',
    join(dir, 'js'),
  ]);
  assert.is(run.status, 0, run.stderr);
  assert.is(run.stdout, '');
  assert.equal(readdirSync(dir).sort(), ['creds', 'nats.conf']);
  const check = spawnSync('nats-server', ['-c', conf, '-t'], { encoding: 'utf8' });
  assert.is(check.status, 0, `nats-server -t: ${check.stderr}${check.stdout}`);

  const nats = spawn('nats-server', ['-c', conf], { stdio: 'ignore' });
  try {
    const nc = await connectBus(
      { servers: [`nats://127.0.0.1:${port}`], name: 'login', nkey: join(dir, 'creds', 'provisioner.na.nk'), inboxPrefix: INBOX_PREFIXES.node('na') },
      true,
    ).catch(async () => {
      await new Promise((r) => setTimeout(r, 500));
      return connectBus(
        { servers: [`nats://127.0.0.1:${port}`], name: 'login', nkey: join(dir, 'creds', 'provisioner.na.nk'), inboxPrefix: INBOX_PREFIXES.node('na') },
        true,
      );
    });
    assert.ok(nc.info?.server_id, 'logged in with the seed');
    await nc.close();
    const wrong = join(dir, 'wrong.nk');
    writeFileSync(wrong, new TextDecoder().decode(nkeys.createUser().getSeed()) + '\n', { mode: 0o600 });
    const refused = await connectBus({ servers: [`nats://127.0.0.1:${port}`], name: 'nobody', nkey: wrong }, true).then(
      () => 'connected',
      (e: Error) => e.message,
    );
    assert.match(refused, /authorization|auth/i, `an unknown key is refused: ${refused}`);
  } finally {
    nats.kill('SIGKILL');
  }
});

test('the configuration is a pure function of the mesh: every user listed, every node importing only its own keys', () => {
  const users = usersOf({ nodes: ['nb', 'na'], providers: ['pg'] });
  assert.equal(users, ['admin', 'provisioner', 'vault', 'provider.pg', 'provisioner.na', 'runner.na', 'provisioner.nb', 'runner.nb']);
  const logins = loadOrCreateLogins(join(temp(), 'c'), users);
  if (!logins.ok) throw new Error(logins.reason);
  const text = renderBusConfig({
    nodes: ['na', 'nb'],
    providers: ['pg'],
    archives: 'arch',
    listen: '127.0.0.1:1',
    storeDir: '/x',
    publicKeys: new Map(logins.value.logins.map((l) => [l.user, l.publicKey])),
  });
  const na = nodeImports('na', ['pg'], 'arch').map((g) => g.subject);
  // Shared by design: every plan, the registry, the archives, the vault's verb, flow control, the API's presence.
  const shared = /mesh-provisioner_plans|mesh-provisioner_registry|OBJ_arch|^mesh-vault|^\$JS\.FC\.|^\$JS\.API\.INFO$/;
  for (const s of na) if (!shared.test(s)) assert.ok(s.includes('.na.'), `${s} is na's own`);
  assert.ok(na.includes('$JS.API.CONSUMER.CREATE.KV_pg_bound.*.$KV.pg_bound.na.>'), 'its keys of the provider named');
  assert.ok(na.includes('$JS.API.CONSUMER.CREATE.KV_mesh-provisioner_needs.*.$KV.mesh-provisioner_needs.na.>'), 'its own needs read');
  assert.not.ok(text.includes('STREAM.MSG.GET') || /"\$JS\.API\.CONSUMER\.CREATE\.KV_mesh-config_resolved"/.test(text), 'never the unfiltered reads');
});

test('the seat may delete the consumers its watches replace and ask its own verb; a node deletes none (a consumer name is not per node)', () => {
  const seat = seatPublish('arch');
  for (const b of ['mesh-provisioner_plans', 'mesh-controller_assignments', 'mesh-catalog_modules']) {
    assert.ok(seat.includes(`$JS.API.CONSUMER.DELETE.KV_${b}.*`), `the seat deletes its replaced consumers on ${b}`);
  }
  assert.not.ok(
    seat.some((s) => s.startsWith('$JS.API.CONSUMER.DELETE.KV_mesh-config_resolved')),
    'none of mesh-config_resolved, which it never watches',
  );
  assert.ok(seat.includes('mesh-provisioner.provisioning'), '`query` with the seat’s login asks its verb');
  assert.not.ok(
    nodeImports('na', ['pg'], 'arch').some((g) => g.subject.includes('CONSUMER.DELETE')),
    'a node deletes no consumer',
  );
});

test('no login but admin may create, update, delete or purge a stream; a node asks the vault under its own name', () => {
  const text = renderBusConfig({
    nodes: ['na'],
    providers: ['pg'],
    archives: 'arch',
    listen: '127.0.0.1:1',
    storeDir: '/x',
    publicKeys: new Map(usersOf({ nodes: ['na'], providers: ['pg'] }).map((u) => [u, `U${u}`])),
  });
  for (const api of ['CREATE', 'UPDATE', 'DELETE', 'PURGE']) assert.not.ok(text.includes(`$JS.API.STREAM.${api}`), `no grant of STREAM.${api}`);
  assert.ok(
    text.includes('{ service: { account: MESH, subject: "mesh-vault.credential.na" }, to: "mesh-vault.credential" }'),
    'na asks on mesh-vault.credential; the vault hears mesh-vault.credential.na',
  );
  assert.ok(text.includes('{ service: "mesh-vault.credential.na", accounts: ["provisioner.na"] }'), "only na imports na's name");
  assert.not.ok(/\{ service: "mesh-vault\.credential" \}/.test(text), 'the bare verb is not exported');
});

test("node names that were other logins' inbox prefixes get inboxes of their own; a clash of logins is refused naming both", () => {
  const nodes = ['provisioner', 'vault', 'provider-pg', 'seat', 'admin', 'node-x', 'runner-x'];
  const prefixes = inboxPrefixesOf({ nodes, providers: ['pg', 'x'] });
  assert.is(new Set(prefixes.values()).size, prefixes.size, `every login its own prefix: ${[...prefixes.values()].join(' ')}`);
  assert.is(prefixes.get('provisioner.vault'), '_INBOX_node_vault');
  assert.is(prefixes.get('vault'), '_INBOX_vault');
  assert.is(loginCollision({ nodes, providers: ['pg', 'x'] }), undefined);
  const run = busConfig(['--node', nodes.join(','), '--provider', 'pg', '--credentials', join(temp(), 'c')]);
  assert.is(run.status, 0, run.stderr);
  // A name the grammar lets through cannot clash; one that could (upper case, as an older check let in) is refused.
  assert.match(
    loginCollision({ nodes: ['na', 'NA'], providers: [] }) ?? '',
    /login provisioner\.na and login provisioner\.NA would share the user name "provisioner\.NA"|would share/,
  );
});

test.run();
