// Benchmarks the operator's provenance commands (DESIGN §14) at fleet size: NODES simulated nodes'
// reports, each file with its `from`, written to a real nats-server with the seat's bundle serving
// the verb; then `trace` of a config key pattern over the whole fleet and `why` of one node's module,
// each the bundle run end to end as an operator runs it (process start, connect, reads, print). Beside
// them, from the same run: the verb paging the same reports in this process (trace's floor), and the
// bundle's start alone (`server.js --version`).
//
//   node build.mjs && node --import tsx bench/provenance.ts [--nodes N] [--runs N]
import { spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import { connectBus, ensureKv } from '../src/shared/bus/bus.ts';
import { jsonBytes } from '../src/shared/base/bytes.ts';
import { KvPublisher } from '../src/shared/bus/kv-publisher.ts';
import { APPLIED, ASSIGNMENTS, COLLECT, CONFIG, MODULES, PLANS } from '../src/shared/contract/buckets.ts';
import { PROVISIONING_VERB } from '../src/shared/contract/subjects.ts';
import type { VerbReply } from '../src/shared/contract/verb.ts';
import type { Report } from '../src/shared/contract/report.ts';
import { startNats } from '../test/helpers/nats.ts';
import { now, numberArg, percentile, ROOT } from './lib.ts';
import { putPipelined, startSeatProcess } from './seat-lib.ts';

const NODES = numberArg('nodes', 5000);
const RUNS = numberArg('runs', 5);
/** One node in BEHIND_EVERY holds an older revision of its color: trace lists each. */
const BEHIND_EVERY = 50;
const SERVER = join(ROOT, 'dist/server.js');
const DIGEST = 'sha256:' + 'a'.repeat(64);

const nodeName = (i: number) => `n${String(i).padStart(5, '0')}`;

/** The composition of `web`: one file naming a config key, a port, a collection and a secret. */
const COMPOSITION = {
  module: 'web',
  build: '1',
  published: true,
  archive: { ref: 'obj://mesh-catalog_archives/web-1.tar', digest: DIGEST },
  provisioning: { files: [{ path: '${dir:config}/web.conf', template: 'web.conf', mode: 'owned', change: 'restart' }], secrets: [{ name: 'api-key' }] },
};

/** A node's report as a client with provenance writes it: the archive, the plan, its config key, three contributors and a secret. */
function report(node: string, colorRev: number, planRev: number, itemRevs: readonly number[]): Report {
  const contributors = ['a', 'b', 'c'].map((c, i) => ({ kind: 'collected', key: `${node}.env.${c}`, rev: itemRevs[i] ?? 1 }));
  return {
    node,
    module: 'web',
    build: '1',
    state: 'applied',
    files: [
      {
        path: `/etc/web/web.conf`,
        action: 'written',
        digest: 'sha256:' + 'b'.repeat(64),
        from: [
          { kind: 'archive', key: COMPOSITION.archive.ref, digest: DIGEST },
          { kind: 'port', key: `${node}.web`, rev: planRev },
          { kind: 'config', key: `${node}.web.color`, rev: colorRev },
          ...contributors,
          { kind: 'secret', key: 'module/web/api-key' },
        ],
      },
    ],
    waiting: [],
    at: new Date().toISOString(),
  };
}

/** Writes every node's color (twice for one in BEHIND_EVERY), one plan through the seat, and every report; resolves with how many are behind. */
async function loadFleet(nc: NatsConnection): Promise<number> {
  for (const b of [CONFIG, ASSIGNMENTS, MODULES, COLLECT]) await ensureKv(nc, b, 1);
  const plans = await ensureKv(nc, PLANS, 1);
  await ensureKv(nc, APPLIED, 1);
  // The one plan `why` reads, composed by the seat.
  await (await ensureKv(nc, MODULES, 1)).put('web', jsonBytes(COMPOSITION));
  const node0 = nodeName(0);
  await (
    await ensureKv(nc, ASSIGNMENTS, 1)
  ).put(`${node0}.web`, jsonBytes({ node: node0, module: 'web', placement: { dir: { config: '/etc/web' }, port: { http: 8080 } } }));
  let planRev = 0;
  for (const deadline = now() + 30_000; planRev === 0 && now() < deadline; await new Promise((r) => setTimeout(r, 20)))
    planRev = (await plans.get(`${node0}.web`))?.revision ?? 0;
  if (planRev === 0) throw new Error('the seat wrote no plan for n00000.web within 30 s');
  // Node 0's three contributors, as its collector's inputs (the other nodes' are not read by trace).
  const collect = await ensureKv(nc, COLLECT, 1);
  const itemRevs: number[] = [];
  for (const c of ['a', 'b', 'c'])
    itemRevs.push(await collect.put(`${node0}.env.${c}`, jsonBytes({ node: node0, collection: 'env', contributor: c, content: 'x' })));
  const config = await ensureKv(nc, CONFIG, 1);
  const revs = new Map<string, number>();
  for (let i = 0; i < NODES; i++) revs.set(nodeName(i), await config.put(`${nodeName(i)}.web.color`, 'blue'));
  let behind = 0;
  for (let i = BEHIND_EVERY - 1; i < NODES; i += BEHIND_EVERY, behind++) await config.put(`${nodeName(i)}.web.color`, 'green');
  const publisher = new KvPublisher(nc, APPLIED);
  await putPipelined(
    publisher,
    (function* () {
      for (let i = 0; i < NODES; i++)
        yield [`${nodeName(i)}.web`, jsonBytes(report(nodeName(i), revs.get(nodeName(i))!, planRev, itemRevs))] as [string, Uint8Array];
    })(),
  );
  publisher.close();
  return behind;
}

/** The verb paging every report in this process: trace's floor. */
async function pageVerb(nc: NatsConnection): Promise<{ ms: number; entries: number }> {
  const started = now();
  let after: string | undefined;
  let entries = 0;
  do {
    const body = jsonBytes(after === undefined ? { what: 'applied', limit: 1000 } : { what: 'applied', limit: 1000, after });
    const reply = (await nc.request(PROVISIONING_VERB, body, { timeout: 30_000 })).json<VerbReply & { error?: string }>();
    if (reply.error) throw new Error(`verb: ${reply.error}`);
    entries += reply.entries.length;
    after = reply.next;
  } while (after !== undefined);
  return { ms: now() - started, entries };
}

/** Runs the server bundle with `args` RUNS times; the median wall time, and the last run's exit code and stdout. */
function timeBundle(args: string[]): { p50: number; max: number; code: number | null; stdout: string } {
  const times: number[] = [];
  let last = spawnSync(process.execPath, [SERVER, ...args], { encoding: 'utf8' });
  for (let i = 0; i < RUNS; i++) {
    const started = now();
    last = spawnSync(process.execPath, [SERVER, ...args], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    times.push(now() - started);
  }
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 50), max: times.at(-1)!, code: last.status, stdout: last.stdout + last.stderr };
}

async function main(): Promise<void> {
  const nats = await startNats();
  const nc = await connectBus({ servers: [nats.url], name: 'bench-provenance' });
  const seat = startSeatProcess(nats.url);
  try {
    await seat.saying(/seat ready/, now);
    const behind = await loadFleet(nc);
    const floors = [await pageVerb(nc), await pageVerb(nc), await pageVerb(nc)].sort((a, b) => a.ms - b.ms);
    const start = timeBundle(['--version']);
    const bus = ['--nats', nats.url];
    const trace = timeBundle(['trace', 'mesh-config_resolved:*.web.color', ...bus]);
    const expected = `newest revision in place on ${NODES - behind} of ${NODES} nodes`;
    if (trace.code !== 1 || !trace.stdout.includes(expected))
      throw new Error(`trace did not say "${expected}" (exit ${trace.code}): ${trace.stdout.slice(0, 2000)}`);
    const query = timeBundle(['query', 'applied', '--limit', '1000', '--json', ...bus]);
    if (query.code !== 0) throw new Error(`query applied exited ${query.code}: ${query.stdout.slice(0, 2000)}`);
    const why = timeBundle(['why', nodeName(0), 'web', ...bus]);
    if (why.code !== 0) throw new Error(`why exited ${why.code}: ${why.stdout.slice(0, 2000)}`);
    const [l1, l5] = loadavg();
    console.log(
      `provenance: ${NODES} nodes' reports with from (${behind} behind), bundle runs p50 of ${RUNS} (load average ${l1!.toFixed(2)} / ${l5!.toFixed(2)})`,
    );
    console.log(`  trace mesh-config_resolved:*.web.color, end to end (goal ≤ 1 s): p50 ${fmt(trace.p50)} ms, max ${fmt(trace.max)} ms`);
    console.log(`    floor, same run: query applied --json, the bundle paging the same reports, p50 ${fmt(query.p50)} ms, max ${fmt(query.max)} ms;`);
    console.log(
      `      the verb paging the same ${floors[1]!.entries} reports in-process ${fmt(floors[1]!.ms)} ms (median of 3); server.js --version ${fmt(start.p50)} ms`,
    );
    console.log(`  why ${nodeName(0)} web, end to end (goal ≤ 0.3 s): p50 ${fmt(why.p50)} ms, max ${fmt(why.max)} ms`);
  } catch (err) {
    console.error(`seat stderr (tail):\n${seat.stderr().slice(-4000)}`);
    throw err;
  } finally {
    await seat.stop();
    await nc.close();
    await nats.cleanup();
  }
}

function fmt(ms: number): string {
  return ms.toFixed(0);
}

await main();
