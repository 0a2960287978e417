// The client's CPU for a cold start (issue 34, fifth session): one node of `--modules` modules of three
// files each (1,000 distinct archives), a stub engine, each client bundle named by `--clients` started in
// turn `--rounds` times over with an empty cache, timed to every module's report said on prov.applied;
// its CPU, the share of its helper threads, and its peak RSS. The bench's scale row (bench/scale-row.ts)
// has the floors; this one puts an old and a new build on the same machine, minutes apart.
//
//   node build.mjs && node --import tsx bench/cold-cpu.ts [--modules N] [--rounds R] [--clients A.js,B.js] [--after-ms MS] [--warm-cache]
//
// With --warm-cache the cache is kept between starts: a restart whose archives are all in the pack.
//
// The first start (not printed) writes every report and need; the ones printed find them written, as
// a restarted node does, each the same work.
import { rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { appliedSubject } from '../src/shared/contract/subjects.ts';
import { cpuSeconds, fakeEngine, helperCpuSeconds, now, numberArg, peakRssMiB, ROOT, startBenchMesh, stringArg, waitUntil, type BenchMesh } from './lib.ts';
import { publishNode } from './scale-row.ts';

const MODULES = numberArg('modules', 1000);
const ROUNDS = numberArg('rounds', 2);
const CLIENTS = stringArg('clients', join(ROOT, 'dist/client.js')).split(',');
/** How long after every report was said the client's CPU is read again (what the start left for later). */
const AFTER_MS = numberArg('after-ms', 3000);
/** Keeps the cache between starts: every archive read from the pack, none fetched. */
const WARM_CACHE = process.argv.includes('--warm-cache');

/** One start of `bundle` as `node`'s client, its cache emptied first (unless --warm-cache): seconds to every report said, CPU, helpers' CPU, peak RSS. */
async function coldStart(mesh: BenchMesh, bundle: string, node: string, socket: string) {
  if (!WARM_CACHE) rmSync(join(mesh.dir, `cache-${node}`), { recursive: true, force: true });
  const said = new Set<string>();
  const sub = mesh.nc.subscribe(appliedSubject(node, '*'), {
    callback: (_err, msg) => {
      if ((JSON.parse(new TextDecoder().decode(msg.data)) as { state: string }).state === 'applied') said.add(msg.subject);
    },
  });
  await mesh.nc.flush();
  process.env['MESH_BENCH_CLIENT'] = bundle;
  const started = now();
  const client = mesh.startClient(node, socket);
  await waitUntil(`${MODULES} reports`, () => said.size === MODULES, 300_000);
  const run = {
    s: (now() - started) / 1000,
    cpu: cpuSeconds(client.pid!),
    helpers: helperCpuSeconds(client.pid!),
    rss: peakRssMiB(client.pid!),
    after: 0,
    afterOff: 0,
  };
  // The CPU of the AFTER_MS that follow, idle: what a start leaves for later (the archive cache, written behind the fills) is the start's too.
  await new Promise((r) => setTimeout(r, AFTER_MS));
  run.after = cpuSeconds(client.pid!) - run.cpu;
  run.afterOff = helperCpuSeconds(client.pid!) - run.helpers;
  sub.unsubscribe();
  const exited = new Promise((r) => client.once('exit', r));
  client.kill('SIGTERM');
  await exited;
  return run;
}

async function main(): Promise<void> {
  const mesh = await startBenchMesh();
  try {
    const node = 'coldcpu';
    await publishNode(mesh, node, join(mesh.dir, 'root'), MODULES);
    const socket = join(mesh.dir, 'cold-stub.sock');
    const stub = await fakeEngine(socket, () => {});
    await coldStart(mesh, CLIENTS[0]!, node, socket);
    console.log(`the client's cold start: ${MODULES} modules × 3 files, ${MODULES} archives, empty cache, a stub engine; to every report said`);
    for (let round = 0; round < ROUNDS; round++) {
      for (const bundle of CLIENTS) {
        const load = loadavg()
          .map((l) => l.toFixed(2))
          .join(' ');
        const r = await coldStart(mesh, bundle, node, socket);
        console.log(
          `  ${bundle.replace(ROOT, '')}: ${r.s.toFixed(2)} s, client CPU ${r.cpu.toFixed(2)} s (off its main thread ${r.helpers.toFixed(2)} s; ${r.after.toFixed(2)} s more in the ${AFTER_MS / 1000} s after, idle, ${r.afterOff.toFixed(2)} s of it off the main thread), peak RSS ${r.rss.toFixed(0)} MiB; load average ${load}`,
        );
      }
    }
    stub.close();
  } finally {
    await mesh.close();
  }
}

await main();
