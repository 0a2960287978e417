// The answerer of request lines: a ping at once, fills one at a time across every connection, so two
// requests never race on one file, nor a request and a removal.
import type { Socket } from 'node:net';
import { resolve } from 'node:path';
import type { Logger } from '../shared/cli/log.ts';
import { applyFill } from './apply.ts';
import { readDeclaration, readDeclared } from './declaration.ts';
import type { Drift } from './drift.ts';
import { applyRequest, readLine } from './handle.ts';
import { createJournal } from './journal.ts';
import { createTempSweeper } from './leftovers.ts';
import type { EngineOptions } from './options.ts';
import type { WrittenRecord } from './record.ts';
import { removeUndeclared } from './removal.ts';
import { directorySecrets } from './secrets.ts';

/** What the answerer is built from. */
export type AnswererContext = {
  /** The engine's options. */
  opts: EngineOptions & { log: Logger };
  /** The root with every link resolved. */
  realRoot: string;
  /** Told of each secret file read, with its vault name (the rotation poll). */
  onSecretRead: (file: string, vaultName: string) => void;
  /** The record of what was written, with --declare. */
  record: WrittenRecord | undefined;
  /** What the engine last wrote of each file, watched. */
  drift: Drift;
  /** Told of each valid fill and the connection it came on (where its module's knocks go). */
  onFill: (module: string, connection: Socket) => void;
};

/** The answerer of request lines, and the removals it takes turns with. */
export type Answerer = ((line: string, connection: Socket) => Promise<string>) & {
  /** Resolves once every request and removal queued so far is done. */
  idle(): Promise<void>;
  /** Removes, in its turn, the recorded files the declaration no longer names (nothing without a record). */
  removeUndeclared(why: string): Promise<void>;
};

/** Answers request lines: what needs no turn (a ping, a line out of shape) at once, each fill in its turn. */
export function createAnswerer(ctx: AnswererContext): Answerer {
  const { opts, realRoot, record, drift } = ctx;
  const { log } = opts;
  const root = resolve(opts.root);
  const secrets = directorySecrets(opts.secretsDir, ctx.onSecretRead);
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
  const answer = (line: string, connection: Socket): Promise<string> => {
    const read = readLine(line);
    if (read.kind === 'answered') {
      if (!read.reply.ok) log.warn(`request ${read.reply.id ?? '(no id)'} answered with an error: ${read.reply.error}`);
      return Promise.resolve(JSON.stringify(read.reply));
    }
    ctx.onFill(read.req.module, connection);
    queued++;
    return inTurn(async () => {
      let reply: Awaited<ReturnType<typeof applyRequest>> | undefined;
      let failure: unknown;
      try {
        // Read again on every request: a declaration changed since is seen by the next fill.
        const declaration = await readDeclaration(opts.declareFile, root);
        reply = await applyRequest(read.req, (req) => applyFill(req, { realRoot, declaration, secrets, journal, log, sweep, record: note, drift }));
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
    await removeUndeclared(declared.value, { realRoot, record, journal, log, drift });
  };
  return Object.assign(answer, {
    idle: () => queue.then(() => {}),
    removeUndeclared: (why: string) =>
      inTurn(() => removeNow(why)).catch((err: Error) => log.error(`${why}: removing undeclared files failed: ${err.message}`)),
  });
}
