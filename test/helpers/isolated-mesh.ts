// A mesh on its generated bus configuration (DESIGN §11, issue 12): nats-server runs what
// `bus-config` renders, and every program logs in with the nkey seed of its own user — the seat as
// `provisioner`, each node's client as `provisioner.<node>` with its own inbox prefix. `admin` writes
// the inputs, as the controller, the catalogue and mesh-config would, and nothing else.
import { spawn } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { connectBus } from '../../src/shared/bus/bus.ts';
import { DEFAULT_ARCHIVES } from '../../src/shared/contract/buckets.ts';
import { memoryLogger } from '../../src/shared/cli/log.ts';
import type { Report } from '../../src/shared/contract/report.ts';
import { INBOX_PREFIXES, renderBusConfig } from '../../src/server/commands/bus-config/config.ts';
import { inboxPrefixesOf, USERS, usersOf } from '../../src/server/commands/bus-config/users.ts';
import { loadOrCreateLogins, seedFile } from '../../src/server/commands/bus-config/credentials.ts';
import { DEFAULT_JS_DOMAIN } from '../../src/server/commands/bus-config/leaf-hub.ts';
import { loadOrCreateLeafLogins } from '../../src/server/commands/bus-config/leaf-secrets.ts';
import { startSeat } from '../../src/server/seat/seat.ts';
import { createEngineClient } from '../../src/client/handoff/fill-socket.ts';
import { startNodeClient, type NodeClient } from '../../src/client/node.ts';
import { publishModule, type ModuleSpec, type Published } from './archive.ts';
import { ensureBuilt, ROOT } from './bundle.ts';
import { createInputBuckets, waitForSeat, type InputBuckets, type RunningSeat, type SeatBuckets } from './mesh-bus.ts';
import { createMeshNode, DEFAULT_TEST_SETTLE_MS, nodePaths, placementUnder, type MeshNode } from './mesh-node.ts';
import { startNats, type NatsServer } from './nats.ts';
import { collectStderr, spawnQuiet, stopProcess } from './spawn.ts';
import { waitFor } from './wait.ts';
import { tempDir } from './temp.ts';

/** What the mesh is made of. */
export type IsolatedMeshOptions = {
  nodes: string[];
  /** Providers whose `<provider>_bound` buckets the nodes read (default none). */
  providers?: string[];
  /** Where publish puts archives: the object store (obj:// refs, default) or the archive dir (file:// refs). */
  archives?: 'object' | 'file';
  /** Where the seat runs (default in this process, on a connection of its own as `provisioner`); a process runs `dist/server.js --nkey`. */
  seat?: 'in-process' | 'process';
  /** Flags the seat's bundle is given besides its bus and login (seat `process` only). */
  seatArgs?: string[];
  /** Turns the generated configuration into the one run: only to check that a matrix row flips when a grant is wider. */
  edit?: (config: string) => string;
  /** The nodes `init` makes each stream's bound on consumers for (default: the number of `nodes`). */
  initNodes?: number;
  /** Where the bus takes sites' leaf servers (bus-config --leaf-listen, --leaf-advertise; the default domain): absent, none. */
  leaf?: { listen: string; advertise?: string };
};

/** A node of the mesh: its engine and paths as any mesh node, its client in this process, logged in as `provisioner.<node>`. */
export type IsolatedNode = Pick<MeshNode, 'name' | 'root' | 'log' | 'engineLog' | 'moduleFile' | 'startEngine' | 'stopEngine'> & {
  /** Starts the client (on the bus's own address, or `url`: a relay to it); resolves once its first fills are asked for. */
  startClient(opts?: { url?: string }): Promise<NodeClient>;
  /** Resolves when the client has no fill pending or running. */
  idle(): Promise<void>;
};

/** The running mesh. */
export type IsolatedMesh = {
  nats: NatsServer;
  /** The test's connection, as `admin`: the inputs' writer, and the operator's tools. */
  admin: NatsConnection;
  /** The mesh's temp dir (the seeds are in `<dir>/credentials`). */
  dir: string;
  /** Where file:// archives go; every client reads file:// refs from here only. */
  archiveDir: string;
  kv: InputBuckets & SeatBuckets;
  /** What the seat has said (every level, debug included). */
  seatSaid(): string;
  /**
   * The permission violations nats-server has logged: every publish or subscribe refused to a user
   * with permissions (the seat, the vault, a runner). A node's client is refused by its account's
   * imports instead, which the server does not log.
   */
  violations(): string[];
  /** Everything nats-server has said on stderr, over its whole life (its reloads included). */
  serverSaid(): string;
  /** The seed file of `user`. */
  nkey(user: string): string;
  /** A new connection as `user` (named `name`, default the user; to `url`, default the bus's), with the inbox prefix its grants allow; closed with the mesh. */
  connect(user: string, name?: string, url?: string): Promise<NatsConnection>;
  /** The node called `name`, set up on first use. */
  node(name: string): IsolatedNode;
  /** Publishes a module as the catalogue does: archive and composition. */
  publish(module: string, spec: ModuleSpec): Promise<Published>;
  /** Assigns a module to a node, its config dir under that node's root. */
  assign(node: string, module: string): Promise<void>;
  /** Waits for a report that `pred` accepts; the error gives the last report and the node's log. */
  waitReport(node: string, module: string, pred: (r: Report) => boolean, ms?: number): Promise<Report>;
  /** Runs `node dist/server.js <args…>` against this mesh, logged in as `user`; resolves with its exit code and output. */
  serverCommand(user: string, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }>;
  close(): Promise<void>;
};

/** The bus of the mesh: nats-server on the generated configuration and a way to log in as each user. */
type GeneratedBus = Pick<IsolatedMesh, 'nats' | 'dir' | 'violations' | 'serverSaid' | 'nkey' | 'connect'>;

/** Undoes what was started, newest first. */
type Undo = (step: () => unknown) => void;

/** Generates the seeds and the configuration of the mesh and starts nats-server on it. */
async function startGeneratedBus(opts: IsolatedMeshOptions, undo: Undo): Promise<GeneratedBus> {
  const dir = tempDir('mesh-isolated-');
  undo(() => rmSync(dir, { recursive: true, force: true }));
  const providers = opts.providers ?? [];
  const credentials = join(dir, 'credentials');
  const logins = loadOrCreateLogins(credentials, usersOf({ nodes: opts.nodes, providers }));
  if (!logins.ok) throw new Error(logins.reason);
  const publicKeys = new Map(logins.value.logins.map((l) => [l.user, l.publicKey]));
  const leafLogins = opts.leaf ? loadOrCreateLeafLogins(credentials, opts.nodes) : undefined;
  if (leafLogins && !leafLogins.ok) throw new Error(leafLogins.reason);
  const leaf =
    opts.leaf && leafLogins?.ok ? { ...opts.leaf, domain: DEFAULT_JS_DOMAIN, hashes: new Map(leafLogins.value.map((l) => [l.node, l.hash])) } : undefined;
  let said = '';
  const nats = await startNats('', {
    dir: join(dir, 'nats'),
    // Kept across restarts: every permission violation of the mesh's life.
    spawn: (name, command, args) => {
      const child = spawnQuiet(name, command, args);
      child.stderr?.on('data', (d: Buffer) => (said += String(d)));
      return child;
    },
    whole: (where) =>
      (opts.edit ?? ((c) => c))(renderBusConfig({ nodes: opts.nodes, providers, archives: DEFAULT_ARCHIVES, ...where, publicKeys, ...(leaf ? { leaf } : {}) })),
  });
  undo(() => nats.cleanup());
  const prefixes = inboxPrefixesOf({ nodes: opts.nodes, providers });
  const nkey = (user: string) => seedFile(credentials, user);
  return {
    nats,
    dir,
    nkey,
    violations: () => said.split('\n').filter((l) => /Violation/.test(l)),
    serverSaid: () => said,
    async connect(user, name = user, url = nats.url) {
      const prefix = prefixes.get(user);
      const nc = await connectBus({ servers: [url], name, nkey: nkey(user), ...(prefix ? { inboxPrefix: prefix } : {}) });
      undo(() => nc.close());
      return nc;
    },
  };
}

/** The generated bus alone (nothing created on it, no seat), with admin's connection: what an operator has before `init`. */
export async function startMeshBus(
  opts: Pick<IsolatedMeshOptions, 'nodes' | 'providers'>,
): Promise<GeneratedBus & { admin: NatsConnection; close(): Promise<void> }> {
  const steps: (() => unknown)[] = [];
  const close = async () => {
    for (const step of steps.splice(0).reverse())
      await Promise.resolve()
        .then(step)
        .catch(() => {});
  };
  try {
    const bus = await startGeneratedBus(opts, (step) => void steps.push(step));
    return { ...bus, admin: await bus.connect(USERS.admin), close };
  } catch (err) {
    await close();
    throw err;
  }
}

/** Starts nats-server on the generated configuration, the seat as `provisioner` and the input buckets. */
export async function startIsolatedMesh(opts: IsolatedMeshOptions): Promise<IsolatedMesh> {
  const steps: (() => unknown)[] = [];
  const close = async () => {
    for (const step of steps.splice(0).reverse())
      await Promise.resolve()
        .then(step)
        .catch(() => {});
  };
  const undo: Undo = (step) => void steps.push(step);
  try {
    const bus = await startGeneratedBus(opts, undo);
    const admin = await bus.connect(USERS.admin);
    // As an operator does: every bucket made by `init`, run with the admin login; no other login may.
    const init = await runServer([
      'init',
      '--nats',
      bus.nats.url,
      '--nkey',
      bus.nkey(USERS.admin),
      '--nodes',
      String(opts.initNodes ?? opts.nodes.length),
      ...(opts.providers ?? []).flatMap((p) => ['--provider', p]),
    ]);
    if (init.code !== 0) throw new Error(`init exited ${init.code}: ${init.stdout}${init.stderr}`);
    const seat = await (opts.seat === 'process' ? seatProcess(bus, opts.seatArgs) : seatInProcess(bus));
    undo(() => seat.stop());
    const seatSaid = () => seat.said();
    const inputs = await createInputBuckets(admin);
    const kv = { ...inputs, ...(await waitForSeat(admin, seat)) };
    const archiveDir = join(bus.dir, 'archives');
    mkdirSync(archiveDir);
    const nodes = new Map<string, IsolatedNode>();
    const node = (name: string) =>
      nodes.get(name) ?? nodes.set(name, isolatedNode({ name, dir: join(bus.dir, name), url: bus.nats.url, archiveDir }, bus.connect, undo)).get(name)!;
    const target = opts.archives === 'file' ? { dir: archiveDir } : { store: kv.archives, bucket: DEFAULT_ARCHIVES };
    return {
      ...bus,
      admin,
      archiveDir,
      kv,
      seatSaid,
      node,
      close,
      publish: (module, spec) => publishModule(kv.modules, target, module, spec),
      async assign(name, module) {
        const placement = placementUnder(nodePaths(join(bus.dir, name)).root, module);
        await kv.assignments.put(`${name}.${module}`, JSON.stringify({ node: name, module, placement }));
      },
      waitReport: (name, module, pred, ms) => waitReport(kv.applied, `${name}.${module}`, pred, () => nodes.get(name)?.log.lines ?? [], ms),
      serverCommand: (user, args) => runServer([...args, '--nats', bus.nats.url, '--nkey', bus.nkey(user)]),
    };
  } catch (err) {
    await close();
    throw err;
  }
}

/** Runs `fn` on a fresh isolated mesh, closed whatever happens. */
export async function withIsolatedMesh(opts: IsolatedMeshOptions, fn: (m: IsolatedMesh) => Promise<void>): Promise<void> {
  const m = await startIsolatedMesh(opts);
  try {
    await fn(m);
  } finally {
    await m.close();
  }
}

/** The seat in this process, on a connection of its own as `provisioner`. */
async function seatInProcess(bus: GeneratedBus): Promise<RunningSeat> {
  const log = memoryLogger();
  const seat = await startSeat({
    nc: await bus.connect(USERS.seat, 'mesh-provisioner'),
    log,
    archives: DEFAULT_ARCHIVES,
    replicas: 1,
    inboxPrefix: INBOX_PREFIXES.seat,
  });
  return { said: () => log.lines.join('\n'), stop: () => seat.stop() };
}

/** The seat's bundle, logged in with the seed of `provisioner`, saying its debug lines too. */
async function seatProcess(bus: GeneratedBus, args: string[] = []): Promise<RunningSeat> {
  ensureBuilt('server');
  const child = spawnQuiet('seat', process.execPath, [
    join(ROOT, 'dist', 'server.js'),
    '--nats',
    bus.nats.url,
    '--nkey',
    bus.nkey(USERS.seat),
    '--debug',
    ...args,
  ]);
  const said = collectStderr(child);
  return { said, stop: () => stopProcess(child) };
}

/** Waits for the report under `key` that `pred` accepts; the error gives the last one and the node's log. */
async function waitReport(applied: KV, key: string, pred: (r: Report) => boolean, said: () => string[], ms = 15_000): Promise<Report> {
  let last: Report | null = null;
  const report = async () => {
    const e = await applied.get(key);
    return e && e.operation === 'PUT' ? (e.json() as Report) : null;
  };
  try {
    return await waitFor(`report ${key}`, async () => ((last = await report()) && pred(last) ? last : null), ms);
  } catch (err) {
    throw new Error(`${(err as Error).message}; last report: ${JSON.stringify(last)}; the client's log: ${said().slice(-12).join(' | ')}`);
  }
}

/** A node whose client runs in this process as `provisioner.<name>`; `onClose` undoes a step with the mesh. */
function isolatedNode(paths: { name: string; dir: string; url: string; archiveDir: string }, connect: IsolatedMesh['connect'], onClose: Undo): IsolatedNode {
  const { name } = paths;
  // The mesh node gives the engine and the paths; its own client start logs in by password only.
  const base = createMeshNode(paths);
  onClose(() => base.stop());
  let client: NodeClient | undefined;
  return {
    name,
    root: base.root,
    log: base.log,
    engineLog: base.engineLog,
    moduleFile: base.moduleFile,
    startEngine: base.startEngine,
    stopEngine: base.stopEngine,
    async startClient(opts = {}) {
      const nc = await connect(USERS.client(name), `node-provisioner ${name}`, opts.url);
      const engine = createEngineClient({ socketPath: base.socketPath, log: base.log, pollMs: 50 });
      const started = await startNodeClient({
        nc,
        node: name,
        inboxPrefix: INBOX_PREFIXES.node(name),
        engine,
        log: base.log,
        cacheDir: base.cacheDir,
        settleMs: DEFAULT_TEST_SETTLE_MS,
        archiveDir: paths.archiveDir,
      });
      // Stopped before its connection closes (the steps are undone newest first).
      onClose(async () => {
        await started.stop();
        engine.close();
      });
      client = started;
      return started;
    },
    idle: () => client?.idle() ?? Promise.resolve(),
  };
}

/** What `$JS.API.INFO` answers a login: `ok` when JetStream reaches its account, else what went wrong. */
export async function jetStreamFor(nc: NatsConnection): Promise<string> {
  try {
    const reply = (await nc.request('$JS.API.INFO', '', { timeout: 2000 })).json<{ error?: { description: string } }>();
    return reply.error ? reply.error.description : 'ok';
  } catch (err) {
    return (err as Error).message;
  }
}

/** Runs the seat's bundle with `args` to its end. */
async function runServer(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  ensureBuilt('server');
  const child = spawn(process.execPath, [join(ROOT, 'dist', 'server.js'), ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  child.stdout.on('data', (d: Buffer) => (stdout += String(d)));
  const stderr = collectStderr(child);
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { code, stdout, stderr: stderr() };
}

/**
 * Module `web` (one file, `level ${config:level}`) assigned to `node` with `level` at `info`, its
 * engine and client started (on `client.url` when given), and its report `applied`: what a test of a
 * module's life starts from.
 */
export async function webAppliedOn(m: IsolatedMesh, node: string, client: { url?: string } = {}): Promise<IsolatedNode> {
  const running = m.node(node);
  await m.publish('web', {
    templates: { 'web.conf': 'level ${config:level}\n' },
    provisioning: { files: [{ path: '${dir:config}/web.conf', template: 'web.conf' }] },
  });
  await m.kv.config.put(`${node}.web.level`, 'info');
  await m.assign(node, 'web');
  await running.startEngine();
  await running.startClient(client);
  await m.waitReport(node, 'web', (r) => r.state === 'applied');
  return running;
}
