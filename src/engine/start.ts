// The reference engine wired together: the socket served, requests applied one at a time, knocks given.
import { lstat, realpath, unlink } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { resolve } from 'node:path';
import type { Logger } from '../shared/cli/log.ts';
import { applyFill } from './apply.ts';
import { readDeclaration, readDeclared, watchDeclaration } from './declaration.ts';
import { handleLine } from './handle.ts';
import { createJournal } from './journal.ts';
import { createTempSweeper } from './leftovers.ts';
import type { EngineOptions } from './options.ts';
import { defaultStateFile, WrittenRecord } from './record.ts';
import { removeUndeclared } from './removal.ts';
import { directorySecrets } from './secrets.ts';
import { rotatesByPoll, watchReadSecrets, watchSecretsTree } from './secrets-watch.ts';
import { claimSocketPath, serveLines, touchSocket } from './socket.ts';

/** What startEngine needs: the options, a logger, and for tests how often --declare is polled. */
export type StartOptions = EngineOptions & {
  /** Where the engine says what it does. */
  log: Logger;
  /** How often the declaration file is stat'ed for a change (ms). */
  declarePollMs?: number;
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
  const answer = createAnswerer(opts, realRoot, (file, vaultName) => readSecrets.onRead(file, rotatesByPoll(vaultName)), record);
  // What a declaration changed while the engine was down stopped naming goes before the first fill.
  await answer.removeUndeclared('start');

  await claimSocketPath(socketPath);
  const server = createServer();
  const connections = serveLines(server, answer, (message) => log.warn(message));
  await listen(server, socketPath);
  server.on('error', (err) => log.error(`socket ${socketPath}: ${err.message}`));
  const { ino } = await lstat(socketPath);
  log.info(`engine listening on ${socketPath}, root ${realRoot}`);

  const knock = (why: string) =>
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

/** The answerer of request lines, and the removals it takes turns with. */
type Answerer = ((line: string) => Promise<string>) & {
  /** Resolves once every request and removal queued so far is done. */
  idle(): Promise<void>;
  /** Removes, in its turn, the recorded files the declaration no longer names (nothing without a record). */
  removeUndeclared(why: string): Promise<void>;
};

/** Answers request lines one at a time across every connection, so two requests never race on one file, nor a request and a removal. */
function createAnswerer(
  opts: StartOptions,
  realRoot: string,
  onSecretRead: (file: string, vaultName: string) => void,
  record: WrittenRecord | undefined,
): Answerer {
  const { log } = opts;
  const root = resolve(opts.root);
  const secrets = directorySecrets(opts.secretsDir, onSecretRead);
  const journal = createJournal(opts.journalFile, log);
  const sweep = createTempSweeper(log);
  const note = record ? (file: Parameters<WrittenRecord['note']>[0]) => record.note(file) : undefined;
  let queue: Promise<unknown> = Promise.resolve();
  const inTurn = <T>(work: () => Promise<T>): Promise<T> => {
    const done = queue.then(work);
    queue = done.catch(() => {});
    return done;
  };
  // Requests asked and not yet applied: one that finds others behind it leaves the record's save to the last of them.
  let queued = 0;
  const answer = (line: string): Promise<string> => {
    queued++;
    return inTurn(async () => {
      let reply: Awaited<ReturnType<typeof handleLine>> | undefined;
      let failure: unknown;
      try {
        // Read again on every request: a declaration changed since is seen by the next fill.
        const declaration = await readDeclaration(opts.declareFile, root);
        reply = await handleLine(line, (req) => applyFill(req, { realRoot, declaration, secrets, journal, log, sweep, record: note }));
      } catch (err) {
        failure = err;
      }
      queued--;
      // The reply waits for its files to be in the saved record; the last request of a burst saves it, in its turn.
      const saved = record?.saved(queued === 0);
      if (queued === 0) await saved;
      return { reply, failure, saved };
    }).then(async ({ reply, failure, saved }) => {
      await saved;
      if (reply === undefined) throw failure;
      if (!reply.ok) log.warn(`request ${reply.id ?? '(no id)'} answered with an error: ${reply.error}`);
      return JSON.stringify(reply);
    });
  };
  const removeNow = async (why: string): Promise<void> => {
    if (!record || !opts.declareFile) return;
    const declared = await readDeclared(opts.declareFile, root);
    // A declaration that cannot be read says nothing about what to remove: a half-written file must not empty the node.
    if (!declared.ok) return log.warn(`${why}: ${declared.reason}; no file removed`);
    await removeUndeclared(declared.value, { realRoot, record, journal, log });
  };
  return Object.assign(answer, {
    idle: () => queue.then(() => {}),
    removeUndeclared: (why: string) =>
      inTurn(() => removeNow(why)).catch((err: Error) => log.error(`${why}: removing undeclared files failed: ${err.message}`)),
  });
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
