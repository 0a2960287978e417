// Provenance end to end (DESIGN §14, issue 33 item 2, the client's side): on the bus `bus-config`
// generates, the seat's and the client's bundles each logged in with their own seed, the provider
// with its own, the inputs written by admin (`config set` as an operator runs it), a module using
// config, placement, a collection and a bound value reports for its file a `from` naming each key
// with the revision the bus holds; a config change brings the new revision once the file is filled;
// a fill the engine has not confirmed leaves the `from` of what is on disk.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Kvm } from '@nats-io/kv';
import { USERS } from '../src/server/commands/bus-config/users.ts';
import { INBOX_PREFIXES } from '../src/shared/bus/inbox.ts';
import { connectBus } from '../src/shared/bus/bus.ts';
import { COLLECT } from '../src/shared/contract/buckets.ts';
import type { From, Report } from '../src/shared/contract/report.ts';
import { cleanupBundles, ensureBuilt, ROOT, startBundle } from './helpers/bundle.ts';
import { withIsolatedMesh, type IsolatedMesh } from './helpers/isolated-mesh.ts';
import { nodePaths } from './helpers/mesh-node.ts';

test.before(() => {
  ensureBuilt('client');
  ensureBuilt('server');
});
test.after(() => cleanupBundles());

const PROVIDER = 'postgres';
const BOUND_KEY = 'n1.web.database.main';
const ITEM_KEY = 'n1.environment=3Aposix.api';

/** The revision the bus holds for `key` of `bucket`, read as admin. */
async function revisionOf(m: IsolatedMesh, bucket: string, key: string): Promise<number> {
  const entry = await (await new Kvm(m.admin).open(bucket)).get(key);
  if (!entry) throw new Error(`${bucket} ${key}: not there`);
  return entry.revision;
}

/** `config set` as an operator runs it (the admin's seed); resolves with the revision the bus holds then. */
async function configSet(m: IsolatedMesh, value: string): Promise<number> {
  const run = await m.serverCommand(USERS.admin, ['config', 'set', 'n1', 'web', 'color', value]);
  assert.is(run.code, 0, run.stderr);
  return revisionOf(m, 'mesh-config_resolved', 'n1.web.color');
}

/** The `from` of web.conf in a report. */
function fromOf(r: Report): From | undefined {
  return r.files.find((f) => f.path.endsWith('/web.conf'))?.from;
}

/** The config input of a from. */
function configRev(r: Report): number | undefined {
  const input = fromOf(r)?.find((i) => 'kind' in i && i.kind === 'config');
  return input && 'rev' in input ? input.rev : undefined;
}

test("a file's from names the archive, the config key, the plan, the bound entry and each contributor, each at the revision the bus holds; a change brings its revision once filled; a fill the engine has not confirmed keeps the old", () =>
  withIsolatedMesh({ nodes: ['n1'], providers: [PROVIDER], seat: 'process' }, async (m) => {
    await m.publish('web', {
      templates: { 'web.conf': 'color=${config:color}\nport=${port:http}\nuser=${bound:database.main:user}\n${collected:environment:posix}' },
      provisioning: {
        files: [{ path: '${dir:config}/web.conf', template: 'web.conf' }],
        provisions: [{ provider: PROVIDER, provision: 'database', local: 'main', name: 'db-password' }],
        collections: [{ name: 'environment:posix', comment: '#' }],
      },
    });
    await m.publish('api', { templates: { 'api.env': 'API=1\n' }, provisioning: { items: [{ collection: 'environment:posix', template: 'api.env' }] } });
    const blue = await configSet(m, 'blue');
    await m.assign('n1', 'web');
    await m.assign('n1', 'api');
    // The provider's answer, written with the provider's own seed as its helper does.
    const provider = await connectBus({
      servers: [m.nats.url],
      name: 'provider',
      nkey: m.nkey(USERS.provider(PROVIDER)),
      inboxPrefix: INBOX_PREFIXES.provider(PROVIDER),
    });
    try {
      const bound = await (await new Kvm(provider).open(`${PROVIDER}_bound`)).put(BOUND_KEY, JSON.stringify({ as: 'web', user: 'web_user', values: {} }));

      const n1 = m.node('n1');
      await n1.startEngine();
      const paths = nodePaths(join(m.dir, 'n1'));
      const client = startBundle('node', join(ROOT, 'dist'), 'client', [
        ...['--node', 'n1', '--nats', m.nats.url, '--nkey', m.nkey(USERS.client('n1'))],
        ...['--socket', paths.socketPath, '--cache', paths.cacheDir, '--archive-dir', m.archiveDir],
      ]);
      const said = () => `; the client said: ${client.stderr().slice(-2000)}`;
      const applied = await m
        .waitReport('n1', 'web', (r) => r.state === 'applied' && configRev(r) === blue)
        .catch((err: Error) => {
          throw new Error(err.message + said());
        });
      const plan = JSON.parse(new TextDecoder().decode((await m.kv.plans.get('n1.web'))!.value)) as { archive: { ref: string; digest: string } };
      assert.equal(fromOf(applied), [
        { kind: 'archive', key: plan.archive.ref, digest: plan.archive.digest },
        { kind: 'config', key: 'n1.web.color', rev: blue },
        { kind: 'port', key: 'n1.web', rev: await revisionOf(m, 'mesh-provisioner_plans', 'n1.web') },
        { kind: 'bound', key: BOUND_KEY, rev: bound },
        { kind: 'collected', key: ITEM_KEY, rev: await revisionOf(m, COLLECT, ITEM_KEY) },
      ]);
      const file = join(n1.root, 'etc', 'web', 'web.conf');
      assert.is(readFileSync(file, 'utf8'), 'color=blue\nport=8080\nuser=web_user\n# api\nAPI=1\n');

      // A change: the file filled with it names its revision.
      const red = await configSet(m, 'red');
      await m.waitReport('n1', 'web', (r) => r.state === 'applied' && configRev(r) === red);
      assert.match(readFileSync(file, 'utf8'), /^color=red$/m);

      // The engine gone: the next change is filled but not confirmed, and the file's from is still red's.
      await n1.stopEngine();
      const green = await configSet(m, 'green');
      const waiting = await m.waitReport('n1', 'web', (r) => r.state === 'waiting' && /engine not reachable/.test(r.reason ?? ''));
      assert.is(configRev(waiting), red, 'what is on disk came from rev ' + red);
      assert.match(readFileSync(file, 'utf8'), /^color=red$/m);
      // Back (its socket is a knock): filled, confirmed, and green's revision named.
      await n1.startEngine();
      await m.waitReport('n1', 'web', (r) => r.state === 'applied' && configRev(r) === green);
      assert.match(readFileSync(file, 'utf8'), /^color=green$/m);
      assert.is(m.violations().length, 0, m.violations().join('\n'));
    } finally {
      await provider.close();
    }
  }));

test.run();
