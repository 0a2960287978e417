// --once (issue 14): the node's client run until every module is applied, failed, or still waits
// when the time is up — for first boot, image builds and a module's CI. Needs, items and reports
// are written as always; the exit code and one line per module not applied say how it went.
import { nodeClientUser, whichLogin } from '../../../shared/bus/login.ts';
import type { BusOptions } from '../../../shared/bus/bus.ts';
import { connectWhenReachable } from '../../../shared/bus/first-connect.ts';
import type { Logger } from '../../../shared/cli/log.ts';
import type { RunOptions } from '../../options.ts';
import { createEngineClient } from '../../handoff/fill-socket.ts';
import { startClient, type ClientOptions } from '../../node.ts';
import { busSinks } from '../../sinks.ts';
import { allSettled, describeStanding, engineTellingBook, ReportBook, type Standing } from './book.ts';

/** How a one-shot run ended: every module settled, the time ran out, or a signal came. */
export type OneShotEnd = 'settled' | 'timeout' | 'signalled';

/** What --once needs: the run flags (its timeout the wait for every module to settle, start and bus included), and where it writes. */
export type OnceOptions = Pick<RunOptions, 'node' | 'bus' | 'socket' | 'cache' | 'settleMs' | 'engineTimeoutMs' | 'archiveDir' | 'timeoutMs'> & {
  log: Logger;
  /** Resolves on SIGTERM or SIGINT. */
  signalled: Promise<void>;
  /** A line for stdout. */
  out: (line: string) => void;
  /** A line for stderr. */
  err: (line: string) => void;
};

/** A promise of the end that is not `settled` (the time ran out, or a signal), and its timer's stop. */
export function oneShotLimit(timeoutMs: number, signalled: Promise<void>): { reached: Promise<'timeout' | 'signalled'>; clear(): void } {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), timeoutMs)));
  return { reached: Promise.race([timeout, signalled.then(() => 'signalled' as const)]), clear: () => clearTimeout(timer) };
}

/** What a one-shot run connects with and starts its client from. */
export type OneShotStart = {
  node: string;
  bus: BusOptions;
  cache: string;
  settleMs: number;
  archiveDir?: string;
  timeoutMs: number;
  log: Logger;
  err: (line: string) => void;
};

/**
 * Connects to the bus unless the limit comes first (a connection made after it is closed), saying
 * each new reason it cannot: the client's options, or the exit code (0 on a signal, 1 when the bus
 * was not reached in time, said).
 */
export async function connectOneShot(o: OneShotStart, limit: Promise<'timeout' | 'signalled'>): Promise<ClientOptions | number> {
  const login = whichLogin(o.bus, nodeClientUser(o.node));
  const nc = (await connectWhenReachable({ bus: o.bus, log: o.log, signalled: limit.then(() => undefined), login })) ?? (await limit);
  if (nc === 'signalled') return 0;
  if (nc === 'timeout') return (o.err(`${o.node}: the bus at ${o.bus.servers.join(',')} was not reached within ${o.timeoutMs / 1000} s`), 1);
  return { nc, node: o.node, log: o.log, cacheDir: o.cache, settleMs: o.settleMs, login, ...(o.archiveDir ? { archiveDir: o.archiveDir } : {}) };
}

/** What a one-shot run watches: fills and their writes, and the modules planned. */
export type OneShotSubject = { idle(): Promise<void>; modules(): string[] };

/**
 * Waits until every module's fills and writes are done and each is applied or failed — a module
 * waiting for a value keeps the run waiting, woken by each report — or until the limit.
 */
export async function awaitSettled(subject: OneShotSubject, book: ReportBook, limit: Promise<'timeout' | 'signalled'>): Promise<OneShotEnd> {
  for (;;) {
    const next = book.changed();
    const idle = await Promise.race([subject.idle().then(() => 'idle' as const), limit]);
    if (idle !== 'idle') return idle;
    if (allSettled(subject.modules().map((m) => book.standing(m)))) return 'settled';
    const woken = await Promise.race([next.then(() => 'report' as const), limit]);
    if (woken !== 'report') return woken;
  }
}

/** Runs --once; returns the exit code: 0 when every module is applied (or the node has none), 1 otherwise; 0 on a signal. */
export async function runOnce(o: OnceOptions): Promise<number> {
  const limit = oneShotLimit(o.timeoutMs, o.signalled);
  try {
    const run = await connectOneShot(o, limit.reached);
    if (typeof run === 'number') return run;
    const book = new ReportBook();
    const engine = engineTellingBook(createEngineClient({ socketPath: o.socket, log: o.log, timeoutMs: o.engineTimeoutMs }), book);
    // The client's own sinks on the bus, its engine and reports also told to the book.
    const starting = startClient(run, busSinks({ ...run, engine, inboxPrefix: o.bus.inboxPrefix ?? '_INBOX', onReport: (m, body) => book.record(m, body) }));
    const client = await Promise.race([starting, limit.reached]);
    let end: OneShotEnd = typeof client === 'string' ? client : 'settled';
    if (typeof client !== 'string') end = await awaitSettled(client, book, limit.reached);
    const standings = typeof client === 'string' ? [] : client.modules().map((m) => book.standing(m));
    // What is still in flight at the end is given up, so the stop does not wait for the engine's timeout.
    if (end !== 'settled') engine.close();
    if (typeof client !== 'string') await client.stop();
    else
      void starting.then(
        (c) => c.stop(),
        () => undefined,
      );
    engine.close();
    await run.nc.drain();
    return judge(o, end, typeof client === 'string', standings);
  } finally {
    limit.clear();
  }
}

/** Says how the run went and gives the exit code. */
function judge(
  o: Pick<OnceOptions, 'node' | 'timeoutMs' | 'out' | 'err' | 'log'>,
  end: OneShotEnd,
  unstarted: boolean,
  standings: readonly Standing[],
): number {
  if (end === 'signalled') return (o.log.notice('--once interrupted by a signal'), 0);
  if (unstarted) return (o.err(`${o.node}: the node's plans were not read within ${o.timeoutMs / 1000} s`), 1);
  if (standings.length === 0) return (o.out(`${o.node}: no plans for this node; nothing to fill`), 0);
  const notApplied = standings.filter((s) => s.state !== 'applied');
  if (notApplied.length === 0) return (o.out(`${o.node}: ${standings.length} module(s) applied`), 0);
  for (const s of notApplied) o.err(describeStanding(s));
  const after = end === 'timeout' ? ` after ${o.timeoutMs / 1000} s` : '';
  o.err(`${o.node}: ${notApplied.length} of ${standings.length} module(s) not applied${after}`);
  return 1;
}
