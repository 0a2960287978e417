// A vault that does not answer (restarting, its machine away) never takes a consumer out of its
// provider's consumers file (DESIGN §7 point 8 leaves out only what the vault does not hold or will
// not hand): left out, the consumer is withdrawn by its provider — the PostgreSQL provider drops its
// role and database, data included. Found from test/backup-restore.test.ts, where the vault and the
// provider node's client were restarted together: one run in four, n1's consumers file was written
// without app. A client asking while the vault is away keeps what it held — nothing yet (the file
// waits) or the credential it had — and asks again until the vault answers.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import { ensureKv } from '../src/shared/bus/bus.ts';
import { jsonBytes } from '../src/shared/base/bytes.ts';
import { VAULT_CHANGED } from '../src/shared/contract/subjects.ts';
import type { ConsumerEntry } from '../src/sdk/types.ts';
import { startMesh, type Mesh } from './helpers/mesh.ts';
import { startVault, type Vault } from './helpers/vault.ts';
import { waitFor } from './helpers/wait.ts';

const PAIR = 'pair/postgres/database/a/web';

/** Node a runs the consumer web, node b the provider module postgres; the vault is the test's to start. */
async function withProviderNode(fn: (m: Mesh, consumersFile: string, startVault: () => Promise<Vault>) => Promise<void>): Promise<void> {
  const m = await startMesh({ node: 'a' });
  const b = m.node('b');
  const vaults: Vault[] = [];
  try {
    await ensureKv(m.nc, 'postgres_bound', 1);
    await m.publish('postgres', {
      templates: { 'consumers.json': '${consumers:database}\n' },
      provisioning: { files: [{ path: '${dir:config}/consumers.json', template: 'consumers.json', change: 'none' }], provides: [{ provision: 'database' }] },
    });
    await m.publish('web', {
      templates: { 'db.conf': 'user=${bound:database:user}\n' },
      provisioning: {
        files: [{ path: '${dir:config}/db.conf', template: 'db.conf' }],
        provisions: [{ provider: 'postgres', provision: 'database', node: 'b', name: 'db-password' }],
      },
    });
    await m.assign('b', 'postgres', { dir: { config: join(b.root, 'etc', 'postgres') } });
    await m.assign('a', 'web');
    await b.startEngine();
    const start = async () => {
      const vault = await startVault(m.nc, [m.secrets, b.secrets], { lab: true });
      vaults.push(vault);
      await vault.set(PAIR, 'cred-one');
      return vault;
    };
    await fn(m, join(b.root, 'etc', 'postgres', 'consumers.json'), start);
  } finally {
    for (const vault of vaults) await vault.stop();
    await m.close();
  }
}

const entries = (m: Mesh, path: string): ConsumerEntry[] | undefined => {
  const text = m.file(path);
  return text === undefined ? undefined : (JSON.parse(text) as ConsumerEntry[]);
};

test('a provider node’s client started while the vault is away waits for it: the consumers file is never written without the consumer', () =>
  withProviderNode(async (m, consumersFile, start) => {
    await m.node('b').startClient();
    const b = m.node('b');
    await waitFor('the client to say the vault did not answer', () => b.log.lines.some((l) => l.includes(PAIR) && /not answered|left out/.test(l)));
    await b.idle();
    assert.is(entries(m, consumersFile), undefined, 'the consumers file was written while the vault was away');
    await start();
    await waitFor(
      'the consumers file with web',
      () =>
        entries(m, consumersFile)
          ?.map((e) => `${e.module} ${e.credential}`)
          .join() === 'web cred-one',
      10_000,
    );
  }));

test('a credential the client holds is kept when the vault does not answer its ask again: the consumer stays in the file', () =>
  withProviderNode(async (m, consumersFile, start) => {
    const vault = await start();
    await m.node('b').startClient();
    await waitFor('the consumers file with web', () => entries(m, consumersFile)?.[0]?.credential === 'cred-one');
    await vault.stop();
    // The vault says the credential changed and goes away before the client's ask reaches it.
    m.nc.publish(VAULT_CHANGED, jsonBytes({ name: PAIR }));
    const b = m.node('b');
    await waitFor('the client to say the vault did not answer', () => b.log.lines.some((l) => l.includes(PAIR) && /not answered|left out/.test(l)), 10_000);
    await b.idle();
    assert.equal(
      entries(m, consumersFile)?.map((e) => `${e.module} ${e.credential}`),
      ['web cred-one'],
      'the consumer left the file while the vault was away',
    );
  }));

test.run();
