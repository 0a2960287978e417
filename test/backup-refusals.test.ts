// What `server.js backup` and `restore` refuse, each with one line and nothing written (deploy/README.md,
// "Backup and restore"), on the bus bus-config generates: a directory that is not empty, a login
// other than admin, a backup that did not finish (no manifest.json), a bus that has the streams
// already, and copies the bus cannot hold.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ensureBuilt, ROOT } from './helpers/bundle.ts';
import { busConfigOut } from './helpers/bus-config-run.ts';
import { startNats, type NatsServer } from './helpers/nats.ts';
import { tempDir } from './helpers/temp.ts';

let dir = '';
const servers: NatsServer[] = [];

/** A bus as bus-config renders it for one node, from the suite's credentials. */
async function generatedBus(name: string): Promise<NatsServer> {
  const server = await startNats('', {
    dir: join(dir, name),
    whole: (where) => busConfigOut(['--node', 'n1', '--credentials', join(dir, 'credentials'), '--listen', where.listen, '--store-dir', where.storeDir]),
  });
  servers.push(server);
  return server;
}

/** `node dist/server.js <args>` run to its end. */
function server(...args: string[]) {
  return spawnSync(process.execPath, [join(ROOT, 'dist', 'server.js'), ...args], { encoding: 'utf8', timeout: 60_000 });
}

const seed = (user: string) => join(dir, 'credentials', `${user}.nk`);

test.before(() => {
  ensureBuilt('server');
  dir = tempDir('mesh-backup-refusals-');
});
test.after(async () => {
  await Promise.all(servers.map((s) => s.cleanup()));
  rmSync(dir, { recursive: true, force: true });
});

test('backup and restore refuse, naming why, and write nothing', async () => {
  const bus = await generatedBus('bus');
  const on = (url: string, user = 'admin') => ['--nats', url, '--nkey', seed(user)];
  assert.is(server('init', ...on(bus.url), '--nodes', '1').status, 0);

  // A directory that is not empty: exit 2, the directory as it was.
  const full = join(dir, 'full');
  mkdirSync(full);
  writeFileSync(join(full, 'keep'), 'x');
  const intoFull = server('backup', full, ...on(bus.url));
  assert.is(intoFull.status, 2, intoFull.stderr);
  assert.match(intoFull.stderr, /is not empty: a backup goes into a new or empty directory; nothing written/);
  assert.equal(readdirSync(full), ['keep']);

  // Another login than admin: exit 1, the directory it made taken away.
  const asSeat = join(dir, 'as-seat');
  const refused = server('backup', asSeat, ...on(bus.url, 'provisioner'));
  assert.is(refused.status, 1, refused.stderr);
  assert.match(refused.stderr, /backup and restore need the admin login/);
  assert.not.ok(existsSync(asSeat), 'the refused backup left its directory');

  // A backup, then a restore into the bus that has its streams: exit 1, each stream named, nothing written.
  const good = join(dir, 'good');
  const made = server('backup', good, ...on(bus.url));
  assert.is(made.status, 0, made.stderr);
  const again = server('restore', good, ...on(bus.url));
  assert.is(again.status, 1, again.stderr);
  assert.match(
    again.stderr,
    /this bus has the streams KV_\S+, .*OBJ_mesh-catalog_archives already: restore goes into a bus without them \(a new bus, before init\); nothing written/,
  );

  // More copies than one server holds: exit 1 saying what to give, and the new bus left without streams.
  const fresh = await generatedBus('fresh');
  const tooMany = server('restore', good, '--replicas', '3', ...on(fresh.url));
  assert.is(tooMany.status, 1, tooMany.stderr);
  assert.match(tooMany.stderr, /cannot hold --replicas 3 \(.*\): give restore --replicas with at most the bus's JetStream servers \(none restored\)/);
  const list = server('init', ...on(fresh.url), '--nodes', '1');
  assert.match(list.stdout, /^created bucket /m, 'the refused restore made no stream');

  // A backup that did not finish (no manifest.json): exit 2 before the bus is reached.
  unlinkSync(join(good, 'manifest.json'));
  const unfinished = server('restore', good, ...on('nats://127.0.0.1:1'));
  assert.is(unfinished.status, 2, unfinished.stderr);
  assert.match(unfinished.stderr, /holds no manifest\.json: it is not a backup, or one that did not finish; nothing written/);
});

test.run();
