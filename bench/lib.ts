// What every benchmark of bench/ shares: a real nats-server and seat, a fake engine on a unix
// socket, the client bundle as a process, percentiles and a polling wait. Benchmarks print; they
// assert nothing (tests do).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kvm, type KV } from '@nats-io/kv';
import { jetstream } from '@nats-io/jetstream';
import { Objm, type ObjectStore } from '@nats-io/obj';
import type { NatsConnection } from '@nats-io/transport-node';
import { connectBus, ensureKv } from '../src/shared/bus/bus.ts';
import { APPLIED, ASSIGNMENTS, CONFIG, DEFAULT_ARCHIVES, MODULES } from '../src/shared/contract/buckets.ts';
import { publishModule } from '../test/helpers/archive.ts';
import { startNats } from '../test/helpers/nats.ts';

/** The project's root directory. */
export const ROOT = new URL('../', import.meta.url).pathname;

/** Milliseconds, high resolution. */
export const now = (): number => Number(process.hrtime.bigint()) / 1e6;

/** Reads `--name N` from argv, else `fallback`. */
export function numberArg(name: string, fallback: number): number {
  const args = process.argv.slice(2);
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : fallback;
}

/** Reads `--name VALUE` from argv, else `fallback`. */
export function stringArg(name: string, fallback: string): string {
  const args = process.argv.slice(2);
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1]! : fallback;
}

/** The request the fake engine hands to a benchmark. */
export type SeenRequest = { module: string; files: { path: string; content: string | unknown[] }[] };

/** A fill socket that answers every file `written` and hands each request to `onFill`; a ping (DESIGN §14) is answered `ok`. */
export function fakeEngine(path: string, onFill: (req: SeenRequest) => void): Promise<Server> {
  const server = createServer((sock) => {
    let buf = '';
    sock.setEncoding('utf8').on('data', (d: string) => {
      buf += d;
      for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
        const req = JSON.parse(buf.slice(0, nl)) as SeenRequest & { id: number; op: string };
        buf = buf.slice(nl + 1);
        if (req.op === 'ping') {
          sock.write(JSON.stringify({ id: req.id, ok: true }) + '\n');
          continue;
        }
        onFill(req);
        sock.write(JSON.stringify({ id: req.id, ok: true, files: req.files.map((f) => ({ path: f.path, action: 'written' })) }) + '\n');
      }
    });
  });
  return new Promise((resolve) => server.listen(path, () => resolve(server)));
}

/** The value at percentile `p` of sorted numbers. */
export function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** One line of a latency table: p50 and p99 in ms. */
export function latencyRow(name: string, xs: number[]): string {
  const sorted = [...xs].sort((a, b) => a - b);
  return `${name.padEnd(40)} p50 ${percentile(sorted, 50).toFixed(2).padStart(7)} ms   p99 ${percentile(sorted, 99).toFixed(2).padStart(7)} ms`;
}

/** Polls until `fn` holds; throws naming `what` after `ms`. */
export async function waitUntil(what: string, fn: () => boolean | Promise<boolean>, ms: number): Promise<void> {
  const until = Date.now() + ms;
  while (!(await fn())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** The peak resident memory of a process, in MiB. */
export function peakRssMiB(pid: number): number {
  return Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
}

/** The resident memory of a process now, in MiB. */
export function rssMiB(pid: number): number {
  return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
}

/** How many file descriptors a process holds open now. */
export function openFds(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}

/** CPU seconds (user + system) a process has used so far. */
export function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** CPU seconds of a process's threads other than its main one (V8's compiler and collector helpers, libuv's pool). */
export function helperCpuSeconds(pid: number): number {
  let s = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    if (Number(tid) === pid) continue;
    try {
      const fields = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8').split(') ')[1]!.split(' ');
      s += (Number(fields[11]) + Number(fields[12])) / 100;
    } catch {
      // A thread that ended between the listing and the read: its time is the process's still.
    }
  }
  return s;
}

/** A running bench mesh: nats-server, the seat bundle, the input buckets and the archive store. */
export type BenchMesh = {
  url: string;
  /** nats-server's process id. */
  natsPid: number;
  /** The seat's process id. */
  seatPid: number;
  nc: NatsConnection;
  dir: string;
  kvm: Kvm;
  kv: { modules: KV; assignments: KV; config: KV };
  store: ObjectStore;
  /** Starts the client bundle for `node` with `--settle 0` on `socket`; its stderr is dropped unless `stderr` says `pipe`. */
  startClient(node: string, socket: string, stderr?: 'pipe'): ChildProcess;
  close(): Promise<void>;
};

/** How a bench mesh is started. */
export type BenchMeshOptions = {
  /** Extra nats-server configuration text (a monitoring port, say). */
  natsConfig?: string;
};

/** Starts nats-server and the seat, and waits for the seat's buckets. */
export async function startBenchMesh(opts: BenchMeshOptions = {}): Promise<BenchMesh> {
  const nats = await startNats(opts.natsConfig);
  const dir = mkdtempSync(join(tmpdir(), 'mesh-bench-'));
  const children: ChildProcess[] = [];
  // A bench that dies (its output piped to `head`, say) takes its processes with it, not leaving them to the machine.
  process.once('exit', () => {
    for (const c of children) c.kill('SIGKILL');
    void nats.kill();
    rmSync(dir, { recursive: true, force: true });
  });
  const nc = await connectBus({ servers: [nats.url], name: 'bench' });
  children.push(spawn(process.execPath, [join(ROOT, 'dist/server.js'), '--nats', nats.url], { stdio: ['ignore', 'ignore', 'ignore'] }));
  const kvm = new Kvm(jetstream(nc));
  const kv = { modules: await ensureKv(nc, MODULES, 1), assignments: await ensureKv(nc, ASSIGNMENTS, 1), config: await ensureKv(nc, CONFIG, 1) };
  let store: ObjectStore | undefined;
  await waitUntil(
    'the seat',
    async () => {
      try {
        store = await new Objm(jetstream(nc)).open('mesh-catalog_archives');
        await store.status();
        await kvm.open(APPLIED).then((b) => b.status());
        return true;
      } catch {
        return false;
      }
    },
    20_000,
  );
  return {
    url: nats.url,
    natsPid: nats.pid()!,
    seatPid: children[0]!.pid!,
    nc,
    dir,
    kvm,
    kv,
    store: store!,
    startClient(node, socket, stderr) {
      // MESH_BENCH_PROF=DIR writes a CPU profile of each client into DIR (a profile, not a guess).
      const prof = profileFlags();
      // MESH_BENCH_CLIENT=FILE runs another build of the client (an A/B comparison in one run of the machine).
      const bundle = process.env['MESH_BENCH_CLIENT'] ?? join(ROOT, 'dist/client.js');
      // MESH_BENCH_NODE_FLAGS='--flag …' runs the client with node flags (a memory setting, say).
      const flags = (process.env['MESH_BENCH_NODE_FLAGS'] ?? '').split(' ').filter((f) => f !== '');
      const child = spawn(
        process.execPath,
        [...flags, ...prof, bundle, '--node', node, '--nats', nats.url, '--socket', socket, '--cache', join(dir, `cache-${node}`), '--settle', '0'],
        {
          stdio: ['ignore', 'ignore', stderr ?? 'ignore'],
        },
      );
      children.push(child);
      return child;
    },
    async close() {
      for (const c of children) c.kill('SIGKILL');
      await nc.close();
      await nats.cleanup();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A module a benchmark publishes: one file per template at `<dir>/<template>`, its config values and placement. */
export type BenchModule = {
  /** Template text by file name. */
  templates: Record<string, string>;
  /** The dir its files are written to (may hold a placeholder, `${dir:config}`). */
  dir: string;
  /** Its config values by key (under `<node>.<module>.`). */
  config: Record<string, string>;
  /** The assignment's placement. */
  placement: Record<string, unknown>;
};

/** Publishes a module as the catalogue, mesh-config and the controller would: archive, composition, config, assignment. */
export async function publishBenchModule(mesh: Pick<BenchMesh, 'kv' | 'store'>, module: string, node: string, spec: BenchModule): Promise<void> {
  const files = Object.keys(spec.templates).map((name) => ({ path: `${spec.dir}/${name}`, template: name, change: 'restart' }));
  await publishModule(mesh.kv.modules, { store: mesh.store, bucket: DEFAULT_ARCHIVES }, module, { templates: spec.templates, provisioning: { files } });
  for (const [key, value] of Object.entries(spec.config)) await mesh.kv.config.put(`${node}.${module}.${key}`, value);
  await mesh.kv.assignments.put(`${node}.${module}`, JSON.stringify({ node, module, placement: spec.placement }));
}

/** Publishes `module` for `node` as bench/latency.ts's rows use it: three files `<root>/<module>/{a,b,c}.conf`, each naming a port and one config value. */
export function publishThreeFiles(mesh: Pick<BenchMesh, 'kv' | 'store'>, module: string, node: string, root: string): Promise<void> {
  const names = ['a', 'b', 'c'];
  return publishBenchModule(mesh, module, node, {
    templates: Object.fromEntries(names.map((t) => [`${t}.conf`, `# ${module} ${t}\nport \${port:http}\nvalue \${config:${t}}\n`])),
    dir: join(root, module),
    config: Object.fromEntries(names.map((t) => [t, `${t}0`])),
    placement: { port: { http: 8080 } },
  });
}

/**
 * The node flags that profile a bench's child when MESH_BENCH_PROF=DIR is set: a CPU profile written
 * into DIR, sampled every MESH_BENCH_PROF_INTERVAL µs (node's default, 1,000, when unset).
 */
export function profileFlags(): string[] {
  const dir = process.env['MESH_BENCH_PROF'];
  if (!dir) return [];
  const interval = process.env['MESH_BENCH_PROF_INTERVAL'];
  return ['--cpu-prof', '--cpu-prof-dir', dir, ...(interval ? [`--cpu-prof-interval=${interval}`] : [])];
}
