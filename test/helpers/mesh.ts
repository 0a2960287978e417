// A whole mesh for end-to-end tests: nats-server, the seat, and nodes (engine on a real unix socket,
// client), with the catalogue's, mesh-config's and the controller's writes done by the test. The
// mesh is also its first node, so a one-node test says `m.root`, `m.startClient()`.
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { KV } from '@nats-io/kv';
import type { ObjectStore } from '@nats-io/obj';
import type { NatsConnection } from '@nats-io/transport-node';
import { connectBus } from '../../src/shared/bus/bus.ts';
import { CONFIG, DEFAULT_ARCHIVES } from '../../src/shared/contract/buckets.ts';
import type { Report } from '../../src/shared/contract/report.ts';
import { publishModule, type ModuleSpec, type Published } from './archive.ts';
import { createInputBuckets, startMeshSeat, waitForSeat, type InputBuckets, type Login, type SeatKind } from './mesh-bus.ts';
import { createMeshNode, nodePaths, placementUnder, readIfExists, type MeshNode } from './mesh-node.ts';
import { startNats, type NatsServer } from './nats.ts';
import { waitFor } from './wait.ts';
import { tempDir } from './temp.ts';

export type { ModuleSpec } from './archive.ts';
export { placementUnder } from './mesh-node.ts';

/** The node a one-node test runs unless it names another. */
export const DEFAULT_NODE = 'n1';

/** What differs between meshes; every field has a default that suits a one-node test. */
export type MeshOptions = {
  /** Extra nats-server config text (the isolation suite's accounts and users). */
  natsConfig?: string;
  /** How the test's connection and the seat log in (default: no login). */
  login?: Login;
  /** Where the seat runs (default: its bundle as a process). */
  seat?: SeatKind;
  /** The first node's name (default n1). */
  node?: string;
  /** How a node's client logs in (default: no login). */
  nodeLogin?: (node: string) => Login | undefined;
  /** Whether the first node's engine starts in this process with the mesh (default true). */
  engine?: boolean;
  /** Where publish puts archives: the object store (obj:// refs, default) or the archive dir (file:// refs). */
  archives?: 'object' | 'file';
};

/** The running mesh of one test, which is also its first node. */
export type Mesh = Omit<MeshNode, 'stop'> &
  Bus & {
    /** The node called `name`, set up on first use (nothing runs until a start). */
    node(name: string): MeshNode;
    /** Publishes a module as the catalogue does: archive and composition. */
    publish(module: string, spec: ModuleSpec): Promise<Published>;
    /** Assigns a module to a node, by default with its config dir under that node's root. */
    assign(node: string, module: string, placement?: Record<string, Record<string, string | number>>): Promise<void>;
    /** Removes an assignment. */
    unassign(node: string, module: string): Promise<void>;
    /** Puts a resolved config value, as mesh-config would. */
    setConfig(node: string, module: string, key: string, value: string | Uint8Array): Promise<void>;
    /** The module's current report, or null. */
    report(node: string, module: string): Promise<Report | null>;
    /** Waits for a report that `pred` accepts; the error gives the last report and the node's client log. */
    waitReport(node: string, module: string, pred: (r: Report) => boolean, ms?: number): Promise<Report>;
    /** A file's text, or undefined when there is none. */
    file(path: string): string | undefined;
    /** Waits until the test's connection reaches JetStream again (after a restart of nats-server). */
    jetStreamBack(): Promise<void>;
    /** Stops every node, the seat and nats-server, and removes the dir. */
    close(): Promise<void>;
  };

/** What runs beside the nodes: nats-server, the test's connection, the seat and the buckets. */
type Bus = {
  /** The nats-server of this mesh (stop and restart it to test reconnects). */
  nats: NatsServer;
  /** The test's own connection (the login of the options). */
  nc: NatsConnection;
  /** The mesh's temp dir: a dir per node under it. */
  dir: string;
  /** Where file:// archives go; every node's client reads file:// refs from here only. */
  archiveDir: string;
  /** The input buckets and the seat's buckets a test reads. */
  kv: InputBuckets & { plans: KV; applied: KV; needs: KV };
  /** The archive store the seat made. */
  archives: ObjectStore;
};

/** Undoes what was started, newest first, each step whatever the one before did. */
type Closers = { add(close: () => unknown): void; run(): Promise<void> };

function closers(): Closers {
  const list: (() => unknown)[] = [];
  return {
    add: (close) => void list.push(close),
    async run() {
      for (const close of list.splice(0).reverse()) {
        try {
          await close();
        } catch {
          // Already gone with what was closed before it.
        }
      }
    },
  };
}

/** Starts nats-server, the seat and the input buckets, and the first node's engine (its client on demand). */
export async function startMesh(opts: MeshOptions = {}): Promise<Mesh> {
  const undo = closers();
  try {
    const bus = await startBus(opts, undo);
    const mesh = assembleMesh(bus, opts, undo);
    if (opts.engine !== false) await mesh.startEngine();
    return mesh;
  } catch (err) {
    await undo.run();
    throw err;
  }
}

async function startBus(opts: MeshOptions, undo: Closers): Promise<Bus> {
  const dir = tempDir('mesh-e2e-');
  undo.add(() => rmSync(dir, { recursive: true, force: true }));
  const archiveDir = join(dir, 'archives');
  mkdirSync(archiveDir);
  const nats = await startNats(opts.natsConfig);
  undo.add(() => nats.cleanup());
  const nc = await connectBus({ servers: [nats.url], name: 'test', ...opts.login });
  undo.add(() => nc.close());
  const seat = await startMeshSeat(opts.seat ?? 'process', { url: nats.url, nc, ...withLogin(opts.login) });
  undo.add(() => seat.stop());
  const inputs = await createInputBuckets(nc);
  const { plans, applied, needs, archives } = await waitForSeat(nc, seat);
  return { nats, nc, dir, archiveDir, kv: { ...inputs, plans, applied, needs }, archives };
}

function assembleMesh(bus: Bus, opts: MeshOptions, undo: Closers): Mesh {
  const { nats, nc, dir, archiveDir, kv } = bus;
  const nodes = new Map<string, MeshNode>();
  undo.add(() => Promise.all([...nodes.values()].map((n) => n.stop())));
  const nodeDir = (name: string) => join(dir, name);
  const node = (name: string) =>
    nodes.get(name) ??
    nodes
      .set(
        name,
        createMeshNode({
          name,
          dir: nodeDir(name),
          url: nats.url,
          archiveDir,
          ...withLogin(opts.nodeLogin?.(name)),
        }),
      )
      .get(name)!;
  const { stop: _stopFirst, ...first } = node(opts.node ?? DEFAULT_NODE);
  const target = opts.archives === 'file' ? { dir: archiveDir } : { store: bus.archives, bucket: DEFAULT_ARCHIVES };
  const report = async (name: string, module: string) => {
    const e = await kv.applied.get(`${name}.${module}`);
    return e && e.operation === 'PUT' ? (e.json() as Report) : null;
  };
  return {
    ...first,
    ...bus,
    node,
    report,
    close: () => undo.run(),
    publish: (module, spec) => publishModule(kv.modules, target, module, spec),
    async assign(name, module, placement) {
      await kv.assignments.put(
        `${name}.${module}`,
        JSON.stringify({ node: name, module, placement: placement ?? placementUnder(nodePaths(nodeDir(name)).root, module) }),
      );
    },
    async unassign(name, module) {
      await kv.assignments.delete(`${name}.${module}`);
    },
    async setConfig(name, module, key, value) {
      await kv.config.put(`${name}.${module}.${key}`, value);
    },
    async waitReport(name, module, pred, ms = 15_000) {
      let last: Report | null = null;
      try {
        return await waitFor(
          `report ${name}.${module}`,
          async () => {
            last = await report(name, module);
            return last && pred(last) ? last : null;
          },
          ms,
        );
      } catch (err) {
        const said = nodes.get(name)?.log.lines.slice(-12).join(' | ') ?? '(no such node here)';
        throw new Error(`${(err as Error).message}; last report: ${JSON.stringify(last)}; ${name}'s client log: ${said}`);
      }
    },
    file: readIfExists,
    jetStreamBack: () => jetStreamBack(nc),
  };
}

/** Waits until `nc` reaches JetStream again: a stream info answered. */
async function jetStreamBack(nc: NatsConnection): Promise<void> {
  await waitFor(
    'JetStream back for the test’s connection',
    async () => {
      try {
        await nc.request(`$JS.API.STREAM.INFO.KV_${CONFIG}`, undefined, { timeout: 500 });
        return true;
      } catch {
        return false;
      }
    },
    20_000,
  );
}

/** `{ login }` when there is one, else nothing. */
function withLogin(login: Login | undefined): { login?: Login } {
  return login ? { login } : {};
}

/** Runs `fn` on a fresh mesh and closes it, whatever happens. */
export async function withMesh(fn: (m: Mesh) => Promise<void>, opts: MeshOptions = {}): Promise<void> {
  const mesh = await startMesh(opts);
  try {
    await fn(mesh);
  } finally {
    await mesh.close();
  }
}
