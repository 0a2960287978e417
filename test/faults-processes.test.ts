// Faults of single processes (issue 13): the reference engine, the seat and a node's client, each
// run as its bundle and killed with SIGKILL in the middle of its work, then started again. Each test
// checks the exact bytes and keys left behind, not only that the mesh carries on.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readdirSync, watch } from 'node:fs';
import { join } from 'node:path';
import type { KV } from '@nats-io/kv';
import { connectBus, ensureKv } from '../src/shared/bus/bus.ts';
import { jsonBytes, sameBytes } from '../src/shared/base/bytes.ts';
import { PLANS } from '../src/shared/contract/buckets.ts';
import { contentDigest } from '../src/shared/contract/fill-protocol.ts';
import type { Report } from '../src/shared/contract/report.ts';
import { TEMP_NAME } from '../src/engine/writer.ts';
import { cleanupBundles, ensureBuilt, type Running } from './helpers/bundle.ts';
import { startMesh, type ModuleSpec } from './helpers/mesh.ts';
import { createInputBuckets, startSeatProcess, type RunningSeat } from './helpers/mesh-bus.ts';
import { startNats } from './helpers/nats.ts';
import { assignment } from './helpers/seat.ts';
import { expectedPlans, mirrorPlans, putFleet, type PlansMirror } from './helpers/seat-fleet.ts';
import { sleep, waitFor } from './helpers/wait.ts';

test.before(() => {
  ensureBuilt('server');
  ensureBuilt('client');
  ensureBuilt('engine');
});
test.after(() => cleanupBundles());

/** Waits for `running`'s line matching `pattern`; the error carries what it said. */
const said = (running: Running, pattern: RegExp, ms = 15_000) => running.waitForLog(pattern, ms);

/** How `running` exited, or `signal: 'none'` when it has not within `ms`. */
async function exitedWithin(running: Running, ms: number): Promise<{ signal: string | null }> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<{ signal: string }>((resolve) => (timer = setTimeout(() => resolve({ signal: `none within ${ms} ms` }), ms)));
  try {
    return await Promise.race([running.exited, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** The names in `dir` that are temp files of the engine's atomic write. */
const tempFiles = (dir: string) => readdirSync(dir).filter((name) => TEMP_NAME.test(name));

// ---------------------------------------------------------------------------------------------
// The engine, killed while it writes a module's big files.

/** Bytes of each big file: writing three takes the engine tens of ms, long enough to be killed in. */
const BIG_BYTES = 12 * 1024 * 1024;
/** Kills that land after the engine's last rename prove nothing; this many tries at most. */
const ENGINE_KILL_TRIES = 4;
const BIG_FILES = ['a.conf', 'b.conf', 'c.conf'];
/** One template for the three files: the value at its head and its tail, so no prefix reads whole. */
const BIG_TEMPLATE = `head \${config:v}\n${'x'.repeat(BIG_BYTES)}\ntail \${config:v}\n`;
const bigText = (value: string) => `head ${value}\n${'x'.repeat(BIG_BYTES)}\ntail ${value}\n`;

/**
 * Calls `onChange` (once) at the first change the engine makes in `dir`: with an atomic write that is
 * the creation of its temp file; a writer that wrote in place would be caught in its target.
 */
function onFirstChange(dir: string, onChange: () => void): () => void {
  let fired = false;
  const watcher = watch(dir, () => {
    if (fired) return;
    fired = true;
    onChange();
  });
  return () => watcher.close();
}

test('the engine killed while writing a module’s files: no file half-written, the request given up, resent after the restarted engine’s knock, and applied with the exact new bytes', async () => {
  const m = await startMesh({ engine: false });
  let engine = m.startEngineProcess();
  try {
    await said(engine, /engine listening on/);
    const spec: ModuleSpec = {
      templates: { 'big.conf': BIG_TEMPLATE },
      provisioning: { files: BIG_FILES.map((f) => ({ path: `\${dir:config}/${f}`, template: 'big.conf', change: 'restart' })) },
    };
    await m.publish('big', spec);
    await m.setConfig('n1', 'big', 'v', 'old');
    await m.assign('n1', 'big');
    const client = m.startClientProcess();
    const dir = join(m.root, 'etc', 'big');
    const paths = BIG_FILES.map((f) => join(dir, f));
    const digestsOf = (value: string) => BIG_FILES.map(() => contentDigest(bigText(value)));
    const appliedWith = (value: string) =>
      m.waitReport(
        'n1',
        'big',
        (r) =>
          r.state === 'applied' &&
          sameList(
            r.files.map((f) => f.digest),
            digestsOf(value),
          ),
        30_000,
      );
    await appliedWith('old');

    let old = 'old';
    let cut: { value: string; temps: string[] } | undefined;
    for (let attempt = 1; attempt <= ENGINE_KILL_TRIES; attempt++) {
      const value = `new-${attempt}`;
      const victim = engine;
      const stop = onFirstChange(dir, () => victim.child.kill('SIGKILL'));
      await m.setConfig('n1', 'big', 'v', value);
      const { signal } = await exitedWithin(victim, 30_000);
      stop();
      assert.is(signal, 'SIGKILL', `the engine was killed, not ended: ${victim.stderr().slice(-500)}`);
      // Every file is whole: the old bytes, or the new bytes of one renamed before the kill; never a part.
      for (const path of paths) {
        const now = m.file(path);
        assert.ok(
          now === bigText(old) || now === bigText(value),
          `${path} is neither the old nor the new file: ${now?.length} bytes, head ${JSON.stringify(now?.slice(0, 20))}`,
        );
      }
      const temps = tempFiles(dir);
      if (temps.length > 0) cut = { value, temps };
      engine = m.startEngineProcess();
      await said(engine, /engine listening on/);
      if (cut) break;
      // A kill after the last rename cut nothing: the next try changes the value again.
      await appliedWith(value);
      old = value;
    }
    if (!cut) throw new Error(`in ${ENGINE_KILL_TRIES} tries the engine was never killed before its last rename`);
    const restartedAt = Date.now();

    await said(client, /engine not reachable \(engine \S+ closed the connection before replying\); waiting for its knock/);
    await said(client, /engine knocked: filling 1 module\(s\) again/);
    const r = await appliedWith(cut.value);
    const appliedMs = Date.now() - restartedAt;
    for (const path of paths) assert.ok(m.file(path) === bigText(cut.value), `${path} holds the new bytes`);
    assert.equal(
      r.files.map((f) => f.path),
      paths,
    );
    // The restarted engine swept what the killed one left, and left nothing of its own.
    assert.equal(tempFiles(dir), []);
    await said(engine, new RegExp(`${escapeRegExp(dir)}: removed ${cut.temps.length} temp file\\(s\\) a write cut short left`));
    console.log(
      `# engine SIGKILL mid-write (${cut.temps.length} temp file(s) of ${BIG_FILES.length} × ${BIG_BYTES >> 20} MiB left): restarted engine → module applied with the new bytes in ${appliedMs} ms`,
    );
  } finally {
    await m.close();
  }
});

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

// ---------------------------------------------------------------------------------------------
// The seat, killed while it writes the plans of its first pass.

const SEAT_NODES = 200;
const SEAT_MODULES = 10;
/** The seat is killed when the bus relays this plan write of its first pass (of 2,000). */
const KILL_AT_WRITE = 500;

test('the seat killed while writing its first pass’s plans and restarted: every assignment gets its exact plan, and no plan already written is written again', async () => {
  const nats = await startNats();
  const nc = await connectBus({ servers: [nats.url], name: 'test' });
  let seat: RunningSeat | undefined;
  let mirror: PlansMirror | undefined;
  try {
    const inputs = await createInputBuckets(nc);
    // Made here, so the test sees the seat's first write: the seat takes a bucket that exists.
    await ensureKv(nc, PLANS, 1);
    const fleet = await putFleet(inputs, SEAT_NODES, SEAT_MODULES);
    const { assignments } = fleet;

    // SIGKILL once the bus relays the pass's KILL_AT_WRITE-th plan write: the seat dies with most of it unwritten.
    let killed = false;
    let relayed = 0;
    const relay = nc.subscribe(`$KV.${PLANS}.>`, {
      callback: () => {
        if (killed || ++relayed < KILL_AT_WRITE || seat?.pid === undefined) return;
        killed = true;
        process.kill(seat.pid, 'SIGKILL');
      },
    });
    seat = startSeatProcess(nats.url);
    await waitFor('the seat killed in its first pass', () => killed, 20_000).catch((e) => {
      throw new Error(`${(e as Error).message}; the seat said: ${seat?.said().slice(-2000)}`);
    });
    relay.unsubscribe();
    await seat.stop();

    // What the dead seat left: its writes the server had taken are stored; wait until none arrives.
    const { plans } = (mirror = await mirrorPlans(nc));
    await waitFor(
      'the plans bucket still for 300 ms',
      async () => {
        const count = plans.size;
        await sleep(300);
        return plans.size === count;
      },
      10_000,
    );
    const before = new Map(plans);
    assert.ok(before.size > 0 && before.size < assignments.size, `the seat died mid-pass: ${before.size} of ${assignments.size} plans written`);

    // While the seat is down: one written plan's assignment changes, another's goes.
    const [changed, gone] = [...before.keys()].sort() as [string, string];
    const [node, mod] = changed.split('.') as [string, string];
    const changedAssignment = jsonBytes(assignment(node, mod, '/srv/moved'));
    await inputs.assignments.put(changed, changedAssignment);
    await inputs.assignments.delete(gone);
    assignments.set(changed, changedAssignment);
    assignments.delete(gone);

    const restartedAt = Date.now();
    seat = startSeatProcess(nats.url);
    const wanted = expectedPlans(fleet);
    const wrong = () => [...wanted].filter(([key, bytes]) => !sameBytes(plans.get(key)?.bytes, bytes)).map(([key]) => key);
    await waitFor('every assignment’s exact plan, and the gone one retired', () => wrong().length === 0 && !plans.has(gone), 30_000).catch((e) => {
      throw new Error(`${(e as Error).message}; ${wrong().length} wrong, e.g. ${wrong().slice(0, 3).join(', ')}; the seat said: ${seat?.said().slice(-2000)}`);
    });
    const completeMs = Date.now() - restartedAt;
    // A moment more for a late rewrite to show.
    await sleep(500);

    assert.is(plans.size, wanted.size);
    assert.equal(wrong(), []);
    const rewritten = [...before].filter(([key, was]) => key !== changed && key !== gone && plans.get(key)?.revision !== was.revision).map(([key]) => key);
    assert.equal(rewritten, [], 'plans whose inputs did not change keep their revision');
    assert.ok(plans.get(changed)!.revision > before.get(changed)!.revision, 'the changed assignment’s plan is written again');
    assert.match(new TextDecoder().decode(plans.get(changed)!.bytes), /"\/srv\/moved\/m\d\.conf"/);
    console.log(
      `# seat SIGKILL mid-pass: ${before.size} of ${assignments.size + 1} plans written before the kill; restart → every plan exact in ${completeMs} ms, ${before.size - 2} kept their revision`,
    );
  } finally {
    mirror?.stop();
    await seat?.stop();
    await nc.close();
    await nats.cleanup();
  }
});

// ---------------------------------------------------------------------------------------------
// A node's client, killed with its modules applied and started again after changes.

const small = (name: string): ModuleSpec => ({
  templates: { [`${name}.conf`]: `${name} level \${config:level} port \${port:http}\n` },
  provisioning: { files: [{ path: `\${dir:config}/${name}.conf`, template: `${name}.conf`, change: 'restart' }] },
});

const holds = async (kv: KV, key: string) => (await kv.get(key))?.operation === 'PUT';

test('a client killed with its modules applied and started again: the module unassigned meanwhile loses its needs and its report (removed published), the changed one gets its new value', async () => {
  const m = await startMesh();
  try {
    for (const name of ['web', 'db', 'app']) {
      await m.publish(name, small(name));
      await m.setConfig('n1', name, 'level', 'info');
      await m.assign('n1', name);
    }
    let client = m.startClientProcess();
    for (const name of ['web', 'db', 'app']) await m.waitReport('n1', name, (r) => r.state === 'applied', 30_000);
    const file = (name: string) => m.file(join(m.root, 'etc', name, `${name}.conf`));
    client.kill();
    assert.is((await client.exited).signal, 'SIGKILL');

    await m.unassign('n1', 'web');
    await m.setConfig('n1', 'db', 'level', 'debug');
    await waitFor('the seat retiring web’s plan', async () => !(await holds(m.kv.plans, 'n1.web')));
    assert.ok(await holds(m.kv.needs, 'n1.web.config.level'), 'web’s needs are left while the client is down');
    assert.is((await m.report('n1', 'web'))?.state, 'applied', 'web’s report is left while the client is down');

    const published: Report[] = [];
    const sub = m.nc.subscribe('prov.applied.n1.web', { callback: (_e, msg) => void published.push(msg.json() as Report) });
    await m.nc.flush();
    const restartedAt = Date.now();
    client = m.startClientProcess();
    await m.waitReport('n1', 'db', (r) => r.state === 'applied' && r.files[0]?.digest === contentDigest('db level debug port 8080\n'), 30_000);
    const dbMs = Date.now() - restartedAt;
    assert.is(file('db'), 'db level debug port 8080\n');
    await waitFor('web’s needs deleted', async () => !(await holds(m.kv.needs, 'n1.web.config.level')) && !(await holds(m.kv.needs, 'n1.web.port.http')));
    await waitFor('web’s report deleted', async () => (await m.kv.applied.get('n1.web'))?.operation === 'DEL');
    await waitFor('removed published for web', () => published.some((r) => r.state === 'removed' && r.module === 'web'));
    const cleanMs = Date.now() - restartedAt;
    sub.unsubscribe();
    assert.is(file('app'), 'app level info port 8080\n');
    assert.is((await m.report('n1', 'app'))?.state, 'applied');
    assert.ok(await holds(m.kv.needs, 'n1.db.config.level'), 'a planned module keeps its needs');
    await said(client, /needs and report of web, which has no plan on n1, deleted/);
    console.log(`# client SIGKILL: restart → changed module applied in ${dbMs} ms; unassigned module's needs and report gone in ${cleanMs} ms`);
  } finally {
    await m.close();
  }
});

test.run();
