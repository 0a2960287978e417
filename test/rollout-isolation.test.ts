// Rollouts on the generated bus (DESIGN §11, §12): the seat's bundle logged in as `provisioner` reads
// the nodes' reports and keeps mesh-provisioner_rollouts under its grants; `rollout` and its resume
// and abort run with the admin login; no other login can ask the seat to move a rollout.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openKv } from '../src/shared/bus/bus.ts';
import { jsonBytes } from '../src/shared/base/bytes.ts';
import { APPLIED, REGISTRY_BUCKET, ROLLOUTS } from '../src/shared/contract/buckets.ts';
import { ROLLOUT_VERB } from '../src/shared/contract/subjects.ts';
import { USERS } from '../src/server/commands/bus-config/users.ts';
import type { RolloutState } from '../src/shared/contract/rollout-state.ts';
import { cleanupBundles, copyBundleAlone, ensureBuilt, runBundle, startBundle, type Running } from './helpers/bundle.ts';
import { startMeshBus, withIsolatedMesh } from './helpers/isolated-mesh.ts';
import { digestFor, inWaveOrder } from './helpers/rollout-fleet.ts';
import { waitFor } from './helpers/wait.ts';

const NODES = ['na', 'nb'];

const composition = (build: string, rollout?: unknown) =>
  JSON.stringify({
    module: 'web',
    build,
    published: true,
    archive: { ref: `obj://mesh-catalog_archives/web-${build}.tar`, digest: digestFor(build) },
    provisioning: { files: [{ path: '${dir:config}/web.conf', template: 'web.conf', mode: 'owned', change: 'restart' }] },
    ...(rollout ? { rollout } : {}),
  });

test.after(() => cleanupBundles());

test('on the generated bus the seat rolls out by the nodes’ own reports, admin resumes and aborts, no other login can', async () => {
  await withIsolatedMesh({ nodes: NODES, seat: 'process' }, async (m) => {
    const planOf = async (node: string) => {
      const e = await m.kv.plans.get(`${node}.web`);
      return e && e.operation === 'PUT' ? (e.json() as { build: string }).build : undefined;
    };
    const waitPlans = (want: Record<string, string>) =>
      waitFor(`plans ${JSON.stringify(want)}`, async () => {
        for (const [n, b] of Object.entries(want)) if ((await planOf(n)) !== b) return false;
        return true;
      });
    const rollouts = await openKv(m.admin, ROLLOUTS);
    const state = async () => {
      const e = await rollouts.get('web');
      return e && e.operation === 'PUT' ? (e.json() as RolloutState) : undefined;
    };
    await m.kv.modules.put('web', composition('b1'));
    for (const n of NODES) await m.kv.assignments.put(`${n}.web`, JSON.stringify({ node: n, module: 'web', placement: { dir: { config: '/etc/web' } } }));
    await waitPlans({ na: 'b1', nb: 'b1' });
    await m.kv.modules.put('web', composition('b2', { waves: [0.5, 1], wait: 30 }));
    const [first, second] = inWaveOrder('web', 'b2', NODES) as [string, string];
    await waitPlans({ [first]: 'b2', [second]: 'b1' });

    // The node writes its own report, as its client does, with its own login.
    const own = await m.connect(USERS.client(first));
    await (
      await openKv(own, APPLIED)
    ).put(
      `${first}.web`,
      jsonBytes({ node: first, module: 'web', build: 'b2', state: 'failed', reason: 'bad', files: [], waiting: [], at: new Date().toISOString() }),
    );
    await waitFor('halted', async () => (await state())?.state === 'halted');
    await waitPlans({ na: 'b1', nb: 'b1' });

    const shown = await m.serverCommand(USERS.admin, ['rollout']);
    assert.is(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /web {2}halted {2}build b2 from b1/);
    assert.match(shown.stdout, new RegExp(`failed ${first}: failed: bad`));

    for (const user of [USERS.seat, USERS.client(first)]) {
      const nc = await m.connect(user, `${user}-asks`);
      const asked = await nc.request(ROLLOUT_VERB, jsonBytes({ op: 'resume', module: 'web' }), { timeout: 1000 }).then(
        () => 'answered',
        (err: Error) => err.message,
      );
      assert.not.equal(asked, 'answered', `${user} may not ask the seat to resume`);
    }
    assert.is((await state())?.state, 'halted');

    const resumed = await m.serverCommand(USERS.admin, ['rollout', 'resume', 'web']);
    assert.is(resumed.code, 0, resumed.stderr);
    await waitPlans({ na: 'b2', nb: 'b2' });
    const aborted = await m.serverCommand(USERS.admin, ['rollout', 'abort', 'web']);
    assert.is(aborted.code, 0, aborted.stderr);
    await waitPlans({ na: 'b1', nb: 'b1' });
    assert.is((await state())?.state, 'aborted');
    // The only refusal the server logged is the probe's: the seat itself needed nothing beyond its grants.
    const violations = m.violations();
    assert.is(violations.length, 1, violations.join('\n'));
    assert.match(violations[0]!, new RegExp(`"[^"]*:${USERS.seat}-asks" - Publish Violation .*Subject "${ROLLOUT_VERB}"`));
  });
});

test('on the generated bus before init, rollout, status and query say to run init first, as the input commands do; after it they answer', async () => {
  ensureBuilt('server');
  const dir = copyBundleAlone('server');
  const bus = await startMeshBus({ nodes: NODES });
  let seat: Running | undefined;
  const run = (user: string, args: string[]) => runBundle('node', dir, 'server', [...args, '--nats', bus.nats.url, '--nkey', bus.nkey(user)], {}, 20_000);
  try {
    // The seat started first waits for its buckets, answering nothing.
    seat = startBundle('node', dir, 'server', ['--nats', bus.nats.url, '--nkey', bus.nkey(USERS.seat)]);
    await seat.waitForLog(/waiting: bucket mesh-provisioner_registry is missing/, 15_000);
    for (const [user, args, bucket] of [
      [USERS.admin, ['rollout'], ROLLOUTS],
      [USERS.admin, ['rollout', 'web', '--json'], ROLLOUTS],
      [USERS.admin, ['rollout', 'abort', 'web'], REGISTRY_BUCKET],
      [USERS.seat, ['status'], REGISTRY_BUCKET],
      [USERS.seat, ['status', 'na', 'web'], REGISTRY_BUCKET],
      [USERS.admin, ['status', '--json'], REGISTRY_BUCKET],
      [USERS.seat, ['query', 'health'], REGISTRY_BUCKET],
    ] as const) {
      const ran = await run(user, [...args]);
      const what = `${user}: ${args.join(' ')}`;
      assert.is(ran.code, 1, `${what}: exit ${ran.code}: ${ran.stderr}`);
      assert.equal([ran.stdout, ran.stderr.trim().split('\n').length], ['', 1], `${what}: one line: ${ran.stderr}`);
      assert.match(ran.stderr, new RegExp(`: bucket ${bucket} is missing: run \`server\\.js init\` with the admin login first`), what);
    }
    const init = await run(USERS.admin, ['init', '--nodes', '2']);
    assert.is(init.code, 0, init.stderr);
    await seat.waitForLog(/seat ready/, 15_000);
    const shown = await run(USERS.admin, ['rollout']);
    assert.equal([shown.code, shown.stdout.trim()], [0, 'no rollouts'], shown.stderr);
    const status = await run(USERS.seat, ['status']);
    assert.is(status.code, 0, status.stderr + status.stdout);
  } finally {
    seat?.kill();
    await bus.close();
  }
});

test.run();
