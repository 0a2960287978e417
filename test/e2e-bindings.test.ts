// Bindings end to end (DESIGN §7 points 8–9) with the reference vault (in this process) and the provider's side played by
// the test: a provider module's consumers file across nodes, a consumer's bound values, rotation,
// refusal, unbinding — and no credential anywhere but in memory and that file.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { Kvm, type KV } from '@nats-io/kv';
import { jetstream } from '@nats-io/jetstream';
import { ensureKv } from '../src/shared/bus/bus.ts';
import { jsonBytes } from '../src/shared/base/bytes.ts';
import { readAll } from '../src/shared/bus/watch/read-all.ts';
import { boundKey } from '../src/shared/contract/keys.ts';
import { CREDENTIAL_SET } from '../src/shared/contract/bound-entry.ts';
import { VAULT_CHANGED } from '../src/shared/contract/subjects.ts';
import type { ConsumerEntry } from '../src/sdk/types.ts';
import { startMesh, type Mesh, type MeshOptions } from './helpers/mesh.ts';
import { plantPlan } from './helpers/planted.ts';
import { startVault, type Vault } from './helpers/vault.ts';
import { waitFor } from './helpers/wait.ts';

const PAIR = 'pair/postgres/database/a/web';

type Bindings = { m: Mesh; vault: Vault; bound: KV; consumersFile: string; consumerFile: string };

/** Node a runs consumer `web`, node b runs provider `postgres`; the vault holds web's credential. */
async function withBindings(fn: (b: Bindings) => Promise<void>, opts: MeshOptions = {}): Promise<void> {
  const m = await startMesh({ node: 'a', ...opts });
  const b = m.node('b');
  const vault = await startVault(m.nc, [m.secrets, b.secrets], { lab: true });
  try {
    await vault.set(PAIR, 'cred-one');
    const bound = await ensureKv(m.nc, 'postgres_bound', 1);
    await m.publish('postgres', {
      templates: { 'consumers.json': '${consumers:database}\n' },
      provisioning: { files: [{ path: '${dir:config}/consumers.json', template: 'consumers.json', change: 'none' }], provides: [{ provision: 'database' }] },
    });
    await m.publish('web', {
      templates: { 'db.conf': 'user=${bound:database:user}\ndb=${bound:database:database}\nport=${bound:database:port}\npassword=${secret:db-password}\n' },
      provisioning: {
        files: [{ path: '${dir:config}/db.conf', template: 'db.conf', change: 'restart' }],
        provisions: [{ provider: 'postgres', provision: 'database', node: 'b', name: 'db-password', values: { name: 'web' } }],
      },
    });
    await m.assign('b', 'postgres', { dir: { config: join(b.root, 'etc', 'postgres') } });
    await m.assign('a', 'web');
    await b.startEngine();
    await b.startClient();
    await m.startClient();
    await fn({ m, vault, bound, consumersFile: join(b.root, 'etc', 'postgres', 'consumers.json'), consumerFile: join(m.root, 'etc', 'web', 'db.conf') });
  } finally {
    await vault.stop();
    await m.close();
  }
}

const entries = (m: Mesh, path: string): ConsumerEntry[] | undefined => {
  const text = m.file(path);
  return text === undefined ? undefined : (JSON.parse(text) as ConsumerEntry[]);
};

test('the provider’s consumers file lists the consumer bound to it across nodes, with its credential, mode 0600; the consumer waits on its bound values, then fills', () =>
  withBindings(async ({ m, bound, consumersFile, consumerFile }) => {
    await waitFor('the consumers file', () => entries(m, consumersFile)?.length === 1);
    // With the consumer's whole provision entry as its plan holds it: the request the bound entry answers (DESIGN §3).
    const provision = { provider: 'postgres', provision: 'database', node: 'b', name: 'db-password', values: { name: 'web' } };
    assert.equal(entries(m, consumersFile), [{ consumer: 'a', module: 'web', local: null, credential: 'cred-one', value: { name: 'web' }, provision }]);
    assert.is(statSync(consumersFile).mode & 0o777, 0o600);
    const waiting = await m.waitReport('a', 'web', (r) => r.state === 'waiting');
    // The credential waits too: the engine fills it, but not before the provider says it has set it.
    assert.equal(waiting.waiting.map((w) => `${w.kind}:${w.name}`).sort(), [
      'bound:database:database',
      'bound:database:port',
      'bound:database:user',
      'secret:db-password',
    ]);

    const started = Date.now();
    await bound.put(boundKey('a', 'web', 'database'), jsonBytes({ as: 'web_a', user: 'web_a', values: { database: 'web', port: 5432 } }));
    await waitFor('the consumer’s file', () => m.file(consumerFile) === 'user=web_a\ndb=web\nport=5432\npassword=cred-one\n');
    console.log(`bindings: bound entry written → consumer's bound values filled in ${Date.now() - started} ms`);
    await m.waitReport('a', 'web', (r) => r.state === 'applied');
  }));

test('a rotation fans out: the consumers file is filled again with the new credential; a refusal fails the consumer with the provider’s reason', () =>
  withBindings(async ({ m, vault, bound, consumersFile }) => {
    await waitFor('the consumers file', () => entries(m, consumersFile)?.[0]?.credential === 'cred-one');
    await vault.rotate(PAIR, 'cred-two');
    await waitFor('the rotated credential', () => entries(m, consumersFile)?.[0]?.credential === 'cred-two');
    await bound.put(boundKey('a', 'web', 'database'), jsonBytes({ refused: 'database "web" is owned by another role' }));
    const failed = await m.waitReport('a', 'web', (r) => r.state === 'failed');
    assert.match(failed.reason!, /postgres_bound a\.web\.database: the provider refused: database "web" is owned by another role/);
  }));

test('a rotated credential reaches the consumer’s file only with its provider’s new mark of having set it, never by the engine’s poll of its secrets', () =>
  withBindings(async ({ m, vault, bound, consumersFile, consumerFile }) => {
    const entry = (mark: string) => jsonBytes({ as: 'web_a', user: 'web_a', values: { database: 'web', port: 5432, [CREDENTIAL_SET]: mark } });
    const filled = (password: string) => `user=web_a\ndb=web\nport=5432\npassword=${password}\n`;
    await bound.put(boundKey('a', 'web', 'database'), entry('mark-1'));
    await waitFor('the consumer’s file', () => m.file(consumerFile) === filled('cred-one'));
    await vault.rotate(PAIR, 'cred-two');
    await waitFor('the provider’s consumers file', () => entries(m, consumersFile)?.[0]?.credential === 'cred-two');
    // The provider has not said it set cred-two: ten of the engine's secret polls leave the consumer as it was.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    assert.is(m.file(consumerFile), filled('cred-one'));
    await bound.put(boundKey('a', 'web', 'database'), entry('mark-2'));
    await waitFor('the consumer’s file after the new mark', () => m.file(consumerFile) === filled('cred-two'));
    assert.equal(m.journal().filter((l) => l.includes('restart web')).length, 2, m.journal().join('\n'));
  }));

test('unbinding: the consumer unassigned leaves the consumers file empty; a consumer the vault will not serve is left out while the others are served', () =>
  withBindings(async ({ m, vault, consumersFile }) => {
    await waitFor('the consumers file', () => entries(m, consumersFile)?.length === 1);
    vault.refuse('pair/postgres/database/a/api', 'sealed elsewhere');
    await vault.set('pair/postgres/database/a/cli', 'cred-cli');
    for (const module of ['api', 'cli']) {
      await m.publish(module, {
        templates: { t: 'x' },
        provisioning: { files: [{ path: '${dir:config}/t', template: 't' }], provisions: [{ provider: 'postgres', provision: 'database', node: 'b' }] },
      });
      await m.assign('a', module);
    }
    await waitFor(
      'cli served, api left out',
      () =>
        entries(m, consumersFile)
          ?.map((e) => e.module)
          .join() === 'cli,web',
    );
    assert.ok(m.node('b').log.lines.some((l) => l.includes('pair/postgres/database/a/api left out: sealed elsewhere')));
    await m.unassign('a', 'web');
    await m.unassign('a', 'cli');
    await waitFor('no consumer', () => entries(m, consumersFile)?.length === 0);
  }));

test('mesh-vault.changed: notices of 2 MB, nested 100 deep, with a name not a string, or not JSON are ignored, the first said at warn; the client goes on and a valid notice still asks again', () =>
  withBindings(
    async ({ m, vault, consumersFile }) => {
      await waitFor('the consumers file', () => entries(m, consumersFile)?.[0]?.credential === 'cred-one');
      // A value the vault holds and has not said: a notice that made the client ask would bring it in.
      await vault.set(PAIR, 'cred-unsaid');
      const asked = vault.asked.length;
      const text = (t: string) => new TextEncoder().encode(t);
      const notices = [
        jsonBytes({ name: PAIR, pad: 'x'.repeat(2 * 1024 * 1024) }),
        text('{"name":' + '['.repeat(100) + ']'.repeat(100) + '}'),
        jsonBytes({ name: 42 }),
        text(`{"name":"${PAIR}"`),
      ];
      for (const data of notices) m.nc.publish(VAULT_CHANGED, data);
      await m.nc.flush();
      const provider = m.node('b').log.lines;
      const said = () => provider.filter((l) => l.includes('mesh-vault.changed: a notice out of shape ignored'));
      await waitFor('four notices said out of shape', () => said().length === 4);
      assert.match(
        said()[0]!,
        / warning mesh-vault\.changed: a notice out of shape ignored \(2097\d+ bytes, past the limit of 4096 bytes\); any more are said at debug$/,
      );
      assert.match(said()[1]!, / debug .*\(nested deeper than 4 levels\); 2 so far$/);
      assert.match(said()[2]!, / debug .*\(field "name" is not a string\); 3 so far$/);
      assert.match(said()[3]!, / debug .*\(not JSON\); 4 so far$/);
      assert.is(vault.asked.length, asked, 'no notice out of shape made the client ask the vault');
      assert.is(entries(m, consumersFile)?.[0]?.credential, 'cred-one');

      await vault.rotate(PAIR, 'cred-two');
      await waitFor('the rotated credential', () => entries(m, consumersFile)?.[0]?.credential === 'cred-two');
      assert.ok(vault.asked.length > asked, 'a valid notice asks again');
      await m.publish('after', { templates: { t: 'ok\n' }, provisioning: { files: [{ path: '${dir:config}/t', template: 't' }] } });
      await m.assign('b', 'after');
      await m.waitReport('b', 'after', (r) => r.state === 'applied');
    },
    { natsConfig: 'max_payload: 4194304' },
  ));

test('${consumers:…} in a module whose plan does not provide it fails; no credential is in any bucket, report, need or log line', () =>
  withBindings(async ({ m, vault, consumersFile }) => {
    await m.publish('thief', {
      templates: { t: '${consumers:database}' },
      provisioning: { files: [{ path: '${dir:config}/t', template: 't' }] },
    });
    await m.assign('a', 'thief');
    const r = await m.waitReport('a', 'thief', (x) => x.state === 'failed');
    assert.match(r.reason!, /\$\{consumers:database\}: the plan does not provide "database"/);
    await waitFor('the consumers file', () => entries(m, consumersFile)?.length === 1);
    await vault.rotate(PAIR, 'cred-rotated');
    await waitFor('the rotation', () => entries(m, consumersFile)?.[0]?.credential === 'cred-rotated');
    const seen: string[] = [];
    for (const bucket of [
      'mesh-provisioner_plans',
      'mesh-provisioner_needs',
      'mesh-provisioner_applied',
      'mesh-provisioner_collect',
      'postgres_bound',
      'mesh-config_resolved',
    ]) {
      for (const value of (await readAll(m.nc, bucket)).values()) seen.push(new TextDecoder().decode(value));
    }
    const logs = [...m.log.lines, ...m.node('b').log.lines, ...m.engineLog.lines, ...m.node('b').engineLog.lines];
    for (const credential of ['cred-one', 'cred-rotated']) {
      for (const text of [...seen, ...logs]) assert.not.ok(text.includes(credential), `${credential} found in: ${text.slice(0, 200)}`);
    }
    assert.ok(seen.length > 0 && logs.length > 0, 'something was scanned');
  }));

/** A plan of node c planted straight in the plans bucket (its assignment kept, its composition missing, so the seat holds it), binding `postgres` on b. */
async function plantConsumer(m: Mesh, module: string, local: string): Promise<void> {
  await plantPlan(m.kv, 'c', module, { provisions: [{ provider: 'postgres', provision: 'database', node: 'b', local }] });
}

test('a planted plan of another node whose local climbs out of its vault name is never asked of the vault; a good one planted after it is served', () =>
  withBindings(async ({ m, vault, consumersFile }) => {
    await waitFor('the consumers file', () => entries(m, consumersFile)?.length === 1);
    await vault.set('pair/postgres/database/c/good/main', 'cred-good');
    await plantConsumer(m, 'evil', '../../../../../module/victim/api-key');
    await plantConsumer(m, 'good', 'main');
    // The good plan is later in the stream than the evil one: once it is served, the evil one was read.
    await waitFor(
      'the good consumer served',
      () =>
        entries(m, consumersFile)
          ?.map((e) => e.module)
          .join() === 'web,good',
    );
    assert.equal(
      vault.asked.filter((name) => name.split('/').some((s) => s === '..' || s === '.' || s === '')),
      [],
      'a name out of its grammar was asked',
    );
    assert.ok(vault.asked.includes('pair/postgres/database/c/good/main'));
    assert.not.ok(entries(m, consumersFile)!.some((e) => e.module === 'evil'));
  }));

test.run();
