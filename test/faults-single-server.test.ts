// Faults of the one nats-server (issue 13): killed with SIGKILL and started again on the same store
// and port, the seat and the client running as their bundles and never restarted. Under config
// churn (about 100 changes a second over 24 modules before, during and after the outage), every
// module's file at the engine ends holding exactly the last value whose put was acknowledged, its
// report `applied` with that file's digest. In the middle of a seat's pass, every assignment ends
// with its exact plan without another input change.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import { jetstream } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import { connectBus, ensureKv } from '../src/shared/bus/bus.ts';
import { sameBytes } from '../src/shared/base/bytes.ts';
import { CONFIG, PLANS } from '../src/shared/contract/buckets.ts';
import { contentDigest } from '../src/shared/contract/fill-protocol.ts';
import { cleanupBundles, ensureBuilt } from './helpers/bundle.ts';
import { startMesh, type Mesh } from './helpers/mesh.ts';
import { createInputBuckets, startSeatProcess, type RunningSeat } from './helpers/mesh-bus.ts';
import { startNats } from './helpers/nats.ts';
import { expectedPlans, mirrorPlans, putFleet, type PlansMirror } from './helpers/seat-fleet.ts';
import { sleep, waitFor } from './helpers/wait.ts';

const MODULES = Array.from({ length: 24 }, (_, i) => `f${String(i).padStart(2, '0')}`);
/** The writer's pace: one put every TICK_MS, over the modules in turn. */
const TICK_MS = 10;
/** How long a put may wait for its ack before it is tried again (the bus is down for about a second). */
const PUT_TIMEOUT_MS = 1500;
/** How long the writer writes before the kill, the server stays down, and the writer writes after the restart. */
const BEFORE_KILL_MS = 2000;
const DOWN_MS = 1000;
/** How long after the kill an ack already sent may still be read (not an ack while the server is down). */
const ACKS_IN_FLIGHT_MS = 200;
const AFTER_RESTART_MS = 2500;
/** From the last ack to every file exact: the client's watches recover within seconds (a 1 s heartbeat), with a margin for a busy machine. */
const CONVERGE_MS = 30_000;
/**
 * From every file exact to every report applied. A report put sent as the server died, or before its
 * JetStream was back, is never acknowledged: the module's later writes wait behind it for the
 * publisher's 5 s ack timeout (swept every 1.25 s), so a report may trail its file by ~6 s.
 */
const REPORTS_MS = 20_000;

test.before(() => {
  ensureBuilt('server');
  ensureBuilt('client');
});
test.after(() => cleanupBundles());

const fileOf = (m: Mesh, module: string) => join(m.root, 'etc', module, 'm.conf');
const textOf = (value: string) => `value ${value}\n`;

/**
 * Puts `<module> #<n>` under each module's key `v`, one put every TICK_MS, skipping a module whose
 * last put is not acknowledged yet: a module's puts are strictly one after the other, and a put that
 * fails (the bus is away) is tried again, same value, until it is acknowledged. `acked` is then the
 * value the bucket holds for that module.
 */
function startWriter(config: KV, modules: readonly string[]) {
  const acked = new Map<string, string>();
  const inFlight = new Map<string, Promise<void>>();
  const counts = { acked: 0, retried: 0 };
  const ackTimes: number[] = [];
  let n = 0;
  let turn = 0;
  const putUntilAcked = async (module: string, value: string) => {
    for (;;) {
      try {
        await config.put(`n1.${module}.v`, value);
        acked.set(module, value);
        counts.acked++;
        ackTimes.push(Date.now());
        return;
      } catch {
        counts.retried++;
        await sleep(100);
      }
    }
  };
  const timer = setInterval(() => {
    for (let tried = 0; tried < modules.length; tried++) {
      const module = modules[turn++ % modules.length]!;
      if (inFlight.has(module)) continue;
      const put = putUntilAcked(module, `${module} #${++n}`).finally(() => inFlight.delete(module));
      inFlight.set(module, put);
      return;
    }
  }, TICK_MS);
  return {
    acked,
    counts,
    /** When the first put after `t` was acknowledged. */
    firstAckAfter: (t: number) => ackTimes.find((at) => at > t),
    /** Puts asked so far. */
    asked: () => n,
    /** Stops asking and waits until every put asked is acknowledged. */
    async stop() {
      clearInterval(timer);
      await Promise.all(inFlight.values());
    },
  };
}

test('nats-server killed with SIGKILL under 100 changes/s and restarted on its store: every file ends at its last acked value, every report applied', async () => {
  const m = await startMesh();
  try {
    for (const module of MODULES) {
      await m.publish(module, {
        templates: { 'm.conf': 'value ${config:v}\n' },
        provisioning: { files: [{ path: '${dir:config}/m.conf', template: 'm.conf', change: 'restart' }] },
      });
      await m.setConfig('n1', module, 'v', `${module} start`);
      await m.assign('n1', module);
    }
    const client = m.startClientProcess();
    await waitFor('every module applied at its start value', () => MODULES.every((mod) => m.file(fileOf(m, mod)) === textOf(`${mod} start`)), 30_000).catch(
      (e) => {
        throw new Error(`${(e as Error).message}; client said:\n${client.stderr().slice(-3000)}`);
      },
    );

    // Its own JetStream context, so a put during the outage gives up within PUT_TIMEOUT_MS and goes again.
    const config = await new Kvm(jetstream(m.nc, { timeout: PUT_TIMEOUT_MS })).open(CONFIG);
    const writer = startWriter(config, MODULES);
    const writingFrom = Date.now();
    await sleep(BEFORE_KILL_MS);
    await m.nats.kill();
    const askedAtKill = writer.asked();
    // An ack the server sent before it died can still be read just after: it counts as before the kill.
    await sleep(ACKS_IN_FLIGHT_MS);
    const ackedBeforeKill = writer.counts.acked;
    await sleep(DOWN_MS - ACKS_IN_FLIGHT_MS);
    const ackedWhileDown = writer.counts.acked - ackedBeforeKill;
    await m.nats.restart();
    const restartedAt = Date.now();
    await sleep(AFTER_RESTART_MS);
    await writer.stop();
    const lastAckAt = Date.now();
    const writeSeconds = (lastAckAt - writingFrom) / 1000;

    assert.ok(ackedBeforeKill > 50, `changes were written before the kill (${ackedBeforeKill})`);
    assert.is(ackedWhileDown, 0, 'nothing is acknowledged while the server is down');
    assert.ok(writer.counts.retried > 0, 'puts failed during the outage and were tried again');
    assert.ok(writer.asked() > askedAtKill + 50, `changes were written after the restart (${writer.asked() - askedAtKill})`);
    assert.ok(client.child.exitCode === null && client.child.signalCode === null, 'the client process was never restarted');

    const wrong = () => MODULES.filter((mod) => m.file(fileOf(m, mod)) !== textOf(writer.acked.get(mod)!));
    await waitFor('every file at its last acked value', () => wrong().length === 0, CONVERGE_MS).catch((e) => {
      const sample = wrong()
        .slice(0, 3)
        .map((mod) => `${mod}: ${JSON.stringify(m.file(fileOf(m, mod)))} wanted ${JSON.stringify(textOf(writer.acked.get(mod)!))}`);
      throw new Error(`${(e as Error).message}; ${wrong().length} wrong, e.g. ${sample.join('; ')}; client said:\n${client.stderr().slice(-3000)}`);
    });
    const exactAt = Date.now();
    for (const mod of MODULES) {
      const digest = contentDigest(textOf(writer.acked.get(mod)!));
      const r = await m.waitReport('n1', mod, (x) => x.state === 'applied' && x.files[0]?.digest === digest, REPORTS_MS);
      assert.is(r.files.length, 1);
    }
    // Still exact once the reports are in: no late fill of an older value came after.
    assert.equal(wrong(), []);
    assert.ok(client.child.exitCode === null && client.child.signalCode === null, 'the client process was never restarted');
    assert.match(client.stderr(), /bus back: filling 24 module\(s\) again/);

    console.log(
      `# nats-server SIGKILL: ${writer.counts.acked} changes acked over ${MODULES.length} modules in ${writeSeconds.toFixed(1)} s, ` +
        `${(DOWN_MS / 1000).toFixed(1)} s of it down; ${writer.counts.retried} puts tried again; restart → first ack ${(writer.firstAckAfter(restartedAt) ?? NaN) - restartedAt} ms; ` +
        `last ack → every file exact ${exactAt - lastAckAt} ms, every report applied ${Date.now() - lastAckAt} ms`,
    );
  } finally {
    await m.close();
  }
});

// ---------------------------------------------------------------------------------------------
// The seat's own writes: the server killed in the middle of a pass.

const SEAT_NODES = 200;
const SEAT_MODULES = 10;
/** The server is killed when it relays this plan write of the seat's first pass (of 2,000). */
const KILL_AT_WRITE = 500;
/** From the restart to every plan: a write lost in the kill fails after the 5 s ack timeout and is tried again. */
const PLANS_MS = 30_000;

test('nats-server killed with SIGKILL while the seat writes a pass and restarted: every assignment gets its exact plan with no further input change', async () => {
  const nats = await startNats();
  const nc = await connectBus({ servers: [nats.url], name: 'test' });
  let seat: RunningSeat | undefined;
  let mirror: PlansMirror | undefined;
  try {
    const inputs = await createInputBuckets(nc);
    await ensureKv(nc, PLANS, 1);
    const wanted = expectedPlans(await putFleet(inputs, SEAT_NODES, SEAT_MODULES));
    let kill: Promise<void> | undefined;
    let relayed = 0;
    nc.subscribe(`$KV.${PLANS}.>`, {
      callback: () => {
        if (!kill && ++relayed >= KILL_AT_WRITE) kill = nats.kill();
      },
    });
    seat = startSeatProcess(nats.url);
    await waitFor('the server killed in the seat’s first pass', () => kill !== undefined, 20_000);
    await kill;
    await sleep(DOWN_MS);
    await nats.restart();
    const restartedAt = Date.now();

    // The test's own connection comes back too; its watch is made once JetStream answers.
    const { plans } = (mirror = await waitFor('a watch of the plans', () => mirrorPlans(nc).catch(() => undefined), 20_000));
    const missing = () => [...wanted].filter(([key, bytes]) => !sameBytes(plans.get(key)?.bytes, bytes)).map(([key]) => key);
    await waitFor('every assignment’s exact plan', () => missing().length === 0, PLANS_MS).catch((e) => {
      throw new Error(
        `${(e as Error).message}; ${missing().length} of ${wanted.size} missing or wrong, e.g. ${missing().slice(0, 3).join(', ')}; the seat said: ${seat?.said().slice(-1500)}`,
      );
    });
    const allMs = Date.now() - restartedAt;
    assert.is(plans.size, wanted.size);
    assert.match(seat.said(), /write\(s\) failed; trying again in \d+ ms/);
    console.log(`# nats-server SIGKILL during a seat pass (at its ${KILL_AT_WRITE}th of ${wanted.size} writes): restart → every plan exact in ${allMs} ms`);
  } finally {
    mirror?.stop();
    await seat?.stop();
    await nc.close();
    await nats.cleanup();
  }
});

test.run();
