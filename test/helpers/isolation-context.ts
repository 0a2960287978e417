// The isolation matrix's mesh (DESIGN §11, issue 12): module `web` applied on both nodes from an
// obj:// archive, the provider `pg` planned on na with its entries, the vault, and every actor connected — on the hub, or (for
// a node's logins) wherever the caller connects them, as a site's leaf server (test/leaf-isolation).
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import { ensureKv } from '../../src/shared/bus/bus.ts';
import { boundBucket } from '../../src/server/commands/bus-config/config.ts';
import { USERS } from '../../src/server/commands/bus-config/users.ts';
import { leafPasswordFile, leafUser } from '../../src/server/commands/bus-config/leaf-secrets.ts';
import type { ModuleSpec } from './archive.ts';
import type { IsolatedMesh, IsolatedNode } from './isolated-mesh.ts';
import { A, B, COLLECTION, CREDENTIAL, LEVEL, MODULE, PROVIDER, type MatrixContext } from './isolation-actions.ts';
import { NAMESAKES } from './isolation-rows-streams.ts';
import { startVault } from './vault.ts';

/** Module `web`: a config and a placement placeholder in its file, the config in an item. */
export const WEB: ModuleSpec = {
  templates: { 'web.conf': 'listen ${port:http}\nlevel ${config:level}\n', 'web.zsh': 'export WEB_LEVEL=${config:level}\n' },
  provisioning: {
    files: [{ path: '${dir:config}/web.conf', template: 'web.conf', mode: 'owned', change: 'restart' }],
    items: [{ collection: COLLECTION, template: 'web.zsh' }],
    // Every node's web binds the provider on na: the vault hands na, and only na, their credentials.
    provisions: [{ provider: PROVIDER, provision: 'database', node: A }],
  },
};
/** Module `pg`, the provider: it provides `database` (its file names no consumer, so it asks the vault nothing). */
export const PG: ModuleSpec = {
  templates: { 'pg.conf': 'serves database\n' },
  provisioning: { files: [{ path: '${dir:config}/pg.conf', template: 'pg.conf' }], provides: [{ provision: 'database' }] },
};
/** The file of `web` at `level`. */
export const expected = (level: string) => `listen 8080\nlevel ${level}\n`;

/** Starts a node's engine and client and waits for `web` applied at `level`. */
export async function startApplied(m: IsolatedMesh, name: string, level: string): Promise<IsolatedNode> {
  const node = m.node(name);
  await node.startEngine();
  await node.startClient();
  await m.waitReport(name, MODULE, (r) => r.state === 'applied');
  assert.is(node.moduleFile(MODULE), expected(level));
  return node;
}

/** The matrix's mesh (`connect` logs an actor in, default on the hub): both nodes applied from an obj:// archive, the provider's entries, the vault, and every actor connected. */
export async function matrixContext(m: IsolatedMesh, connect: (user: string) => Promise<NatsConnection> = m.connect): Promise<MatrixContext> {
  for (const n of [A, B]) await m.kv.config.put(`${n}.${MODULE}.level`, LEVEL(n));
  const bound = await ensureKv(await m.connect(USERS.provider(PROVIDER)), boundBucket(PROVIDER), 1);
  for (const n of [A, B]) await bound.put(`${n}.${MODULE}.database`, JSON.stringify({ as: `${n}-user`, user: `${n}-user`, values: {} }));
  const vault = await startVault(await m.connect(USERS.vault), []);
  await vault.set(CREDENTIAL.name, CREDENTIAL.value);
  const { tar } = await m.publish(MODULE, WEB);
  // pg is planned on na, so the vault hands na the credentials of the consumers bound there (DESIGN §11).
  await m.publish(PROVIDER, PG);
  await m.assign(A, PROVIDER);
  for (const n of [A, B]) await m.assign(n, MODULE);
  for (const n of [A, B]) await startApplied(m, n, LEVEL(n));
  const actors = new Map<string, NatsConnection>([['admin', m.admin]]);
  const users = [
    USERS.seat,
    USERS.vault,
    USERS.provider(PROVIDER),
    USERS.client(A),
    USERS.client(B),
    USERS.runner(A),
    USERS.runner(B),
    ...Object.values(NAMESAKES).map(USERS.client),
  ];
  for (const user of users) actors.set(user, await connect(user));
  return {
    admin: m.admin,
    as(user) {
      const nc = actors.get(user);
      if (!nc) throw new Error(`no connection of ${user}: add it to the actors`);
      return nc;
    },
    seatSaid: m.seatSaid,
    nodeSaid: (n) => m.node(n).log.lines.join('\n'),
    vaultAsked: () => vault.asked,
    vaultIgnored: () => vault.ignored,
    archive: tar,
    connect: (user, name) => m.connect(user, name),
    leafLogin: (n) => ({ url: m.nats.url, user: leafUser(n), password: readFileSync(leafPasswordFile(join(m.dir, 'credentials'), n), 'utf8').trim() }),
  };
}
