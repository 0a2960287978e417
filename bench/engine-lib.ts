// The reference engine for a benchmark (dist/engine.js writing real files under a temp root) and how
// a benchmark learns that a request's files are on disk: the engine's own log line for the request
// (`fill <module> <build>: … written`), which it writes to its stderr, a pipe as under systemd, once
// every file of the request is renamed into place and its directory synced. One pipe write and one
// wake-up of the benchmark per request: an inotify watch of the directory woke it five times per file
// (the temp file created, written, chmod'ed, moved from, moved to), which on two cores slowed the
// engine it was timing.
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, readFileSync, fsyncSync, mkdirSync, mkdtempSync, openSync, renameSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { createConnection, type Socket } from 'node:net';
import { join } from 'node:path';
import { contentDigest } from '../src/shared/contract/fill-protocol.ts';
import { cpuSeconds, now, percentile, profileFlags, ROOT, waitUntil } from './lib.ts';

/** A running reference engine. */
export type BenchEngine = {
  /** The directory every file is written under (the engine's --root). */
  root: string;
  /** Its fill socket. */
  socket: string;
  /** Its process id. */
  pid: number;
  /** The warn and error lines it said (a benchmark that saw one says so). */
  problems: string[];
  /** Calls `fn` with the module and the time (now()) of each request whose log line says a file was written. */
  onWritten(fn: (module: string, t: number) => void): void;
  /** Stops it (SIGTERM) and waits for its exit. */
  close(): Promise<void>;
};

/** The engine's line for a request that wrote a file (apply.ts: `fill <module> <build>: <counts>`). */
const WRITTEN = / fill (\S+) \S+: .*\bwritten\b/;

/** Starts dist/engine.js with its root, socket and journal in a new directory under `base`; resolves once its socket is there. */
export async function startBenchEngine(base: string, name: string, opts: { declare?: (root: string) => unknown } = {}): Promise<BenchEngine> {
  const dir = mkdtempSync(join(base, `mesh-bench-engine-${name}-`));
  const root = join(dir, 'root');
  mkdirSync(root);
  // A declaration (DESIGN §9), when asked: the engine then records what it writes, as a node that removes files does.
  const declare = opts.declare ? ['--declare', join(dir, 'declare.json')] : [];
  if (opts.declare) writeFileSync(join(dir, 'declare.json'), JSON.stringify(opts.declare(root)));
  const socket = join(dir, 'fill.sock');
  // MESH_BENCH_ENGINE=FILE runs another build of the engine (an A/B comparison in one run of the machine).
  const bundle = process.env['MESH_BENCH_ENGINE'] ?? join(ROOT, 'dist/engine.js');
  const prof = profileFlags();
  // Without systemd's variables its lines carry a time and a level, as WRITTEN expects.
  const env = { ...process.env, JOURNAL_STREAM: '', INVOCATION_ID: '' };
  const child: ChildProcess = spawn(
    process.execPath,
    [...prof, bundle, '--socket', socket, '--root', root, '--journal', join(dir, 'journal.log'), ...declare],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
      env,
    },
  );
  // A bench that dies takes its engine and the engine's files with it.
  const leftBehind = () => {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  };
  process.once('exit', leftBehind);
  const problems: string[] = [];
  const written: ((module: string, t: number) => void)[] = [];
  let partial = '';
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    const t = now();
    const lines = (partial + d).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      const module = WRITTEN.exec(line)?.[1];
      if (module !== undefined) for (const fn of written) fn(module, t);
      else if (/ (warning|error) /.test(line)) problems.push(line);
    }
  });
  await waitUntil(`the engine socket ${socket}`, () => existsSync(socket), 20_000);
  return {
    root,
    socket,
    pid: child.pid!,
    problems,
    onWritten: (fn) => void written.push(fn),
    async close() {
      process.off('exit', leftBehind);
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** What one small file costs in `base` written as the engine writes it (temp file, write, fsync, rename, directory fsync), in this process: p50 and p99 in ms over `n`. */
export function diskWrite(base: string, n = 200): { p50: number; p99: number } {
  const dir = mkdtempSync(join(base, 'mesh-bench-disk-'));
  const times: number[] = [];
  try {
    for (let i = 0; i < n; i++) {
      const started = now();
      const fd = openSync(join(dir, `t${i}`), 'wx', 0o600);
      writeSync(fd, `# a small file\nvalue v${i}x\n`);
      fsyncSync(fd);
      closeSync(fd);
      renameSync(join(dir, `t${i}`), join(dir, 'f'));
      const dirFd = openSync(dir, 'r');
      fsyncSync(dirFd);
      closeSync(dirFd);
      times.push(now() - started);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 50), p99: percentile(times, 99) };
}

/** The type of the file system `path` lies on (the longest mount point of /proc/mounts above it). */
export function fileSystemOf(path: string): string {
  let best = { at: '', type: 'unknown' };
  for (const line of readFileSync('/proc/mounts', 'utf8').split('\n')) {
    const [, at, type] = line.split(' ');
    if (at === undefined || type === undefined) continue;
    const above = at === '/' || path === at || path.startsWith(`${at}/`);
    if (above && at.length > best.at.length) best = { at, type };
  }
  return best.type;
}

/**
 * A connection to `socket` once the engine listens on it: its file appears at bind, before listen, so
 * a connect in between is refused (a loaded machine's run of `npm run bench -- latency` died on it).
 */
async function connectWhenListening(socket: string, ms = 20_000): Promise<Socket> {
  const until = Date.now() + ms;
  for (;;) {
    const conn = createConnection(socket);
    const err = await new Promise<Error | undefined>((resolve) => {
      conn.once('connect', () => resolve(undefined));
      conn.once('error', resolve);
    });
    if (!err) return conn;
    conn.destroy();
    if ((err as NodeJS.ErrnoException).code !== 'ECONNREFUSED' || Date.now() > until) throw err;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** The reference engine driven alone: a request's round trip (p50, ms) and the engine's CPU a request (ms). */
export type EngineAlone = { p50: number; cpu: number };

/**
 * Sends the reference engine `n` requests of one changed file each (the change row's request), with
 * no bus and no client, one at a time: back to back (`gapMs` 0), or each after the engine sat idle
 * `gapMs` (as it does between a fleet's changes). What the same work costs a process woken from
 * idle against one kept busy is the machine's, not the mesh's: on a VM it can be most of a hop.
 */
export async function engineAlone(base: string, gapMs: number, n = 500): Promise<EngineAlone> {
  const engine = await startBenchEngine(base, `alone${gapMs}`);
  const conn = await connectWhenListening(engine.socket);
  let buf = '';
  let answered: (() => void) | undefined;
  conn.setEncoding('utf8').on('data', (d: string) => {
    buf += d;
    const nl = buf.lastIndexOf('\n');
    if (nl < 0) return;
    buf = buf.slice(nl + 1);
    answered?.();
  });
  const request = (id: number) => {
    const content = `# lat a\nport 8080\nvalue v${id}x\n`;
    const file = { path: join(engine.root, 'lat', 'a.conf'), content, digest: contentDigest(content), mode: 'owned', change: 'restart' };
    return JSON.stringify({ id, op: 'fill', module: 'lat', build: '1', files: [file], secrets: {} }) + '\n';
  };
  const times: number[] = [];
  let cpuBefore = 0;
  try {
    // The first 50 warm the engine's code up, as a running engine's is.
    for (let i = 0; i < n + 50; i++) {
      if (i === 50) cpuBefore = cpuSeconds(engine.pid);
      if (gapMs > 0) await new Promise((resolve) => setTimeout(resolve, gapMs));
      const started = now();
      await new Promise<void>((resolve) => {
        answered = resolve;
        conn.write(request(i));
      });
      if (i >= 50) times.push(now() - started);
    }
    const cpu = ((cpuSeconds(engine.pid) - cpuBefore) * 1000) / n;
    times.sort((a, b) => a - b);
    return { p50: percentile(times, 50), cpu };
  } finally {
    conn.destroy();
    await engine.close();
  }
}

/**
 * The cold start's requests sent to the reference engine alone, all at once (as a client's start
 * sends them, 32 in flight): `modules` requests of three new files each; with `declared`, a
 * declaration naming every path, so the engine keeps its record too. The time to the last reply
 * and the engine's CPU, in ms.
 */
export async function engineBurst(base: string, modules: number, declared: boolean): Promise<{ ms: number; cpu: number }> {
  const paths = (root: string, i: number) => ['a', 'b', 'c'].map((f) => join(root, `s${i}`, `${f}.conf`));
  const all = (root: string) => Array.from({ length: modules }, (_, i) => paths(root, i)).flat();
  const engine = await startBenchEngine(base, `burst${declared ? 'd' : ''}`, declared ? { declare: all } : {});
  const conn = await connectWhenListening(engine.socket);
  let answers = 0;
  let allAnswered: () => void = () => {};
  const answered = new Promise<void>((resolve) => (allAnswered = resolve));
  conn.setEncoding('utf8').on('data', (d: string) => {
    for (const c of d) if (c === '\n' && ++answers === modules) allAnswered();
  });
  try {
    const cpuBefore = cpuSeconds(engine.pid);
    const started = now();
    for (let i = 0; i < modules; i++) {
      const files = paths(engine.root, i).map((path) => {
        const content = `# s${i}\nvalue ${path}\n`;
        return { path, content, digest: contentDigest(content), mode: 'owned', change: 'restart' };
      });
      conn.write(JSON.stringify({ id: i, op: 'fill', module: `s${i}`, build: '1', files, secrets: {} }) + '\n');
    }
    await answered;
    return { ms: now() - started, cpu: (cpuSeconds(engine.pid) - cpuBefore) * 1000 };
  } finally {
    conn.destroy();
    await engine.close();
  }
}
