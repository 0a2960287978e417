// A three-server cluster on what `bus-config` generates (deploy/README.md): each server's own name,
// monitoring and routes around an `include` of the generated configuration, every login its seed.
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { seedFile } from '../../src/server/commands/bus-config/credentials.ts';
import { ensureBuilt, ROOT } from './bundle.ts';
import { startNatsCluster, type NatsCluster } from './nats-cluster.ts';
import { tempDir } from './temp.ts';

/** Three nats-servers routed together, each running what `bus-config` generates for it around its name and routes (deploy/README.md). */
export async function startGeneratedCluster(nodes: string[]): Promise<{ cluster: NatsCluster; seed: (user: string) => string }> {
  ensureBuilt('server');
  const credentials = join(tempDir('mesh-init-cluster-'), 'credentials');
  const busConfig = (listen: string, storeDir: string, out: string) => {
    const run = spawnSync(
      process.execPath,
      [
        join(ROOT, 'dist', 'server.js'),
        'bus-config',
        ...nodes.flatMap((n) => ['--node', n]),
        '--credentials',
        credentials,
        '--listen',
        listen,
        '--store-dir',
        storeDir,
        '--out',
        out,
      ],
      { encoding: 'utf8' },
    );
    if (run.status !== 0) throw new Error(`bus-config exited ${run.status}: ${run.stderr}`);
  };
  const cluster = await startNatsCluster({
    config: (where, s) => {
      busConfig(where.listen, where.storeDir, join(s.dir, 'mesh.conf'));
      const routes = s.routes.map((p) => `"nats-route://127.0.0.1:${p}"`).join(', ');
      return `server_name: "${s.name}"\nhttp: "127.0.0.1:${s.http}"\ncluster { name: "mesh", listen: "127.0.0.1:${s.cluster}", routes: [${routes}] }\ninclude "mesh.conf"\n`;
    },
  });
  const cleanup = cluster.cleanup;
  cluster.cleanup = () => cleanup().then(() => rmSync(dirname(credentials), { recursive: true, force: true }));
  return { cluster, seed: (user) => seedFile(credentials, user) };
}
