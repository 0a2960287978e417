// `server.js --metrics HOST:PORT` end to end (issue 33 item 4): the seat's bundle on the bus
// `bus-config` generates, logged in with its own seed, a node's engine and client bundles with the
// node's seed, a module — and the figures Prometheus would scrape checked against what happened:
// the module applied, its plan written, the verb's requests and busy answers, a halted rollout.
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { jsonBytes } from '../src/shared/base/bytes.ts';
import { connectBus, openKv } from '../src/shared/bus/bus.ts';
import { APPLIED } from '../src/shared/contract/buckets.ts';
import { BUSY } from '../src/shared/contract/verb.ts';
import { PROVISIONING_VERB } from '../src/shared/contract/subjects.ts';
import { USERS } from '../src/server/commands/bus-config/users.ts';
import { ensureBuilt, ROOT, startBundle, type Running } from './helpers/bundle.ts';
import { withIsolatedMesh } from './helpers/isolated-mesh.ts';
import { createMeshNode } from './helpers/mesh-node.ts';
import { freePort, startNats } from './helpers/nats.ts';
import { scrape } from './helpers/scrape.ts';
import { waitFor } from './helpers/wait.ts';
import type { ModuleSpec } from './helpers/archive.ts';

test.before(() => {
  for (const b of ['server', 'client', 'engine']) ensureBuilt(b);
});

const WEB: ModuleSpec = {
  build: '1',
  templates: { 'web.conf': 'port=${port:http}\n' },
  provisioning: { files: [{ path: '${dir:config}/web.conf', template: 'web.conf' }] },
};
/** Build 2 misspells a kind, which no client can fill: its one node fails it and the rollout halts. */
const BAD: ModuleSpec = { ...WEB, build: '2', templates: { 'web.conf': 'port=${prot:http}\n' }, rollout: { waves: [1], halt: 1, wait: 30 } };

/** Waits until a scrape's figure `name` is `value`; the error says what it was. */
async function figure(port: number, name: string, value: number, ms = 15_000): Promise<Map<string, number>> {
  let last: number | undefined;
  try {
    // Nothing listens until the seat's process has started: a refused connection is waited out too.
    const scraped = () => scrape(port).catch(() => new Map<string, number>());
    return await waitFor(`${name} ${value}`, async () => ((s) => ((last = s.get(name)) === value ? s : undefined))(await scraped()), ms);
  } catch (err) {
    throw new Error(`${(err as Error).message}: last scraped ${last}`);
  }
}

test('the figures follow a running mesh: a module applied, its plan written, each verb request and busy answer, a rollout halted', async () => {
  const port = await freePort();
  await withIsolatedMesh({ nodes: ['n1'], seat: 'process', seatArgs: ['--metrics', `127.0.0.1:${port}`] }, async (m) => {
    const before = await figure(port, 'provisioner_seat_ready', 1);
    assert.is(before.get('provisioner_modules{state="applied"}'), 0);
    assert.is(before.get('provisioner_nodes{liveness="alive"}'), 0, 'no node has a plan yet');
    const n1 = createMeshNode({ name: 'n1', dir: join(m.dir, 'n1'), url: m.nats.url, archiveDir: m.archiveDir, login: { nkey: m.nkey(USERS.client('n1')) } });
    try {
      n1.startEngineProcess();
      n1.startClientProcess();
      await m.publish('web', WEB);
      await m.assign('n1', 'web');
      await m.waitReport('n1', 'web', (r) => r.state === 'applied');
      const applied = await figure(port, 'provisioner_modules{state="applied"}', 1);
      assert.is(applied.get('provisioner_plan_writes_total{op="put",result="ok"}'), 1, 'n1.web planned once');
      assert.is(applied.get('provisioner_drift_restores'), 0);
      // n1's client said its word and has a plan: one node alive, none silent, its engine up.
      const alive = await figure(port, 'provisioner_nodes{liveness="alive"}', 1);
      assert.is(alive.get('provisioner_nodes{liveness="silent"}'), 0);
      assert.is(alive.get('provisioner_nodes{liveness="engine_down"}'), 0);

      // status asks the verb for one page of reports and for health twice: the fleet's, then the rollouts'.
      const asked = (s: Map<string, number>, what: string) => s.get(`provisioner_verb_requests_total{what="${what}"}`) ?? 0;
      const status = await m.serverCommand(USERS.seat, ['status']);
      assert.is(status.code, 0, status.stdout + status.stderr);
      const afterStatus = await scrape(port);
      assert.is(asked(afterStatus, 'applied') - asked(applied, 'applied'), 1, 'one page of reports');
      assert.is(asked(afterStatus, 'health') - asked(applied, 'health'), 2, 'two pages of health');

      // 300 at once from one connection: past the 16 the seat answers at once, some are answered busy.
      const replies = await Promise.all(
        Array.from({ length: 300 }, () => m.admin.request(PROVISIONING_VERB, jsonBytes({ what: 'applied' }), { timeout: 10_000 })),
      );
      const busy = replies.filter((r) => r.json<{ error?: string }>().error === BUSY).length;
      assert.ok(busy > 0, 'some were answered busy');
      const burst = await scrape(port);
      assert.is(asked(burst, 'applied') - asked(afterStatus, 'applied'), 300);
      assert.is((burst.get('provisioner_verb_busy_total') ?? 0) - (afterStatus.get('provisioner_verb_busy_total') ?? 0), busy);

      // A build n1 fails halts its rollout (halt 1) and is planned back: the halted rollout is there to alert on.
      await m.publish('web', BAD);
      const halted = await figure(port, 'provisioner_rollout_state{module="web",state="halted"}', 1);
      assert.is(halted.get('provisioner_rollouts{state="halted"}'), 1);
      assert.is(halted.get('provisioner_rollouts{state="rolling"}'), 0);
      await m.waitReport('n1', 'web', (r) => r.state === 'applied' && r.build === '1');
      const back = await figure(port, 'provisioner_modules{state="applied"}', 1);
      assert.is(back.get('provisioner_modules{state="failed"}'), 0);
      assert.ok((back.get('provisioner_plan_writes_total{op="put",result="ok"}') ?? 0) >= 3, 'build 2 planned, then build 1 planned back');
    } finally {
      await n1.stop();
    }
  });
});

test('a report carrying drift counts its restores; a port already taken is said and the seat exits 1; SIGTERM closes the listener', async () => {
  const nats = await startNats('');
  const port = await freePort();
  const seats: Running[] = [];
  const nc = await connectBus({ servers: [nats.url], name: 'e2e-metrics' });
  try {
    const taken = startBundle('node', join(ROOT, 'dist'), 'server', ['--nats', nats.url, '--metrics', `127.0.0.1:${port}`]);
    seats.push(taken);
    await taken.waitForLog(/seat ready/, 20_000);
    await figure(port, 'provisioner_seat_ready', 1);
    // No client writes drift yet (§14's drift.count is the client's to add): the report is written as one would be.
    const applied = await openKv(nc, APPLIED);
    const file = (path: string, count: number) => ({ path, action: 'restored', digest: 'sha256:x', drift: { count, last: '2026-12-06T10:00:00Z' } });
    const report = { node: 'n1', module: 'web', build: '1', state: 'applied', waiting: [], at: '2026-12-06T10:00:00Z' };
    await applied.put('n1.web', jsonBytes({ ...report, files: [file('/etc/web/a.conf', 3), file('/etc/web/b.conf', 1)] }));
    await figure(port, 'provisioner_drift_restores', 4);
    await applied.put('n1.web', jsonBytes({ ...report, files: [file('/etc/web/a.conf', 5)] }));
    const drifted = await figure(port, 'provisioner_drift_restores', 5);
    assert.is(drifted.get('provisioner_modules{state="applied"}'), 1);

    const second = startBundle('node', join(ROOT, 'dist'), 'server', ['--nats', nats.url, '--metrics', `127.0.0.1:${port}`]);
    seats.push(second);
    assert.is((await second.exited).code, 1);
    assert.match(second.stderr(), new RegExp(`error --metrics 127\\.0\\.0\\.1:${port}: cannot listen: the address is already in use`));
    assert.not.match(second.stderr(), /connecting to/, 'refused before the bus is reached');

    taken.child.kill('SIGTERM');
    assert.is((await taken.exited).code, 0);
    assert.match(taken.stderr(), /stopped/);
    const after = await scrape(port).then(
      () => 'answered',
      (err: Error) => String((err.cause as { code?: string } | undefined)?.code),
    );
    assert.is(after, 'ECONNREFUSED', 'nothing listens after SIGTERM');
  } finally {
    for (const seat of seats) seat.kill();
    await nc.close();
    await nats.cleanup();
  }
});

test.run();
