// The reference engine wired together: the socket served, requests applied one at a time, knocks given.
import { lstat, realpath, unlink } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import type { Logger } from '../shared/cli/log.ts';
import { createAnswerer } from './answerer.ts';
import { watchDeclaration } from './declaration.ts';
import { createDrift } from './drift.ts';
import { KnockLines } from './knock-lines.ts';
import type { EngineOptions } from './options.ts';
import { defaultStateFile, WrittenRecord } from './record.ts';
import { rotatesByPoll, watchReadSecrets, watchSecretsTree } from './secrets-watch.ts';
import { claimSocketPath, serveLines, touchSocket } from './socket.ts';

/** What startEngine needs: the options, a logger, and for tests how often --declare is polled. */
export type StartOptions = EngineOptions & {
  /** Where the engine says what it does. */
  log: Logger;
  /** How often the declaration file is stat'ed for a change (ms). */
  declarePollMs?: number;
  /** The clock the drift window is counted on (ms; Date.now unless a test says otherwise). */
  now?: () => number;
  /** How often a file whose directory cannot be watched is stat'ed for drift (ms). */
  driftPollMs?: number;
};

/** A running engine. */
export type RunningEngine = {
  /** Stops accepting, finishes the request being applied, drops connections and removes the socket. */
  close(): Promise<void>;
};

/** Starts serving the fill socket; creating it is the first knock. Rejects when the root or the socket path is unusable. */
export async function startEngine(opts: StartOptions): Promise<RunningEngine> {
  const { log, socketPath } = opts;
  const realRoot = await realpath(opts.root).catch((err: NodeJS.ErrnoException) => {
    throw new Error(`--root ${opts.root} is unusable: ${err.code ?? err.message}`, { cause: err });
  });
  let secretChanged = (_file: string) => {};
  const readSecrets = watchReadSecrets((file) => secretChanged(file));
  // Without a declaration every path is declared, so nothing is ever removed and nothing need be recorded.
  const record = opts.declareFile ? await WrittenRecord.load(opts.stateFile ?? defaultStateFile(opts.journalFile), log) : undefined;
  const knockLines = new KnockLines();
  let knock = (_why: string): Promise<void> => Promise.resolve();
  // A knock line to the connections that filled the module; with none open, the socket's touch makes every client send everything.
  const drift = createDrift({
    log,
    now: opts.now,
    pollMs: opts.driftPollMs,
    knock: (module) => {
      if (knockLines.knock(module) === 0) void knock(`${module}: a file changed on disk and no open connection has filled it`);
    },
  });
  const answer = createAnswerer({
    opts,
    realRoot,
    onSecretRead: (file, vaultName) => readSecrets.onRead(file, rotatesByPoll(vaultName)),
    record,
    drift,
    onFill: (module, connection) => knockLines.filled(module, connection),
  });
  // What a declaration changed while the engine was down stopped naming goes before the first fill.
  await answer.removeUndeclared('start');

  await claimSocketPath(socketPath);
  const server = createServer();
  const connections = serveLines(server, answer, (message) => log.warn(message));
  await listen(server, socketPath);
  server.on('error', (err) => log.error(`socket ${socketPath}: ${err.message}`));
  const { ino } = await lstat(socketPath);
  log.info(`engine listening on ${socketPath}, root ${realRoot}`);

  knock = (why: string) =>
    touchSocket(socketPath).then(
      () => log.info(`${why}: knocked on ${socketPath}`),
      (err: Error) => log.error(`knock on ${socketPath} failed: ${err.message}`),
    );
  secretChanged = (file) => void knock(`secret ${file} changed`);
  const declarationChanged = () => void answer.removeUndeclared('declaration changed').then(() => knock(`declaration ${opts.declareFile} changed`));
  const stopDeclaration = opts.declareFile ? watchDeclaration(opts.declareFile, declarationChanged, opts.declarePollMs) : () => {};
  // A secret that arrives may let a refused write through: say so the way a new declaration does.
  const stopSecrets = opts.secretsDir ? watchSecretsTree(opts.secretsDir, () => void knock(`secrets in ${opts.secretsDir} changed`), log) : () => {};
  const stopWatching = () => {
    stopDeclaration();
    stopSecrets();
    readSecrets.stop();
    drift.close();
  };

  return {
    close: async () => {
      stopWatching();
      const closed = new Promise<void>((done) => server.close(() => done()));
      await answer.idle();
      for (const socket of connections) socket.destroy();
      await closed;
      await removeIfOurs(socketPath, ino);
      log.info(`engine stopped, ${socketPath} removed`);
    },
  };
}

function listen(server: Server, path: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(path, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

// Another engine may have taken the path since; its socket is not ours to remove.
async function removeIfOurs(path: string, ino: number): Promise<void> {
  try {
    if ((await lstat(path)).ino === ino) await unlink(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}
