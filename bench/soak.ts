// Soak (issue 13): one node, MODULES modules of 1–3 config keys each, a live reference engine
// (dist/engine.js) writing real files under a temp root, and a writer putting config values at RATE
// changes/s for MINUTES minutes. Prints the trend and the end of: the client's RSS (VmRSS every 10 s,
// least-squares slope after a one-minute warm-up), config put → file on disk latency per window, the
// client's open fds, consumers and connections on the bus; then, once the writer has stopped and the
// files settled, every module's file compared with what the last acked values give, and the rate
// achieved. Not part of `npm run bench` (30 minutes by default):
//
//   node build.mjs && node --import tsx bench/soak.ts [--minutes 30] [--rate 200] [--modules 1000] [--in-flight 64]
//
// --split puts a timing proxy between the client and the engine (one more hop, in this process) and
// splits the lag at the socket: put → request, request → reply. MESH_SOAK_DUMP=FILE writes every
// timed value as CSV (`kind,at_ms,lag_ms`, kind `disk`, `floor`, `request` or `reply`).
// MESH_BENCH_PROF=DIR writes CPU profiles of the client and the engine into DIR.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { connectBus } from '../src/shared/bus/bus.ts';
import { APPLIED } from '../src/shared/contract/buckets.ts';
import { freePort } from '../test/helpers/nats.ts';
import { cpuSeconds, now, numberArg, openFds, profileFlags, publishBenchModule, ROOT, rssMiB, startBenchMesh, waitUntil, type BenchMesh } from './lib.ts';
import {
  busCounts,
  expectedText,
  INITIAL_SEQ,
  soakModules,
  soakTemplate,
  startWriter,
  valueOf,
  type BusCounts,
  type SoakModule,
  type Writer,
} from './soak-lib.ts';
import {
  clock,
  figuresOf,
  mib,
  printResults,
  printTrend,
  printVerdicts,
  SAMPLE_MS,
  type Mismatch,
  type Outcome,
  type Sample,
  type Watched,
} from './soak-report.ts';
import { PendingPuts, splitProxy, watchFiles, watchFloor, type Arrival, type DiskWatch, type SplitTimes } from './soak-watch.ts';

const MINUTES = numberArg('minutes', 30);
const RATE = numberArg('rate', 200);
const MODULES_N = numberArg('modules', 1000);
const IN_FLIGHT = numberArg('in-flight', 64);
const SPLIT = process.argv.includes('--split');
/** Ten windows a run in the trend, none shorter than 30 s. */
const WINDOW_MS = Math.max(30, Math.ceil((MINUTES * 6) / 10) * 10) * 1000;
const NODE = 'soak';
/** The writer is done and the disk has not changed for this long: settled. */
const SETTLE_QUIET_MS = 10_000;
/** Settling gives up after this long; what is still wrong then counts as mismatches. */
const SETTLE_MAX_MS = 120_000;
/** How long a process stopped at the end has before SIGKILL. */
const STOP_GRACE_MS = 5_000;
/** Modules published at once. */
const PUBLISH_BATCH = 25;

/** Starts dist/engine.js on the node's paths under `dir`. */
function startEngine(dir: string): { child: ChildProcess; root: string; socket: string } {
  const paths = { root: join(dir, 'root'), secrets: join(dir, 'secrets'), socket: join(dir, 'fill.sock'), journal: join(dir, 'journal.log') };
  mkdirSync(paths.root, { recursive: true });
  mkdirSync(paths.secrets, { recursive: true });
  // MESH_BENCH_PROF=DIR profiles the engine too, as bench/lib.ts does the client.
  const prof = profileFlags();
  const child = spawn(
    process.execPath,
    [...prof, join(ROOT, 'dist/engine.js'), '--socket', paths.socket, '--root', paths.root, '--secrets', paths.secrets, '--journal', paths.journal],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  return { child, root: paths.root, socket: paths.socket };
}

/**
 * Keeps the lines at warn or error a process writes to stderr. A pipe, as under systemd: a log file
 * on the disk the engine fsyncs would stall the writer on the file system's journal.
 */
function keepProblems(child: ChildProcess): string[] {
  const kept: string[] = [];
  let partial = '';
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    const lines = (partial + d).split('\n');
    partial = lines.pop() ?? '';
    for (const l of lines) if (/ (warning|error) /.test(l)) kept.push(l);
  });
  return kept;
}

async function publishAll(mesh: BenchMesh, modules: readonly SoakModule[]): Promise<void> {
  for (let i = 0; i < modules.length; i += PUBLISH_BATCH) {
    await Promise.all(
      modules.slice(i, i + PUBLISH_BATCH).map((m) =>
        publishBenchModule(mesh, m.name, NODE, {
          templates: { [m.file]: soakTemplate(m) },
          dir: '${dir:config}',
          config: Object.fromEntries(m.keys.map((k) => [k, valueOf(INITIAL_SEQ)])),
          placement: { dir: { config: m.dir } },
        }),
      ),
    );
  }
}

/** The modules whose file is not what `seqOf` gives (an absent file included). */
function mismatches(modules: readonly SoakModule[], accepts: (m: SoakModule, text: string) => boolean): Mismatch[] {
  const wrong: Mismatch[] = [];
  for (const m of modules) {
    const path = join(m.dir, m.file);
    const text = existsSync(path) ? readFileSync(path, 'utf8') : undefined;
    if (text === undefined || !accepts(m, text)) wrong.push({ module: m, text });
  }
  return wrong;
}

/** Whether the file holds, for each key, the last acked value, or the newer value of a put that failed. */
function finalAccepts(writer: Writer): (m: SoakModule, text: string) => boolean {
  return (m, text) => {
    const onDisk = new Map([...text.matchAll(/^(k\d) = v(\d+)$/gm)].map(([, k, seq]) => [k!, Number(seq)]));
    return (
      text ===
      expectedText(m, (k) => {
        const acked = writer.lastAcked.get(`${m.name}.${k}`) ?? INITIAL_SEQ;
        const failed = writer.uncertain.get(`${m.name}.${k}`);
        return failed !== undefined && failed > acked && onDisk.get(k) === failed ? failed : acked;
      })
    );
  };
}

function sample(pids: Watched, t: number, writer: Writer, seen: number): Sample {
  const rss = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, rssMiB(pid)])) as Sample['rss'];
  return { t, rss, fds: { client: openFds(pids.client), engine: openFds(pids.engine) }, acked: writer.acked(), seen };
}

/** Waits until every file matches or the disk has been quiet for SETTLE_QUIET_MS; the ms it took. */
async function settle(modules: readonly SoakModule[], writer: Writer, lastChange: () => number): Promise<number> {
  const started = now();
  const accepts = finalAccepts(writer);
  while (now() - started < SETTLE_MAX_MS) {
    if (mismatches(modules, accepts).length === 0) return now() - started;
    if (now() - lastChange() > SETTLE_QUIET_MS && now() - started > SETTLE_QUIET_MS) break;
    await new Promise((r) => setTimeout(r, 500));
  }
  return now() - started;
}

async function appliedCount(mesh: BenchMesh, modules: readonly SoakModule[]): Promise<number> {
  const applied = await mesh.kvm.open(APPLIED);
  let n = 0;
  for (const m of modules) if ((await applied.get(`${NODE}.${m.name}`))?.json<{ state: string }>().state === 'applied') n++;
  return n;
}

/** With --split, the timing proxy the client is pointed at instead of the engine, and the put times it reads. */
async function startSplit(dir: string, engineSocket: string): Promise<{ times: SplitTimes; puts: Map<number, number>; socket: string } | undefined> {
  if (!SPLIT) return undefined;
  const puts = new Map<number, number>();
  const take = (seq: number) => {
    const at = puts.get(seq);
    puts.delete(seq);
    return at;
  };
  const socket = join(dir, 'split.sock');
  return { times: await splitProxy(socket, engineSocket, take, 0), puts, socket };
}

/** Writes every timed value as CSV when MESH_SOAK_DUMP names a file. */
function writeDump(o: Outcome): void {
  const dump = process.env['MESH_SOAK_DUMP'];
  if (!dump) return;
  const kinds = { disk: o.arrivals, floor: o.floor, request: o.split?.request ?? [], reply: o.split?.reply ?? [] };
  writeFileSync(
    dump,
    'kind,at_ms,lag_ms\n' +
      Object.entries(kinds)
        .flatMap(([kind, xs]) => xs.map((a) => `${kind},${a.at.toFixed(1)},${a.lagMs.toFixed(2)}\n`))
        .join(''),
  );
}

async function main(): Promise<void> {
  const port = await freePort();
  const mesh = await startBenchMesh({ natsConfig: `http: "127.0.0.1:${port}"` });
  const engine = startEngine(join(mesh.dir, 'engine'));
  const engineProblems = keepProblems(engine.child);
  try {
    const modules = soakModules(MODULES_N, engine.root);
    const keys = modules.flatMap((m) => m.keys.map((k) => `${m.name}.${k}`));
    console.log(
      `soak: ${MODULES_N} modules (${keys.length} config keys) on one node, ${RATE} changes/s for ${MINUTES} min, at most ${IN_FLIGHT} puts in flight`,
    );
    console.log(
      `  client --settle 0, the reference engine writing under a temp root${SPLIT ? ', a timing proxy between them' : ''}; a shared 2-core machine: figures are noisy`,
    );
    await waitUntil('the engine socket', () => existsSync(engine.socket), 20_000);
    await publishAll(mesh, modules);
    const split = await startSplit(mesh.dir, engine.socket);
    const client = mesh.startClient(NODE, split?.socket ?? engine.socket, 'pipe');
    const logs = { client: keepProblems(client), engine: engineProblems };
    const coldStart = now();
    await waitUntil('every initial file', () => mismatches(modules, (m, text) => text === expectedText(m, () => INITIAL_SEQ)).length === 0, 300_000);
    console.log(`  client start → every file on disk: ${((now() - coldStart) / 1000).toFixed(1)} s`);
    const pids: Watched = { client: client.pid!, engine: engine.child.pid!, seat: mesh.seatPid, 'nats-server': mesh.natsPid };
    const outcome = await run(mesh, modules, keys, pids, `http://127.0.0.1:${port}`, logs, split);
    await stopGently(client);
    split?.times.server.close();
    writeDump(outcome);
    printTrend(outcome);
    const figures = figuresOf(outcome);
    printResults(outcome, figures);
    process.exitCode = printVerdicts(outcome, figures).every(Boolean) ? 0 : 1;
  } finally {
    await stopGently(engine.child);
    await mesh.close();
  }
}

/** SIGTERM (so a --cpu-prof profile is written), SIGKILL after STOP_GRACE_MS. */
async function stopGently(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
  await exited;
  clearTimeout(timer);
}

/** The 10 s samples of the processes and the writer, with the bus counted beside each. */
function startSampler(pids: Watched, origin: number, writer: Writer, disk: DiskWatch, count: () => Promise<BusCounts>, first: BusCounts) {
  const take = () => sample(pids, now() - origin, writer, disk.seen());
  const samples: Sample[] = [{ ...take(), bus: first }];
  const timer = setInterval(() => {
    const s = take();
    samples.push(s);
    void count().then(
      (bus) => (s.bus = bus),
      () => undefined,
    );
    process.stderr.write(`soak ${clock(s.t)}: acked ${s.acked}, on disk ${s.seen}, client RSS ${mib(s.rss.client)}, fds ${s.fds.client}\n`);
  }, SAMPLE_MS);
  return {
    samples,
    /** Stops sampling and takes the last sample (not added). */
    stop(): Sample {
      clearInterval(timer);
      return take();
    },
  };
}

/** CPU seconds each process used since this call, this bench's own included. */
function cpuMeter(pids: Watched): () => Record<string, number> {
  const before = Object.fromEntries(Object.entries(pids).map(([n, pid]) => [n, cpuSeconds(pid)]));
  const bench = process.cpuUsage();
  return () => {
    const used = process.cpuUsage(bench);
    return { ...Object.fromEntries(Object.entries(pids).map(([n, pid]) => [n, cpuSeconds(pid) - before[n]!])), bench: (used.user + used.system) / 1e6 };
  };
}

async function run(
  mesh: BenchMesh,
  modules: SoakModule[],
  keys: string[],
  pids: Watched,
  monitor: string,
  logs: Outcome['logs'],
  split: { times: SplitTimes; puts: Map<number, number> } | undefined,
): Promise<Outcome> {
  const floorNc = await connectBus({ servers: [mesh.url], name: 'bench-floor' });
  // Times are ms since here; the floor's consumer exists before the bus is counted.
  const origin = now();
  const floor = await watchFloor(floorNc, NODE, origin);
  const busStart = await busCounts(mesh.nc, monitor);
  const cpu = cpuMeter(pids);
  const pending = new PendingPuts();
  const disk = watchFiles(modules, pending, origin);
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  const writer = startWriter({
    config: mesh.kv.config,
    node: NODE,
    keys,
    rate: RATE,
    maxInFlight: IN_FLIGHT,
    onPut: (key, seq, at) => {
      pending.put(key, seq, at);
      floor.put(seq, at);
      split?.puts.set(seq, at);
    },
  });
  const sampler = startSampler(pids, origin, writer, disk, () => busCounts(mesh.nc, monitor), busStart);
  await new Promise((r) => setTimeout(r, MINUTES * 60_000));
  writer.stop();
  await writer.done;
  const last = sampler.stop();
  sampler.samples.push(last);
  loop.disable();
  const settleMs = await settle(modules, writer, disk.lastChange);
  disk.close();
  const used = cpu();
  const busEnd = await busCounts(mesh.nc, monitor);
  last.bus = busEnd;
  floor.stop();
  await floorNc.close();
  return {
    target: { rate: RATE, modules: MODULES_N },
    ...(split ? { split: { request: shift(split.times.toRequest, origin), reply: shift(split.times.toReply, origin) } } : {}),
    samples: sampler.samples,
    arrivals: disk.arrivals,
    floor: floor.arrivals,
    windowMs: WINDOW_MS,
    bus: { start: busStart, end: busEnd },
    fds: { start: sampler.samples[0]!.fds.client, end: openFds(pids.client) },
    writer,
    writerMs: last.t,
    seen: disk.seen(),
    settleMs,
    wrong: mismatches(modules, finalAccepts(writer)),
    applied: await appliedCount(mesh, modules),
    cpu: used,
    loopP99: loop.percentile(99) / 1e6,
    logs,
  };
}

/** Arrivals timed from 0 (the proxy starts before the run), moved to be timed from `origin`. */
const shift = (xs: readonly Arrival[], origin: number): Arrival[] => xs.filter((x) => x.at >= origin).map((x) => ({ at: x.at - origin, lagMs: x.lagMs }));

await main();
