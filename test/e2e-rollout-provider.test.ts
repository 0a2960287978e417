// A bound entry answers one request (DESIGN §3, issue 31 item 1), in a rollout (§12): a consumer's new
// build whose provision asks other values is not judged on what its provider served the build before.
// On the generated bus — the seat's bundle as `provisioner`, each node's client as its own login, the
// vault as `vault`, and a provider made with the SDK's helper (src/sdk/provider.ts, shipped as
// dist/provider.mjs) logged in as `provider.mem` with an adapter in memory — build 2 of `shop` asks
// for the database `Bad-Name`, which the provider refuses. Held until the test lets it answer, the
// provider's answer is what the rollout halts on: the wave's node waits for it (never `applied` on
// the old entry, `status` saying why), fails with the provider's refusal, and is put back on build 1.
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { APPLIED, ROLLOUTS } from '../src/shared/contract/buckets.ts';
import { watchKv } from '../src/shared/bus/watch/watch.ts';
import { INBOX_PREFIXES } from '../src/server/commands/bus-config/config.ts';
import { USERS } from '../src/server/commands/bus-config/users.ts';
import { connectBus } from '../src/shared/bus/bus.ts';
import { memoryLogger } from '../src/shared/cli/log.ts';
import type { Report } from '../src/shared/contract/report.ts';
import type { RolloutState } from '../src/shared/contract/rollout-state.ts';
import { Refused, runProvider, type Adapter, type Grant } from '../src/sdk/provider-index.ts';
import { withIsolatedMesh, type IsolatedMesh } from './helpers/isolated-mesh.ts';
import { inWaveOrder } from './helpers/rollout-fleet.ts';
import { startVault } from './helpers/vault.ts';
import { waitFor } from './helpers/wait.ts';

const PROVIDER = 'mem';
const PROVIDER_NODE = 'n1';
const CONSUMERS = ['n2', 'n3'];
const MODULE = 'shop';
/** Wave 1 is ⌈0.5·2⌉ = 1 node; one failure halts (`halt` 1, whether it counts or budgets). */
const ROLLOUT = { waves: [0.5, 1], halt: 1, wait: 60 };

/** A database store in memory: a name of lowercase letters is served, any other refused; a create of a held name waits for its release. */
function memoryAdapter() {
  const held = new Map<string, () => void>();
  const asked: string[] = [];
  const gates = new Map<string, Promise<void>>();
  const hold = (name: string) => gates.set(name, new Promise<void>((resolve) => held.set(name, resolve)));
  const adapter: Adapter = {
    async create(grant: Grant) {
      const name = String(grant.values['name']);
      asked.push(name);
      await gates.get(name);
      if (!/^[a-z]+$/.test(name)) throw new Refused(`values.name "${name}" is not a database name (lowercase letters only)`);
      return { user: grant.as, values: { database: name } };
    },
    async remove() {},
  };
  return { adapter, asked, hold, release: (name: string) => held.get(name)?.() };
}

/** Publishes a build of `shop` asking the provider for the database `name`. */
async function publishShop(m: IsolatedMesh, build: string, name: string): Promise<void> {
  await m.publish(MODULE, {
    build,
    templates: { 'shop.conf': `build ${build}\ndatabase=\${bound:database:database}\n` },
    provisioning: {
      files: [{ path: '${dir:config}/shop.conf', template: 'shop.conf' }],
      provisions: [{ provider: PROVIDER, provision: 'database', node: PROVIDER_NODE, name: 'db-password', values: { name } }],
    },
    rollout: ROLLOUT,
  });
}

test('a build asking the provider other values waits for its answer — never applied on the old entry — and the rollout halts on the provider’s refusal of the new request', () =>
  withIsolatedMesh({ nodes: [PROVIDER_NODE, ...CONSUMERS], providers: [PROVIDER], seat: 'process' }, async (m) => {
    const vault = await startVault(await m.connect(USERS.vault), []);
    const memory = memoryAdapter();
    const log = memoryLogger();
    const providerBus = await connectBus({
      servers: [m.nats.url],
      name: `provider ${PROVIDER}`,
      nkey: m.nkey(USERS.provider(PROVIDER)),
      inboxPrefix: INBOX_PREFIXES.provider(PROVIDER),
    });
    const provider = runProvider({
      nc: providerBus,
      provider: PROVIDER,
      provision: 'database',
      consumersFile: join(m.node(PROVIDER_NODE).root, 'etc', PROVIDER, 'consumers.json'),
      adapter: memory.adapter,
      log,
    });
    const reports: Report[] = [];
    const states: string[] = [];
    const watches = [
      await watchKv(m.admin, APPLIED, `*.${MODULE}`, (e) => void (e.value && reports.push(JSON.parse(Buffer.from(e.value).toString()) as Report))),
      await watchKv(m.admin, ROLLOUTS, MODULE, (e) => {
        const s = e.value ? (JSON.parse(Buffer.from(e.value).toString()) as RolloutState) : undefined;
        if (s) states.push(`${s.build} ${s.state}`);
      }),
    ];
    const said = () => `; provider: ${log.lines.slice(-5).join(' | ')}; seat: ${m.seatSaid().slice(-1500)}`;
    try {
      await m.publish(PROVIDER, {
        templates: { 'consumers.json': '${consumers:database}' },
        provisioning: { files: [{ path: '${dir:config}/consumers.json', template: 'consumers.json' }], provides: [{ provision: 'database' }] },
      });
      await publishShop(m, '1', 'shop');
      await m.assign(PROVIDER_NODE, PROVIDER);
      for (const n of CONSUMERS) await m.assign(n, MODULE);
      for (const n of [PROVIDER_NODE, ...CONSUMERS]) {
        await m.node(n).startEngine();
        await m.node(n).startClient();
      }
      for (const n of CONSUMERS) {
        await m
          .waitReport(n, MODULE, (r) => r.build === '1' && r.state === 'applied', 20_000)
          .catch((err: Error) => {
            throw new Error(err.message + said());
          });
        assert.is(m.node(n).moduleFile(MODULE), 'build 1\ndatabase=shop\n');
      }

      // Build 2 asks for Bad-Name; the provider's answer is held until the wave's node has been seen waiting for it.
      memory.hold('Bad-Name');
      await publishShop(m, '2', 'Bad-Name');
      const [wave] = inWaveOrder(MODULE, '2', CONSUMERS);
      const waiting = await m
        .waitReport(wave!, MODULE, (r) => r.build === '2', 20_000)
        .catch((err: Error) => {
          throw new Error(err.message + said());
        });
      assert.is(waiting.state, 'waiting', JSON.stringify(waiting));
      assert.match(waiting.reason ?? '', /mem_bound \S+\.shop\.database answers an earlier request of database: waiting for mem to answer the new request/);
      await waitFor('the provider asked to serve Bad-Name', () => memory.asked.includes('Bad-Name'));
      const shown = await m.serverCommand(USERS.admin, ['status', wave!, MODULE]);
      assert.match(shown.stdout, /waiting for mem to answer the new request/, shown.stdout + shown.stderr);
      assert.is(m.node(wave!).moduleFile(MODULE), 'build 1\ndatabase=shop\n', 'the file of build 2 was written from the answer to build 1');

      memory.release('Bad-Name');
      const halted = await waitFor('the rollout halted', () => (states.includes('2 halted') ? true : undefined), 20_000).catch((err: Error) => {
        throw new Error(`${err.message}; states: ${states.join(', ')}${said()}`);
      });
      assert.ok(halted);
      const failed = reports.find((r) => r.node === wave && r.build === '2' && r.state === 'failed');
      assert.match(failed?.reason ?? '', /mem_bound \S+\.shop\.database: the provider refused: values\.name "Bad-Name" is not a database name/);
      assert.equal(
        reports.filter((r) => r.build === '2' && r.state === 'applied'),
        [],
        'no node applied build 2',
      );
      assert.not.ok(states.includes('2 done'), `the rollout went done: ${states.join(', ')}`);

      // Put back on build 1, the node asks the old request again and the provider answers it anew.
      await m.waitReport(wave!, MODULE, (r) => r.build === '1' && r.state === 'applied', 20_000);
      assert.is(m.node(wave!).moduleFile(MODULE), 'build 1\ndatabase=shop\n');
    } finally {
      for (const w of watches) w.stop();
      await provider.stop();
      await providerBus.close();
      await vault.stop();
    }
  }));

test.run();
