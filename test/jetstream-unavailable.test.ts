// Daemons started while the bus's JetStream has no meta leader (issue 31 item 7), as at a fleet's
// first boot: a three-server cluster running the generated configuration is left with one server
// running, which answers every JetStream call "JetStream system temporarily unavailable" (503). The
// seat, a node's client, the vault and the PostgreSQL provider, each its bundle on its own seed,
// started then, wait — each says so once at warning — and come through once the other servers are
// back and `init` has made the buckets (three copies each); none exits (the seat and the client
// exited 1 on the first 503). The vault, asked meanwhile, answers busy (to be asked again), where it
// refused the credential for want of the plan it could not read.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import { connectBus } from '../src/shared/bus/bus.ts';
import { jsonBytes } from '../src/shared/base/bytes.ts';
import { INBOX_PREFIXES } from '../src/shared/bus/inbox.ts';
import { vaultCredentialOf } from '../src/shared/contract/subjects.ts';
import { USERS } from '../src/server/commands/bus-config/users.ts';
import { cleanupBundles, copyBundleAlone, ensureBuilt, runBundle, startBundle, type Running } from './helpers/bundle.ts';
import { leaveWithoutMetaLeader, startMeshCluster, type MeshCluster } from './helpers/mesh-cluster.ts';
import { waitForMetaLeader } from './helpers/nats-cluster.ts';
import { tempDir } from './helpers/temp.ts';

const NODE = 'n1';
const PROVIDER = 'pg';
/** A credential the vault is asked for: n1.web's of pg, which no plan binds. */
const CREDENTIAL = `pair/${PROVIDER}/database/${NODE}/web`;
/** How long a daemon may take to say its wait, and to come through once the cluster is whole again. */
const SAY_MS = 15_000;
/** The one warning a daemon says while the bus's JetStream does not answer. */
const UNAVAILABLE = / warning the bus's JetStream does not answer \(JetStream system temporarily unavailable\): waiting for it, trying again$/;
/** What each daemon says once JetStream answers again. */
const ANSWERS_AGAIN = / notice the bus's JetStream answers again, after \d+\.\d s/;

let cluster: MeshCluster;
/** The test's connection as admin, to ask the vault; closed after, whatever happened. */
let admin: NatsConnection | undefined;
let work: string;
const dirs = new Map<string, string>();

test.before(async () => {
  for (const b of ['server', 'client', 'vault', 'postgres-provider']) {
    ensureBuilt(b);
    dirs.set(b, copyBundleAlone(b));
  }
  work = tempDir('mesh-js-unavailable-');
  mkdirSync(join(work, 'cache'));
  cluster = await startMeshCluster({ nodes: [NODE], providers: [PROVIDER] });
});

test.after(async () => {
  await admin?.close();
  cleanupBundles();
  await cluster?.cleanup();
  rmSync(work, { recursive: true, force: true });
});

/** Starts a daemon's bundle on every server of the cluster, logged in as `user`. */
function daemon(bundle: string, user: string, args: string[], env: Record<string, string> = {}): Running {
  return startBundle('node', dirs.get(bundle)!, bundle, ['--nats', cluster.nats, '--nkey', cluster.nkey(user), ...args], env);
}

test('started while JetStream answers 503, the seat, a client, the vault and a provider wait, say it once, and come through once the servers are back and init has run', async () => {
  const started = Date.now();
  await leaveWithoutMetaLeader(cluster);

  const running = {
    seat: daemon('server', USERS.seat, ['--replicas', '3']),
    client: daemon('client', USERS.client(NODE), ['--node', NODE, '--socket', join(work, 'fill.sock'), '--cache', join(work, 'cache')]),
    vault: daemon('vault', USERS.vault, ['--store', join(work, 'vault')]),
    provider: daemon('postgres-provider', USERS.provider(PROVIDER), ['--provider', PROVIDER, '--consumers', join(work, PROVIDER, 'consumers.json')], {
      PGPASSWORD: 'unused',
    }),
  };
  // The vault makes no JetStream call until asked: it is ready at once, and asked, it cannot read the
  // plans that say who may have a credential: busy (asked again), not a refusal.
  await running.vault.waitForLog(/vault ready/, SAY_MS);
  admin = await connectBus({ servers: [cluster.servers[0]!.url], name: 'admin', nkey: cluster.nkey(USERS.admin), inboxPrefix: INBOX_PREFIXES.admin });
  const ask = async () => (await admin!.request(vaultCredentialOf(NODE), jsonBytes({ name: CREDENTIAL }), { timeout: 10_000 })).json<{ error?: string }>();
  assert.equal(await ask(), { error: 'busy' });
  for (const name of ['seat', 'client', 'provider'] as const) await running[name].waitForLog(UNAVAILABLE, SAY_MS);

  await Promise.all(cluster.servers.filter((s) => !s.running()).map((s) => s.restart()));
  await waitForMetaLeader(cluster.servers);
  const init = await runBundle(
    'node',
    dirs.get('server')!,
    'server',
    ['init', '--nats', cluster.nats, '--nkey', cluster.nkey(USERS.admin), '--replicas', '3', '--nodes', '1', '--provider', PROVIDER],
    {},
    60_000,
  );
  assert.is(init.code, 0, init.stdout + init.stderr);
  const through = { seat: /seat ready/, client: /client ready/, provider: /pg_bound: 0 bound entries of database at start/ };
  for (const [name, line] of Object.entries(through)) {
    const r = running[name as keyof typeof through];
    await r.waitForLog(line, 30_000);
    await r.waitForLog(ANSWERS_AGAIN);
    const warned = r
      .stderr()
      .split('\n')
      .filter((l) => / warning .*(JetStream|temporarily unavailable)/.test(l));
    assert.is(warned.length, 1, `${name} said JetStream's absence at warning once:\n${r.stderr()}`);
  }
  // The vault reads the plans again: no plan binds pg for n1.web, so it refuses, saying why.
  assert.equal(await ask(), { error: `${NODE}.web has no plan binding ${PROVIDER} database` });
  await running.vault.waitForLog(/ notice mesh-provisioner_plans can be read again, after \d+\.\d s/);
  assert.is(
    running.vault
      .stderr()
      .split('\n')
      .filter((l) => / warning mesh-provisioner_plans cannot be read/.test(l)).length,
    1,
    running.vault.stderr(),
  );
  for (const [name, r] of Object.entries(running)) assert.is(r.child.exitCode, null, `${name} still runs:\n${r.stderr()}`);
  console.log(`  through in ${Date.now() - started} ms, the cluster's 10 s without a meta leader and init included`);
});

test.run();
