// Backup and restore as deploy/README.md says (issue 31 item 20): the README's lab, run from this
// release's tarball, is backed up with `server.js backup` while it serves; its bus is then lost
// (nats-server stopped); a new bus is made from the same credentials, the backup restored into it
// with `server.js restore` and checked with `init`. Every stream comes back message for message, at
// the same sequences (each plan, config value, report, bound entry and rollout with its revision; each
// archive chunk). The seat, the vault, the provider and each client are started again on the new bus
// — the engines run on throughout — and no module is restarted; a config change then reaches its file.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import { labBlocks, startLabShell, type LabShell } from '../demo/lab.ts';
import { connectBus } from '../src/shared/bus/bus.ts';
import { INBOX_PREFIXES } from '../src/shared/bus/inbox.ts';
import { ROOT } from './helpers/bundle.ts';
import {
  assertOneRestartAfterChange,
  fillsSaid,
  labEnv,
  labProgram,
  labPrograms,
  linesOf,
  packRelease,
  RELEASE_TOP,
  restartProgram,
  stopRestarted,
} from './helpers/lab.ts';
import { freePort } from './helpers/nats.ts';
import { startPostgres, type Postgres } from './helpers/postgres.ts';
import { streamContents } from './helpers/stream-contents.ts';
import { waitFor } from './helpers/wait.ts';
import { tempDir } from './helpers/temp.ts';

const BLOCK_MS = 90_000;

let work = '';
let db: Postgres | undefined;
let shell: LabShell | undefined;
const connections: NatsConnection[] = [];

test.before(async () => {
  work = tempDir('mesh-backup-');
  packRelease(work);
  db = await startPostgres();
});
test.after(async () => {
  await Promise.all(connections.map((nc) => nc.close().catch(() => {})));
  await stopRestarted();
  await shell?.stop();
  await db?.stop();
  rmSync(work, { recursive: true, force: true });
});

/** A connection to `url` as the lab's admin. */
async function admin(lab: string, url: string): Promise<NatsConnection> {
  const nc = await connectBus({ servers: [url], name: 'backup-test', nkey: join(lab, 'credentials', 'admin.nk'), inboxPrefix: INBOX_PREFIXES.admin });
  connections.push(nc);
  return nc;
}

test('the lab, backed up while it serves and restored into a new bus, has every stream back at its sequences, and no module restarts', async () => {
  const port = await freePort();
  shell = startLabShell(work, labEnv(work, port, db!));
  const lab = join(work, RELEASE_TOP, 'lab');
  const run = (block: string) => shell!.run(block, BLOCK_MS);
  const blocks = labBlocks(readFileSync(join(ROOT, 'README.md'), 'utf8'));
  // The lab up to its rollout (block 8 stops it); then settled: the rotation's restart of app made, every module applied.
  for (const block of blocks.slice(0, 7)) await run(block);
  const journal = (node: string) => linesOf(join(lab, node, 'journal.log'));
  await waitFor('the rotation’s restart of app', () => journal('n1').filter((l) => l.endsWith(' restart app')).length >= 2, 30_000);
  await run("timeout 30 sh -c 'until node server.js status >/dev/null; do sleep 1; done'");
  const before = await streamContents(await admin(lab, `nats://127.0.0.1:${port}`));
  const journals = { n1: journal('n1'), n2: journal('n2') };

  // The backup, while every program runs.
  const backup = await run('node server.js backup $LAB/backup');
  assert.match(backup.stdout, new RegExp(`^backup of ${before.size} streams in `, 'm'), backup.stdout + backup.stderr);

  // The bus is lost; a new one from the same credentials, the backup restored into it, then init.
  process.kill(labProgram(shell.child.pid!, 'nats-server', (p) => p.program === 'nats-server').pid, 'SIGTERM');
  const newPort = await freePort();
  const restored = await run(
    [
      `export NEW_BUS=nats://127.0.0.1:${newPort}`,
      `node server.js bus-config --node n1 --node n2 --provider postgres --credentials $LAB/credentials --listen 127.0.0.1:${newPort} --store-dir $LAB/jetstream-new --out $LAB/nats-new.conf`,
      'nats-server -c $LAB/nats-new.conf 2>$LAB/nats-new.log &',
      "until grep -q 'Server is ready' $LAB/nats-new.log; do sleep 0.2; done",
      'node server.js restore $LAB/backup --nats $NEW_BUS',
      'node server.js init --nats $NEW_BUS --provider postgres --nodes 2',
    ].join('\n'),
  );
  assert.match(restored.stdout, new RegExp(`^restored ${before.size} streams from `, 'm'), restored.stdout + restored.stderr);
  assert.match(restored.stdout, /^\d+ buckets ready/m, restored.stdout + restored.stderr);
  assert.not.match(restored.stdout, /^(created|updated) bucket/m, 'init found every bucket as the backup left it');
  const after = await streamContents(await admin(lab, `nats://127.0.0.1:${newPort}`));
  assert.equal([...after.keys()], [...before.keys()]);
  for (const [stream, contents] of before) assert.equal(after.get(stream), contents, `${stream} is not as it was`);

  // Every program but the engines started again on the new bus, as it was started, the new bus in its environment.
  const engineLog = (node: string) => join(lab, node, 'engine.log');
  const logged = { n1: linesOf(engineLog('n1')).length, n2: linesOf(engineLog('n2')).length };
  const movers = labPrograms(shell.child.pid!).filter((p) => ['server.js', 'client.js', 'vault.js', 'postgres-provider.js'].includes(p.program));
  assert.is(movers.length, 5, movers.map((p) => p.argv.join(' ')).join('\n'));
  await Promise.all(movers.map((p) => restartProgram(p, { env: { MESH_NATS_URL: `nats://127.0.0.1:${newPort}` } })));
  // Each client fills every module of its node again once it is back (restored reports say applied already):
  // the engine answers each fill unchanged.
  for (const [node, modules] of [
    ['n1', ['web', 'postgres', 'app']],
    ['n2', ['web']],
  ] as const) {
    const fills = await waitFor(
      `${node}'s engine to be sent ${modules.join(', ')} again`,
      () => {
        const said = fillsSaid(engineLog(node), logged[node]);
        return modules.every((m) => said.has(m)) ? said : undefined;
      },
      30_000,
    );
    for (const m of modules) assert.match(fills.get(m)!, /^\d+ unchanged$/, `${node}.${m} after the restore: ${fills.get(m)}`);
  }
  await run("timeout 30 sh -c 'until node server.js status --nats $NEW_BUS >/dev/null; do sleep 1; done'");

  // A change made on the new bus reaches its file and restarts web once: the only restart since the backup.
  await assertOneRestartAfterChange(lab, journals, () => run('node server.js config set n1 web workers 9 --nats $NEW_BUS'));
  for (const code of await stopRestarted()) assert.is(code, 0, 'each program restarted on the new bus stops with 0');
});

test.run();
