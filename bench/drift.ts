// Benchmarks drift (DESIGN §14, issue 33: "an edited file is restored ≤ 1 s, p99 over 100 edits, on
// tmpfs and on disk"): a file the reference engine wrote is edited by hand, the engine knocks for
// its module, a client sends the module's file again and the engine answers `restored` once the
// bytes are back: once with a stand-in client in this process (a bare line client: the knock read, the
// module's fill sent, its reply read), the engine's own share; once with the release's client on a
// bus (nats-server, the seat, each file a module of its own), what an operator meets. Beside
// it, the floor: the same fs.watch event in a process of its own, which reads the file and writes the
// bytes back as the engine writes (temp file, fsync, rename, directory fsync) — no engine, no socket.
//
//   npm run bench -- drift [--edits N] [--gap MS]
//   node --import tsx bench/drift.ts floor DIR N       the floor's watcher, alone
import { spawn } from 'node:child_process';
import { closeSync, existsSync, fsyncSync, mkdirSync, mkdtempSync, openSync, readFileSync, renameSync, rmSync, watch, writeFileSync, writeSync } from 'node:fs';
import { createConnection, type Socket } from 'node:net';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { contentDigest } from '../src/shared/contract/fill-protocol.ts';
import { fileSystemOf, startBenchEngine } from './engine-lib.ts';
import { cpuSeconds, latencyRow, now, numberArg, publishBenchModule, startBenchMesh, waitUntil } from './lib.ts';

const EDITS = numberArg('edits', 100);
/** Idle between two edits (ms): an edit by hand comes to an engine that sat idle, past the settle window of its last write's own events. */
const GAP_MS = numberArg('gap', 100);
/** Edits not measured first, so the engine's code is warm as a running engine's is. */
const WARM = 10;
/** Directories the files are spread over (each file its own module, so no file meets the 5-in-60 s rule). */
const DIRS = 10;

const content = (i: number) => `# drift ${i}\nport ${8000 + i}\n`;
const fileOf = (root: string, i: number) => join(root, `d${i % DIRS}`, `f${i}.conf`);

/** The floor's watcher: each event on f<i>.conf whose bytes are not content(i) has them written back, then `restored <i>` on stderr. */
function floor(dir: string, n: number): void {
  const write = (i: number) => {
    const temp = join(dir, `.f${i}.conf.tmp`);
    const fd = openSync(temp, 'w', 0o644);
    writeSync(fd, content(i));
    fsyncSync(fd);
    closeSync(fd);
    renameSync(temp, join(dir, `f${i}.conf`));
    const dirFd = openSync(dir, 'r');
    fsyncSync(dirFd);
    closeSync(dirFd);
  };
  for (let i = 0; i < n; i++) write(i);
  watch(dir, (_event, name) => {
    const i = /^f(\d+)\.conf$/.exec(name ?? '')?.[1];
    if (i === undefined) return;
    let bytes = '';
    try {
      bytes = readFileSync(join(dir, name!), 'utf8');
    } catch {
      // Gone: written back below.
    }
    if (bytes === content(Number(i))) return;
    write(Number(i));
    process.stderr.write(`restored ${i}\n`);
  });
  process.stderr.write('ready\n');
}

/** A bare client of the fill socket: fills one module's file, and hands each knock line to `onKnock`. */
class StandIn {
  #id = 1;
  #replies = new Map<number, (line: { files: { action: string }[] }) => void>();
  onKnock: (module: string, t: number) => void = () => {};

  constructor(
    private readonly socket: Socket,
    private readonly root: string,
  ) {
    let buf = '';
    socket.setEncoding('utf8').on('data', (d: string) => {
      const t = now();
      buf += d;
      for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
        const line = JSON.parse(buf.slice(0, nl)) as { id?: number; op?: string; module?: string; files: { action: string }[] };
        buf = buf.slice(nl + 1);
        if (line.op === 'knock') this.onKnock(line.module!, t);
        else this.#replies.get(line.id!)?.(line);
      }
    });
  }

  /** Sends module d<i>'s one file; resolves with its action. */
  fill(i: number): Promise<string> {
    const id = this.#id++;
    const body = content(i);
    const file = { path: fileOf(this.root, i), content: body, digest: contentDigest(body), mode: 'owned', change: 'restart' };
    return new Promise((resolve) => {
      this.#replies.set(id, (reply) => {
        this.#replies.delete(id);
        resolve(reply.files[0]!.action);
      });
      this.socket.write(JSON.stringify({ id, op: 'fill', module: `d${i}`, build: '1', files: [file] }) + '\n');
    });
  }
}

type Run = { total: number[]; knock: number[]; cpuMs: number; benchCpuMs: number };

/** Edits each file once through the engine: edit → knock → fill → `restored`, the bytes checked. */
async function throughEngine(base: string): Promise<Run> {
  const engine = await startBenchEngine(base, 'drift');
  const socket = createConnection(engine.socket);
  await new Promise((resolve) => socket.once('connect', resolve));
  const client = new StandIn(socket, engine.root);
  try {
    for (let d = 0; d < DIRS; d++) mkdirSync(join(engine.root, `d${d}`));
    for (let i = 0; i < EDITS + WARM; i++) if ((await client.fill(i)) !== 'written') throw new Error(`d${i} not written`);
    const run: Run = { total: [], knock: [], cpuMs: 0, benchCpuMs: 0 };
    let cpuBefore = 0;
    let benchBefore = process.cpuUsage();
    for (let i = 0; i < EDITS + WARM; i++) {
      if (i === WARM) [cpuBefore, benchBefore] = [cpuSeconds(engine.pid), process.cpuUsage()];
      await new Promise((resolve) => setTimeout(resolve, GAP_MS));
      const knocked = new Promise<number>((resolve) => (client.onKnock = (module, t) => module === `d${i}` && resolve(t)));
      const started = now();
      writeFileSync(fileOf(engine.root, i), `edited by hand ${i}\n`);
      const knockAt = await knocked;
      const action = await client.fill(i);
      const done = now();
      if (action !== 'restored' || readFileSync(fileOf(engine.root, i), 'utf8') !== content(i)) throw new Error(`d${i}: ${action}, bytes not back`);
      if (i >= WARM) (run.total.push(done - started), run.knock.push(knockAt - started));
    }
    run.cpuMs = ((cpuSeconds(engine.pid) - cpuBefore) * 1000) / EDITS;
    const bench = process.cpuUsage(benchBefore);
    run.benchCpuMs = (bench.user + bench.system) / 1000 / EDITS;
    if (engine.problems.length > 0) console.log(`  the engine said: ${engine.problems.slice(0, 3).join(' | ')}`);
    return run;
  } finally {
    socket.destroy();
    await engine.close();
  }
}

/**
 * Edits each file once with the release's client on a bus (nats-server, the seat's and the client's
 * bundles, each file a module of its own): edit → the engine's knock line → the client sends the module
 * whole → the engine writes it back; timed until the bytes are back on disk, as this process sees them.
 */
async function throughClient(base: string): Promise<Run> {
  const mesh = await startBenchMesh();
  const engine = await startBenchEngine(base, 'drift-client');
  const n = EDITS + WARM;
  const waiting = new Map<string, () => void>();
  const watchers: ReturnType<typeof watch>[] = [];
  try {
    for (let d = 0; d < DIRS; d++) mkdirSync(join(engine.root, `d${d}`));
    for (let i = 0; i < n; i++)
      await publishBenchModule(mesh, `d${i}`, 'n1', {
        templates: { [`f${i}.conf`]: content(i) },
        dir: join(engine.root, `d${i % DIRS}`),
        config: {},
        placement: {},
      });
    const client = mesh.startClient('n1', engine.socket);
    const back = (i: number) => existsSync(fileOf(engine.root, i)) && readFileSync(fileOf(engine.root, i), 'utf8') === content(i);
    await waitUntil('every file written by the client', () => [...Array(n).keys()].every(back), 120_000);
    for (let d = 0; d < DIRS; d++) watchers.push(watch(join(engine.root, `d${d}`), (_e, name) => name && waiting.get(name)?.()));
    const run: Run = { total: [], knock: [], cpuMs: 0, benchCpuMs: 0 };
    let cpuBefore = { engine: 0, client: 0 };
    for (let i = 0; i < n; i++) {
      if (i === WARM) cpuBefore = { engine: cpuSeconds(engine.pid), client: cpuSeconds(client.pid!) };
      await new Promise((resolve) => setTimeout(resolve, GAP_MS));
      const restored = new Promise<number>((resolve) => {
        const check = () => back(i) && (waiting.delete(`f${i}.conf`), resolve(now()));
        waiting.set(`f${i}.conf`, check);
      });
      const started = now();
      writeFileSync(fileOf(engine.root, i), `edited by hand ${i}\n`);
      const done = await Promise.race([
        restored,
        new Promise<number>((_r, reject) => setTimeout(() => reject(new Error(`d${i}: bytes not back within 10 s`)), 10_000)),
      ]);
      if (i >= WARM) run.total.push(done - started);
    }
    run.cpuMs = ((cpuSeconds(engine.pid) - cpuBefore.engine) * 1000) / EDITS;
    run.benchCpuMs = ((cpuSeconds(client.pid!) - cpuBefore.client) * 1000) / EDITS;
    if (engine.problems.length > 0) console.log(`  the engine said: ${engine.problems.slice(0, 3).join(' | ')}`);
    return run;
  } finally {
    for (const w of watchers) w.close();
    await engine.close();
    await mesh.close();
  }
}

/** Edits each file once under the floor's watcher: edit → its `restored` line. */
async function throughFloor(base: string): Promise<Run> {
  const dir = mkdtempSync(join(base, 'mesh-bench-drift-floor-'));
  const child = spawn(process.execPath, ['--import', 'tsx', import.meta.filename, 'floor', dir, String(EDITS + WARM)], { stdio: ['ignore', 'ignore', 'pipe'] });
  const waiting = new Map<string, (t: number) => void>();
  let ready = false;
  let partial = '';
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    const t = now();
    const lines = (partial + d).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      if (line === 'ready') ready = true;
      waiting.get(line)?.(t);
    }
  });
  try {
    await waitUntil('the floor watcher', () => ready, 20_000);
    const run: Run = { total: [], knock: [], cpuMs: 0, benchCpuMs: 0 };
    let cpuBefore = 0;
    for (let i = 0; i < EDITS + WARM; i++) {
      if (i === WARM) cpuBefore = cpuSeconds(child.pid!);
      await new Promise((resolve) => setTimeout(resolve, GAP_MS));
      const back = new Promise<number>((resolve) => waiting.set(`restored ${i}`, resolve));
      const started = now();
      writeFileSync(join(dir, `f${i}.conf`), `edited by hand ${i}\n`);
      const done = await back;
      if (i >= WARM) run.total.push(done - started);
    }
    run.cpuMs = ((cpuSeconds(child.pid!) - cpuBefore) * 1000) / EDITS;
    return run;
  } finally {
    child.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const bases = [...(existsSync('/dev/shm') && fileSystemOf('/dev/shm') === 'tmpfs' ? ['/dev/shm'] : []), '/tmp'];
  console.log(
    `drift: ${EDITS} edits by hand (each file once, ${GAP_MS} ms idle before each), edit → knock → fill → restored; load average ${loadavg()[0]!.toFixed(2)}`,
  );
  for (const base of bases) {
    const floorRun = await throughFloor(base);
    const engineRun = await throughEngine(base);
    const clientRun = await throughClient(base);
    console.log(`  in ${base} (${fileSystemOf(base)}):`);
    console.log(`${latencyRow('    floor: event → bare write back', floorRun.total)}   CPU ${floorRun.cpuMs.toFixed(2)} ms an edit`);
    console.log(latencyRow('    engine: edit → knock', engineRun.knock));
    console.log(
      `${latencyRow('    engine: edit → restored, bytes back', engineRun.total)}   CPU engine ${engineRun.cpuMs.toFixed(2)} ms, stand-in ${engineRun.benchCpuMs.toFixed(2)} ms an edit`,
    );
    console.log(
      `${latencyRow('    client.js on a bus: bytes back', clientRun.total)}   CPU engine ${clientRun.cpuMs.toFixed(2)} ms, client ${clientRun.benchCpuMs.toFixed(2)} ms an edit`,
    );
  }
}

if (process.argv[2] === 'floor') floor(process.argv[3]!, Number(process.argv[4]));
else await main();
