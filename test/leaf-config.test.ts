// Leaf nodes in `bus-config` (issue 22 item 2): the hub's file takes sites' leaf connections only when
// asked, keeps only the hashes of their passwords, and stays reloadable as nodes are added; a site's
// file holds its nodes' passwords, mode 0600; a leaf connection without a login reaches nothing.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { chmodSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import bcrypt from 'bcryptjs';
import { connectBus } from '../src/shared/bus/bus.ts';
import { INBOX_PREFIXES } from '../src/shared/bus/inbox.ts';
import { nodeImports } from '../src/server/commands/bus-config/grants.ts';
import { USERS } from '../src/server/commands/bus-config/users.ts';
import { domainMappings } from '../src/server/commands/bus-config/leaf.ts';
import { busConfigOut, busConfigRun } from './helpers/bus-config-run.ts';
import { jetStreamFor } from './helpers/isolated-mesh.ts';
import { freePort, startNats } from './helpers/nats.ts';
import { spawnQuiet, type Spawn } from './helpers/spawn.ts';
import { waitFor } from './helpers/wait.ts';
import { tempDir } from './helpers/temp.ts';

const [NA, NB] = ['na', 'nb'];
const SITE = 'site1';

/** Whether the subject pattern `pattern` matches every subject `subject` (itself a pattern) can stand for. */
function covers(pattern: string, subject: string): boolean {
  const [p, t] = [pattern.split('.'), subject.split('.')];
  for (let i = 0; i < p.length; i++) {
    if (p[i] === '>') return t.length > i;
    if (i >= t.length || (p[i] !== '*' && p[i] !== t[i])) return false;
  }
  return p.length === t.length;
}

test("a site maps to the hub's domain exactly the JetStream API its nodes' accounts import there, so an ask outside it finds no responder at once", () => {
  const archives = 'mesh-catalog_archives';
  const froms = domainMappings('mesh', archives).map(([from]) => from);
  const granted = nodeImports(NA, ['pg', 'other'], archives)
    .map((g) => g.subject)
    .filter((s) => s.startsWith('$JS.API.') || s.startsWith('$KV.'));
  for (const subject of granted)
    assert.ok(
      froms.some((f) => covers(f, subject)),
      `${subject} crosses to the hub`,
    );
  const infos = froms.filter((f) => f.startsWith('$JS.API.STREAM.'));
  assert.equal(
    infos,
    granted.filter((s) => s.startsWith('$JS.API.STREAM.')),
    'only the streams a node may read',
  );
  for (const notGranted of [
    '$JS.API.STREAM.INFO.KV_mesh-config_resolved',
    '$JS.API.STREAM.INFO.KV_pg_bound',
    '$JS.API.STREAM.NAMES',
    '$JS.API.CONSUMER.DELETE.KV_x.y',
  ])
    assert.not.ok(
      froms.some((f) => covers(f, notGranted)),
      `${notGranted} stays at the site`,
    );
});

test('without --leaf-listen the hub names no domain, takes no leaf and makes no leaf password', () => {
  const creds = join(tempDir('mesh-leaf-'), 'creds');
  const run = busConfigRun(['--node', NA, '--credentials', creds]);
  assert.is(run.status, 0, run.stderr);
  assert.not.match(run.stdout, /leafnodes|domain/);
  assert.not.ok(readdirSync(creds).some((f) => f.endsWith('.pw')));
  rmSync(dirname(creds), { recursive: true, force: true });
});

test("a hub's file rendered again without the leaf flags says its sites are gone and how to keep them; with them, says nothing of it", () => {
  const dir = tempDir('mesh-leaf-');
  const [creds, out] = [join(dir, 'creds'), join(dir, 'hub.conf')];
  const leafFlags = ['--leaf-listen', '127.0.0.1:7422', '--js-domain', 'mesh'];
  const first = busConfigRun(['--node', NA, '--credentials', creds, '--out', out, ...leafFlags]);
  assert.is(first.status, 0, first.stderr);
  assert.match(readFileSync(out, 'utf8'), /^leafnodes \{$/m);
  // A node added as "Adding a node" shows it, without the hub's leaf flags.
  const added = busConfigRun(['--node', NA, '--node', NB, '--credentials', creds, '--out', out]);
  assert.is(added.status, 0, added.stderr);
  assert.match(added.stderr, /the file served leaf nodes \(sites\) and this run gives no --leaf-listen: .* run bus-config again with the same --leaf-listen/);
  // The same again with them: the sites are kept and nothing is said of them.
  const kept = busConfigRun(['--node', NA, '--node', NB, '--credentials', creds, '--out', out, ...leafFlags]);
  assert.is(kept.status, 0, kept.stderr);
  assert.not.match(kept.stderr, /served leaf nodes/);
  const again = busConfigRun(['--node', NA, '--node', NB, '--credentials', creds, '--out', out, ...leafFlags]);
  assert.not.match(again.stderr, /served leaf nodes/);
  rmSync(dir, { recursive: true, force: true });
});

test("the hub keeps only the leaf passwords' hashes, each login a user of its node's account; the site's file holds them, mode 0600", () => {
  const dir = tempDir('mesh-leaf-');
  const creds = join(dir, 'creds');
  const hubArgs = ['--node', `${NB},${NA}`, '--credentials', creds, '--leaf-listen', '0.0.0.0:7422', '--js-domain', 'central'];
  const hub = busConfigRun(hubArgs);
  assert.is(hub.status, 0, hub.stderr);
  assert.match(hub.stderr, /generated the leaf password of leaf\.na in .*leaf\.na\.pw/);
  assert.match(
    hub.stderr,
    /--leaf-listen 0\.0\.0\.0:7422 without --leaf-tls-cert: the sites' leaf passwords and the mesh's traffic cross the network in the clear/,
  );
  const loopback = busConfigRun(['--node', NA, '--credentials', creds, '--leaf-listen', '127.0.0.1:7422']);
  assert.not.match(loopback.stderr, /in the clear/, 'a leaf port on the loopback only is not warned of');
  const again = busConfigRun(hubArgs);
  assert.is(again.stdout, hub.stdout, 'the same mesh renders the same bytes');
  assert.not.match(again.stderr, /generated/, 'the second run reads the passwords the first wrote');
  assert.match(hub.stdout, /jetstream \{ store_dir: "[^"]+", domain: "central" \}/);
  for (const n of [NA, NB]) {
    const file = join(creds, `leaf.${n}.pw`);
    assert.is(statSync(file).mode & 0o777, 0o600);
    const password = readFileSync(file, 'utf8').trim();
    assert.not.ok(hub.stdout.includes(password), `the hub's file does not hold ${n}'s leaf password`);
    const account = hub.stdout.slice(hub.stdout.indexOf(`"provisioner.${n}": {`)).split('\n  }')[0]!;
    const [, hash] = new RegExp(`\\{ user: "leaf\\.${n}", password: "([^"]+)", allowed_connection_types: \\["LEAFNODE"\\] \\}`).exec(account) ?? [];
    assert.ok(hash && bcrypt.compareSync(password, hash), `leaf.${n} logs in with its password, into its own account, on a leaf connection only`);
  }
  const out = join(dir, 'site.conf');
  const site = busConfigRun([
    '--node',
    NA,
    '--credentials',
    creds,
    '--leaf',
    SITE,
    '--hub',
    'nats-leaf://hub1:7422,nats-leaf://hub2:7422',
    '--js-domain',
    'central',
    '--out',
    out,
  ]);
  assert.is(site.status, 0, site.stderr);
  assert.is(statSync(out).mode & 0o777, 0o600);
  const text = readFileSync(out, 'utf8');
  const password = readFileSync(join(creds, `leaf.${NA}.pw`), 'utf8').trim();
  assert.ok(text.includes(`"nats-leaf://leaf.${NA}:${password}@hub1:7422", "nats-leaf://leaf.${NA}:${password}@hub2:7422"`));
  // Only what the node's account imports crosses to the hub: any other JetStream ask finds no responder at the site, as on the hub.
  const mapped = (from: string, to: string) => `      ${JSON.stringify(from)}: ${JSON.stringify(to)}\n`;
  assert.ok(
    text.includes(
      '    mappings: {\n' +
        mapped('$JS.API.INFO', '$JS.central.API.INFO') +
        mapped('$JS.API.STREAM.INFO.KV_mesh-provisioner_plans', '$JS.central.API.STREAM.INFO.KV_mesh-provisioner_plans') +
        mapped('$JS.API.STREAM.INFO.KV_mesh-provisioner_registry', '$JS.central.API.STREAM.INFO.KV_mesh-provisioner_registry') +
        mapped('$JS.API.STREAM.INFO.OBJ_mesh-catalog_archives', '$JS.central.API.STREAM.INFO.OBJ_mesh-catalog_archives') +
        mapped('$JS.API.DIRECT.GET.>', '$JS.central.API.DIRECT.GET.>') +
        mapped('$JS.API.CONSUMER.CREATE.>', '$JS.central.API.CONSUMER.CREATE.>') +
        mapped('$KV.>', '$JS.central.API.$KV.>') +
        '    }\n',
    ),
    text,
  );
  assert.not.match(text, /jetstream|provisioner\.nb|leaf\.nb/, 'no JetStream at the site, nothing of a node elsewhere');
  chmodSync(join(creds, `leaf.${NA}.pw`), 0o644);
  const open = busConfigRun(hubArgs);
  assert.is(open.status, 1);
  assert.match(open.stderr, /leaf\.na\.pw: mode 644 lets others read the password; it must be 0600/);
  assert.is(open.stdout, '');
  rmSync(dir, { recursive: true, force: true });
});

test('bad leaf flags exit 2 naming the flag', () => {
  for (const [args, reason] of [
    [['--hub', 'nats-leaf://h:7422'], /--hub needs --leaf SITE/],
    [['--leaf', SITE], /--leaf needs --hub/],
    [['--leaf', SITE, '--hub', 'nats://h:4222'], /--hub: "nats:\/\/h:4222" is not nats-leaf:\/\/HOST:PORT/],
    [['--leaf', SITE, '--hub', 'nats-leaf://h:7422', '--leaf-listen', 'h:7422'], /--leaf and --leaf-listen contradict/],
    [['--leaf-advertise', 'h:7422'], /--leaf-advertise needs --leaf-listen/],
    [['--leaf-tls-cert', 'c.pem', '--leaf-tls-key', 'c.key'], /--leaf-tls-cert needs --leaf-listen/],
    [['--leaf-listen', 'h:7422', '--leaf-tls-cert', 'c.pem'], /--leaf-tls-cert and --leaf-tls-key go together/],
    [['--hub-ca', 'ca.pem'], /--hub-ca needs --leaf SITE/],
    [['--leaf-listen', 'nowhere'], /--leaf-listen: "nowhere" is not HOST:PORT/],
    [['--leaf-listen', 'h:7422', '--js-domain', 'a.b'], /--js-domain: "a\.b" is not a valid name/],
    [['--leaf', 'Bad_Site', '--hub', 'nats-leaf://h:7422'], /--leaf: "Bad_Site" is not a valid name/],
  ] as const) {
    const run = busConfigRun(['--node', NA, ...args, '--credentials', join(tmpdir(), 'mesh-leaf-never')]);
    assert.is(run.status, 2, `${args.join(' ')}: ${run.stderr}`);
    assert.match(run.stderr, reason);
  }
});

test('a node added to a hub that takes leaves is two reloads, not a restart; a leaf without a login reaches nothing', async () => {
  const dir = tempDir('mesh-leaf-');
  const creds = join(dir, 'creds');
  let said = '';
  const spawnLogged: Spawn = (n, c, a) => {
    const child = spawnQuiet(n, c, a);
    child.stderr?.on('data', (d: Buffer) => (said += String(d)));
    return child;
  };
  const leafPort = await freePort();
  const hubFile = (nodes: string, where: { listen: string; storeDir: string }) =>
    busConfigOut(['--node', nodes, '--credentials', creds, '--listen', where.listen, '--store-dir', where.storeDir, '--leaf-listen', `127.0.0.1:${leafPort}`]);
  let where = { listen: '', storeDir: '' };
  const hub = await startNats('', { dir: join(dir, 'hub'), spawn: spawnLogged, whole: (w) => hubFile(NA, (where = w)) });
  const closing: (() => unknown)[] = [() => hub.cleanup()];
  try {
    writeFileSync(join(hub.dir, 'nats.conf'), hubFile(`${NA},${NB}`, where));
    for (const round of [1, 2]) {
      process.kill(hub.pid()!, 'SIGHUP');
      await waitFor(`reload ${round}`, async () => ((said.match(/Reloaded server configuration/g) ?? []).length >= round ? true : null), 10_000);
    }
    assert.not.match(said, /Failed to reload/);
    const site = await startNats('', {
      dir: join(dir, 'site'),
      whole: ({ listen }) =>
        busConfigOut(['--node', NB, '--credentials', creds, '--leaf', SITE, '--hub', `nats-leaf://127.0.0.1:${leafPort}`, '--listen', listen]),
    });
    closing.push(() => site.cleanup());
    const nb = await connectBus({ servers: [site.url], name: 'nb', nkey: join(creds, `${USERS.client(NB)}.nk`), inboxPrefix: INBOX_PREFIXES.node(NB) });
    closing.push(() => nb.close());
    await waitFor('JetStream for the node added by a reload, at its site', async () => ((await jetStreamFor(nb)) === 'ok' ? true : null), 10_000);
    const stranger = await startNats('', {
      dir: join(dir, 'stranger'),
      whole: ({ listen }) =>
        `listen: "${listen}"\naccounts { A: { users: [ { user: a, password: a } ], mappings: { "$JS.API.>": "$JS.mesh.API.>" } } }\n` +
        `leafnodes { remotes: [ { url: "nats-leaf://127.0.0.1:${leafPort}", account: A } ] }\n`,
    });
    closing.push(() => stranger.cleanup());
    const a = await connectBus({ servers: [stranger.url], name: 'stranger', user: 'a', pass: 'a' });
    closing.push(() => a.close());
    await waitFor('the stranger connected', async () => (/for account "LEAF_STRANGERS"/.test(said) ? true : null), 10_000);
    assert.is.not(await jetStreamFor(a), 'ok', 'a leaf without a login reaches no JetStream');
  } finally {
    for (const step of closing.reverse())
      await Promise.resolve()
        .then(step)
        .catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
