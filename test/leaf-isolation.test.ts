// Isolation through a site's leaf server (issue 22 item 2, DESIGN §11): the isolation matrix's rows
// whose actor is a node's login (its client, its runner), each run by a connection to the site's
// server instead of the hub, come out as they do on the hub and as docs/isolation.md says — a node
// at a site can do exactly what a node on the hub can, and nothing of another node's.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import type { NatsConnection } from '@nats-io/transport-node';
import { connectBus } from '../src/shared/bus/bus.ts';
import { inboxPrefixesOf, USERS } from '../src/server/commands/bus-config/users.ts';
import { ROOT } from './helpers/bundle.ts';
import { withIsolatedMesh } from './helpers/isolated-mesh.ts';
import { matrixContext } from './helpers/isolation-context.ts';
import { A, B, PROVIDER } from './helpers/isolation-actions.ts';
import { ROWS } from './helpers/isolation-rows.ts';
import { NAMESAKES, STREAM_ROWS } from './helpers/isolation-rows-streams.ts';
import { freePort, startNats } from './helpers/nats.ts';

const NODES = [A, B, ...Object.values(NAMESAKES)];
const SITE = 'site1';

test("a node's logins at a site can do what they can on the hub, row for row of the isolation matrix", async () => {
  const hubLeafPort = await freePort();
  await withIsolatedMesh({ nodes: NODES, providers: [PROVIDER], archives: 'object', leaf: { listen: `127.0.0.1:${hubLeafPort}` } }, async (m) => {
    const site = await startNats('', {
      dir: join(m.dir, SITE),
      whole: ({ listen }) => {
        const args = ['bus-config', ...NODES.flatMap((n) => ['--node', n]), '--provider', PROVIDER, '--credentials', join(m.dir, 'credentials')];
        const run = spawnSync(
          process.execPath,
          [join(ROOT, 'dist', 'server.js'), ...args, '--leaf', SITE, '--hub', `nats-leaf://127.0.0.1:${hubLeafPort}`, '--listen', listen],
          {
            encoding: 'utf8',
          },
        );
        if (run.status !== 0) throw new Error(`bus-config --leaf exited ${run.status}: ${run.stderr}`);
        return run.stdout;
      },
    });
    const opened: NatsConnection[] = [];
    try {
      const prefixes = inboxPrefixesOf({ nodes: NODES, providers: [PROVIDER] });
      const atSite = new Set(NODES.flatMap((n) => [USERS.client(n), USERS.runner(n)]));
      const c = await matrixContext(m, async (user) => {
        if (!atSite.has(user)) return m.connect(user);
        const nc = await connectBus({ servers: [site.url], name: `${user} at ${SITE}`, nkey: m.nkey(user), inboxPrefix: prefixes.get(user)! });
        opened.push(nc);
        return nc;
      });
      const rows = [...ROWS, ...STREAM_ROWS].filter((r) => atSite.has(r.actor));
      assert.ok(rows.length >= 15, `the node rows: ${rows.length}`);
      const wrong: string[] = [];
      for (const row of rows) {
        const observed = await row.run(c).catch((err: Error) => ({ verdict: 'error', how: err.message }));
        if (observed.verdict !== row.expected)
          wrong.push(`${row.actor} at ${SITE}: ${row.action}: expected ${row.expected}, observed ${observed.verdict}: ${observed.how}`);
      }
      assert.equal(wrong, [], `rows that did not come out as on the hub:\n${wrong.join('\n')}`);
    } finally {
      for (const nc of opened) await nc.close().catch(() => {});
      await site.cleanup();
    }
  });
});

test.run();
