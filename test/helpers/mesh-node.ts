// One node of a mesh: the reference engine on a real unix socket and the node's client, each either
// in this process or as its bundle, with every path of the node under one dir.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import { connectBus } from '../../src/shared/bus/bus.ts';
import { INBOX_PREFIXES } from '../../src/shared/bus/inbox.ts';
import { memoryLogger } from '../../src/shared/cli/log.ts';
import { createEngineClient, type EngineClient } from '../../src/client/handoff/fill-socket.ts';
import { startNodeClient, type NodeClient } from '../../src/client/node.ts';
import { startEngine, type RunningEngine } from '../../src/engine/start.ts';
import { ROOT, startBundle, type Running, type Runtime } from './bundle.ts';
import { loginArgs, type Login } from './mesh-bus.ts';

/** The settle window of an in-process client unless a test asks for another. */
export const DEFAULT_TEST_SETTLE_MS = 20;

/** Where a node keeps everything, under its dir. */
export type NodePaths = {
  /** The engine's root: every file a test expects lands under it. */
  root: string;
  /** The engine's --secrets dir: a secret is the file `<secrets>/<vault name>`. */
  secrets: string;
  /** The fill socket. */
  socketPath: string;
  /** The engine's journal of restarts and reloads. */
  journalFile: string;
  /** The client's archive cache. */
  cacheDir: string;
};

/** How a node is set up. */
export type MeshNodeOptions = {
  /** The node's name (`n1`); its client uses the inbox prefix `_INBOX_<name>`. */
  name: string;
  /** The node's own dir. */
  dir: string;
  /** The bus its client reaches. */
  url: string;
  /** The only dir its client reads file:// archive refs from. */
  archiveDir: string;
  /** How its client logs in to the bus (default: no login). */
  login?: Login;
};

/** Which bundle a process is started from, and under which runtime. */
export type BundleChoice = {
  /** The runtime (default node). */
  runtime?: Runtime;
  /** The dir holding `<name>.js` (default the repository's dist/). */
  bundleDir?: string;
  /** Variables the process gets besides a clean environment (`JOURNAL_STREAM` to log as under systemd). */
  env?: Record<string, string>;
};

/** A node of the mesh. */
export type MeshNode = NodePaths & {
  name: string;
  /** What the in-process client said. */
  log: ReturnType<typeof memoryLogger>;
  /** What the in-process engine said. */
  engineLog: ReturnType<typeof memoryLogger>;
  /** Puts a secret where the engine reads it: `<secrets>/<vault name>`. */
  secret(vault: string, value: string): void;
  /** The journal's lines (none before the engine's first restart or reload). */
  journal(): string[];
  /** The text of `<root>/etc/<module>/<module>.conf`, the file of a one-file test module. */
  moduleFile(module: string): string | undefined;
  /** Starts the engine in this process. */
  startEngine(): Promise<void>;
  /** Stops the in-process engine (its socket goes). */
  stopEngine(): Promise<void>;
  /** Starts the client in this process; resolves once its first fills are asked for. */
  startClient(settleMs?: number): Promise<NodeClient>;
  /** Stops the in-process client and closes its connection. */
  stopClient(): Promise<void>;
  /** Resolves when the in-process client has no fill pending or running. */
  idle(): Promise<void>;
  /** The in-process client's own connection to the bus. */
  connection(): NatsConnection;
  /** Starts the engine bundle on this node's paths. */
  startEngineProcess(choice?: BundleChoice): Running;
  /** Starts the client bundle with this node's flags, then `args`. */
  startClientProcess(choice?: BundleChoice & { args?: string[] }): Running;
  /** Stops everything the node runs. */
  stop(): Promise<void>;
};

/** The paths of a node whose dir is `dir`. */
export function nodePaths(dir: string): NodePaths {
  return {
    root: join(dir, 'root'),
    secrets: join(dir, 'secrets'),
    socketPath: join(dir, 'fill.sock'),
    journalFile: join(dir, 'journal.log'),
    cacheDir: join(dir, 'cache'),
  };
}

/** The placement a test module gets: its config dir under the engine's root. */
export function placementUnder(root: string, module: string) {
  return { dir: { config: join(root, 'etc', module) }, port: { http: 8080 } };
}

/** A file's text, or undefined when there is none. */
export function readIfExists(path: string): string | undefined {
  return existsSync(path) ? readFileSync(path, 'utf8') : undefined;
}

/** Makes the node's dirs; nothing runs until a start. */
export function createMeshNode(opts: MeshNodeOptions): MeshNode {
  const paths = nodePaths(opts.dir);
  mkdirSync(paths.root, { recursive: true });
  mkdirSync(paths.secrets, { recursive: true });
  const log = memoryLogger();
  const engineLog = memoryLogger();
  const processes: Running[] = [];
  let engine: RunningEngine | undefined;
  let client: { client: NodeClient; nc: NatsConnection; engine: EngineClient } | undefined;
  const login = loginArgs(opts.login);
  const bundle = (choice: BundleChoice, name: string, args: string[]) => {
    const running = startBundle(choice.runtime ?? 'node', choice.bundleDir ?? join(ROOT, 'dist'), name, args, choice.env);
    processes.push(running);
    return running;
  };

  const node: MeshNode = {
    ...paths,
    name: opts.name,
    log,
    engineLog,
    secret(vault, value) {
      mkdirSync(dirname(join(paths.secrets, vault)), { recursive: true });
      writeFileSync(join(paths.secrets, vault), value);
    },
    journal: () => readIfExists(paths.journalFile)?.split('\n').filter(Boolean) ?? [],
    moduleFile: (module) => readIfExists(join(paths.root, 'etc', module, `${module}.conf`)),
    async startEngine() {
      engine = await startEngine({ socketPath: paths.socketPath, root: paths.root, secretsDir: paths.secrets, journalFile: paths.journalFile, log: engineLog });
    },
    async stopEngine() {
      await engine?.close();
      engine = undefined;
    },
    async startClient(settleMs = DEFAULT_TEST_SETTLE_MS) {
      const engineClient = createEngineClient({ socketPath: paths.socketPath, log, pollMs: 50 });
      const nc = await connectBus({ servers: [opts.url], name: `node-provisioner ${opts.name}`, inboxPrefix: INBOX_PREFIXES.node(opts.name), ...opts.login });
      const started = await startNodeClient({
        nc,
        node: opts.name,
        inboxPrefix: INBOX_PREFIXES.node(opts.name),
        engine: engineClient,
        log,
        cacheDir: paths.cacheDir,
        settleMs,
        archiveDir: opts.archiveDir,
      });
      client = { client: started, nc, engine: engineClient };
      return started;
    },
    async stopClient() {
      const running = client;
      client = undefined;
      await running?.client.stop();
      running?.engine.close();
      await running?.nc.close();
    },
    idle: () => client?.client.idle() ?? Promise.resolve(),
    connection() {
      if (!client) throw new Error(`node ${opts.name} has no client running in this process`);
      return client.nc;
    },
    startEngineProcess: (choice = {}) =>
      bundle(choice, 'engine', ['--socket', paths.socketPath, '--root', paths.root, '--secrets', paths.secrets, '--journal', paths.journalFile]),
    startClientProcess: (choice = {}) =>
      bundle(choice, 'client', [
        '--node',
        opts.name,
        '--nats',
        opts.url,
        '--socket',
        paths.socketPath,
        '--cache',
        paths.cacheDir,
        '--archive-dir',
        opts.archiveDir,
        ...login,
        ...(choice.args ?? []),
      ]),
    async stop() {
      await node.stopClient().catch(() => {});
      await node.stopEngine().catch(() => {});
      for (const running of processes.splice(0)) {
        running.kill();
        await running.exited;
      }
    },
  };
  return node;
}
