// A whole mesh for end-to-end tests: nats-server, the seat bundle, the reference engine on a real
// unix socket, and a node client — with the catalogue's and controller's writes done by the test.
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { packTar } from 'modern-tar';
import { Kvm, type KV } from '@nats-io/kv';
import { jetstream } from '@nats-io/jetstream';
import { Objm, type ObjectStore } from '@nats-io/obj';
import type { NatsConnection } from '@nats-io/transport-node';
import { connectBus } from '../../src/shared/bus.ts';
import { APPLIED, ASSIGNMENTS, CONFIG, MODULES, NEEDS, PLANS } from '../../src/shared/buckets.ts';
import { memoryLogger } from '../../src/shared/log.ts';
import type { Report } from '../../src/shared/schemas.ts';
import { createEngineClient, type EngineClient } from '../../src/client/engine.ts';
import { startNodeClient, type NodeClient } from '../../src/client/node.ts';
import { startEngine, type RunningEngine } from '../../src/engine/start.ts';
import { startNats, type NatsServer } from './nats.ts';
import { waitFor } from './wait.ts';

const ROOT = new URL('../../', import.meta.url).pathname;

/** A module as the catalogue publishes it: templates by name and the composition's provisioning. */
export type ModuleSpec = {
  build?: string;
  templates: Record<string, string>;
  provisioning: Record<string, unknown>;
  published?: boolean;
  /** Publish this digest instead of the archive's own (a catalogue mistake). */
  digest?: string;
};

/** The running mesh of one test. */
export type Mesh = {
  nats: NatsServer;
  nc: NatsConnection;
  dir: string;
  /** The engine's root: every file a test expects lands under it. */
  root: string;
  secrets: string;
  journalFile: string;
  socketPath: string;
  log: ReturnType<typeof memoryLogger>;
  engineLog: ReturnType<typeof memoryLogger>;
  kv: { assignments: KV; modules: KV; config: KV; plans: KV; applied: KV; needs: KV };
  client?: NodeClient;
  engine?: RunningEngine;
  engineClient?: EngineClient;
  publish(module: string, spec: ModuleSpec): Promise<void>;
  assign(node: string, module: string, placement?: Record<string, Record<string, string | number>>): Promise<void>;
  setConfig(node: string, module: string, key: string, value: string | Uint8Array): Promise<void>;
  /** Puts a secret where the engine reads it: `<secrets>/<vault name>`. */
  secret(vault: string, value: string): void;
  /** Removes an assignment. */
  unassign(node: string, module: string): Promise<void>;
  report(node: string, module: string): Promise<Report | null>;
  waitReport(node: string, module: string, pred: (r: Report) => boolean, ms?: number): Promise<Report>;
  file(path: string): string | undefined;
  journal(): string[];
  startEngine(): Promise<void>;
  stopEngine(): Promise<void>;
  startClient(node?: string, settleMs?: number): Promise<NodeClient>;
  stopClient(): Promise<void>;
  close(): Promise<void>;
};

/** The placement a test module gets: its config dir under the engine's root. */
export function placementUnder(root: string, module: string) {
  return { dir: { config: join(root, 'etc', module) }, port: { http: 8080 } };
}

/** Starts nats-server, the seat bundle, the engine and the input buckets (the client on demand). */
export async function startMesh(opts: { engine?: boolean } = {}): Promise<Mesh> {
  if (!existsSync(join(ROOT, 'dist/server.js'))) throw new Error('dist/server.js missing: run `node build.mjs` first');
  const nats = await startNats();
  const nc = await connectBus({ servers: [nats.url], name: 'test' });
  const dir = mkdtempSync(join(tmpdir(), 'mesh-e2e-'));
  const root = join(dir, 'root');
  const secrets = join(dir, 'secrets');
  mkdirSync(root);
  mkdirSync(secrets);
  const seat: ChildProcess = spawn(process.execPath, [join(ROOT, 'dist/server.js'), '--nats', nats.url], { stdio: ['ignore', 'ignore', 'pipe'] });
  let seatErr = '';
  seat.stderr!.on('data', (d) => (seatErr += d));
  const kvm = new Kvm(jetstream(nc));
  const [assignments, modules, config] = await Promise.all([kvm.create(ASSIGNMENTS), kvm.create(MODULES), kvm.create(CONFIG)]);
  await waitFor('the seat’s buckets and archive store', async () => {
    try {
      await kvm.open(APPLIED).then((b) => b.status());
      await new Objm(jetstream(nc)).open('mesh-catalog_archives').then((o) => o.status());
      return true;
    } catch {
      return false;
    }
  }, 15_000).catch((e) => { throw new Error(`${(e as Error).message}; seat said: ${seatErr}`); });
  const [plans, applied, needs] = await Promise.all([kvm.open(PLANS), kvm.open(APPLIED), kvm.open(NEEDS)]);
  let store: ObjectStore | undefined;
  let clientNc: NatsConnection | undefined;
  const log = memoryLogger();
  const engineLog = memoryLogger();

  const mesh: Mesh = {
    nats, nc, dir, root, secrets, log, engineLog,
    journalFile: join(dir, 'journal.log'),
    socketPath: join(dir, 'fill.sock'),
    kv: { assignments, modules, config, plans, applied, needs },
    async publish(module, spec) {
      const build = spec.build ?? '1';
      const enc = new TextEncoder();
      const entries = Object.entries(spec.templates).map(([name, text]) => {
        const body = enc.encode(text);
        return { header: { name, size: body.length, type: 'file' as const }, body };
      });
      const tar = await packTar(entries);
      const name = `${module}-${build}.tar`;
      store ??= await new Objm(jetstream(nc)).open('mesh-catalog_archives');
      await store.putBlob({ name }, tar);
      const digest = spec.digest ?? 'sha256:' + createHash('sha256').update(tar).digest('hex');
      await modules.put(module, JSON.stringify({
        module, build, published: spec.published ?? true,
        archive: { ref: `obj://mesh-catalog_archives/${name}`, digest },
        provisioning: spec.provisioning,
      }));
    },
    async assign(node, module, placement) {
      await assignments.put(`${node}.${module}`, JSON.stringify({ node, module, placement: placement ?? placementUnder(root, module) }));
    },
    secret(vault, value) {
      mkdirSync(dirname(join(secrets, vault)), { recursive: true });
      writeFileSync(join(secrets, vault), value);
    },
    async unassign(node, module) {
      await assignments.delete(`${node}.${module}`);
    },
    async setConfig(node, module, key, value) {
      await config.put(`${node}.${module}.${key}`, value);
    },
    async report(node, module) {
      const e = await applied.get(`${node}.${module}`);
      return e && e.operation === 'PUT' ? (e.json() as Report) : null;
    },
    async waitReport(node, module, pred, ms = 15_000) {
      let last: Report | null = null;
      try {
        return await waitFor(`report ${node}.${module}`, async () => {
          last = await mesh.report(node, module);
          return last && pred(last) ? last : null;
        }, ms);
      } catch (err) {
        throw new Error(`${(err as Error).message}; last report: ${JSON.stringify(last)}; client log: ${log.lines.slice(-8).join(' | ')}`);
      }
    },
    file(path) {
      return existsSync(path) ? readFileSync(path, 'utf8') : undefined;
    },
    journal() {
      return existsSync(mesh.journalFile) ? readFileSync(mesh.journalFile, 'utf8').split('\n').filter(Boolean) : [];
    },
    async startEngine() {
      mesh.engine = await startEngine({ socketPath: mesh.socketPath, root, secretsDir: secrets, journalFile: mesh.journalFile, log: engineLog });
    },
    async stopEngine() {
      await mesh.engine?.close();
      mesh.engine = undefined;
    },
    async startClient(node = 'n1', settleMs = 20) {
      mesh.engineClient = createEngineClient({ socketPath: mesh.socketPath, log, pollMs: 50 });
      clientNc = await connectBus({ servers: [nats.url], name: `node-provisioner ${node}`, inboxPrefix: `_INBOX_${node}` });
      mesh.client = await startNodeClient({ nc: clientNc, node, engine: mesh.engineClient, log, cacheDir: join(dir, 'cache'), settleMs });
      return mesh.client;
    },
    async stopClient() {
      await mesh.client?.stop();
      mesh.engineClient?.close();
      await clientNc?.close();
      mesh.client = undefined;
      clientNc = undefined;
    },
    async close() {
      await mesh.stopClient().catch(() => {});
      await mesh.stopEngine().catch(() => {});
      seat.kill('SIGTERM');
      await nc.close().catch(() => {});
      await nats.cleanup();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  if (opts.engine !== false) await mesh.startEngine();
  return mesh;
}

/** Runs `fn` on a fresh mesh and closes it, whatever happens. */
export async function withMesh(fn: (m: Mesh) => Promise<void>): Promise<void> {
  const mesh = await startMesh();
  try {
    await fn(mesh);
  } finally {
    await mesh.close();
  }
}
