// A three-server cluster running the configuration `bus-config` generates (DESIGN §11): each server
// the mesh's accounts and users, its own name and routes; every program logs in with its own seed.
// And a cluster left without a JetStream meta leader, where every JetStream call is answered "JetStream
// system temporarily unavailable" (503) or not at all.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_ARCHIVES } from '../../src/shared/contract/buckets.ts';
import { connectBus } from '../../src/shared/bus/bus.ts';
import { INBOX_PREFIXES } from '../../src/shared/bus/inbox.ts';
import { JETSTREAM_UNAVAILABLE_CODE } from '../../src/shared/bus/jetstream-errors.ts';
import { renderBusConfig } from '../../src/server/commands/bus-config/config.ts';
import { USERS, usersOf } from '../../src/server/commands/bus-config/users.ts';
import { loadOrCreateLogins, seedFile } from '../../src/server/commands/bus-config/credentials.ts';
import { startNatsCluster, type ClusterServer, type NatsCluster } from './nats-cluster.ts';
import { waitFor } from './wait.ts';
import { tempDir } from './temp.ts';

/** A cluster on the generated configuration, and where its seeds are. */
export type MeshCluster = NatsCluster & {
  /** The seed file of `user` (`admin`, `provisioner`, `provisioner.<node>`, …). */
  nkey(user: string): string;
  /** Every server's client URL, comma-separated, as `--nats` takes them. */
  nats: string;
};

/** Starts three servers routed to each other, each on the configuration bus-config renders for `nodes` and `providers`. */
export async function startMeshCluster(shape: { nodes: string[]; providers: string[] }): Promise<MeshCluster> {
  const credentials = join(tempDir('mesh-cluster-seeds-'), 'credentials');
  const logins = loadOrCreateLogins(credentials, usersOf(shape));
  if (!logins.ok) throw new Error(logins.reason);
  const publicKeys = new Map(logins.value.logins.map((l) => [l.user, l.publicKey]));
  const cluster = await startNatsCluster({
    config: (where, server) =>
      [
        `server_name: "${server.name}"`,
        `http: "127.0.0.1:${server.http}"`,
        `cluster { name: "mesh", listen: "127.0.0.1:${server.cluster}", routes: [${server.routes.map((p) => `"nats-route://127.0.0.1:${p}"`).join(', ')}] }`,
        renderBusConfig({ ...shape, archives: DEFAULT_ARCHIVES, ...where, publicKeys }),
      ].join('\n'),
  });
  return {
    ...cluster,
    nats: cluster.urls.join(','),
    nkey: (user) => seedFile(credentials, user),
    async cleanup() {
      await cluster.cleanup();
      rmSync(join(credentials, '..'), { recursive: true, force: true });
    },
  };
}

/**
 * Leaves the first server running alone, its store kept (every server stopped, then the first started
 * again), and resolves once it answers JetStream's API "JetStream system temporarily unavailable"
 * (503): alone of three it never has a meta leader, and it answers so once its meta group is 10 s
 * old (nats-server's lost-quorum interval), dropping every call before that.
 */
export async function leaveWithoutMetaLeader(cluster: MeshCluster, ms = 30_000): Promise<ClusterServer> {
  const [left] = cluster.servers;
  await Promise.all(cluster.servers.map((s) => s.stop()));
  await left!.restart();
  const nc = await connectBus({ servers: [left!.url], name: 'admin', nkey: cluster.nkey(USERS.admin), inboxPrefix: INBOX_PREFIXES.admin });
  try {
    await waitFor(
      `${left!.name}, alone, answering JetStream 503`,
      async () => {
        const reply = await nc.request('$JS.API.INFO', undefined, { timeout: 1000 }).catch(() => undefined);
        return (reply?.json() as { error?: { err_code?: number } } | undefined)?.error?.err_code === JETSTREAM_UNAVAILABLE_CODE;
      },
      ms,
    );
  } finally {
    await nc.close();
  }
  return left!;
}
