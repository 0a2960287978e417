// --dry-run DIR (issue 14): the node's modules rendered from the bus's values into DIR, as --once
// waits for them, without the engine's socket and without a write to the bus. Exit 0 when every
// module rendered completely, 1 when one waits or failed.
import type { BusOptions } from '../../../shared/bus/bus.ts';
import type { Logger } from '../../../shared/cli/log.ts';
import { startClient } from '../../node.ts';
import { DryRunCapture } from './capture.ts';
import { describeDryRun, prepareDryRunDir, writeDryRun } from './output.ts';
import { ReportBook } from '../once/book.ts';
import { awaitSettled, connectOneShot, oneShotLimit, type OneShotEnd } from '../once/command.ts';

/** What --dry-run needs. */
export type DryRunOptions = {
  node: string;
  bus: BusOptions;
  /** The dir the files and the summary go to (absolute; made, or empty). */
  dir: string;
  cache: string;
  settleMs: number;
  archiveDir?: string;
  /** How long to wait for every module to settle, start and bus included, in ms. */
  timeoutMs: number;
  log: Logger;
  signalled: Promise<void>;
  out: (line: string) => void;
  err: (line: string) => void;
};

/** Runs --dry-run; returns the exit code (2 when DIR cannot take it). */
export async function runDryRun(o: DryRunOptions): Promise<number> {
  const ready = await prepareDryRunDir(o.dir);
  if (!ready.ok) return (o.err(ready.reason), 2);
  const limit = oneShotLimit(o.timeoutMs, o.signalled);
  try {
    const run = await connectOneShot(o, limit.reached);
    if (typeof run === 'number') return run;
    const book = new ReportBook();
    const capture = new DryRunCapture(book);
    const starting = startClient(run, async () => capture.sinks());
    const dry = await Promise.race([starting, limit.reached]);
    const end: OneShotEnd = typeof dry === 'string' ? dry : await awaitSettled(dry, book, limit.reached);
    if (typeof dry === 'string')
      void starting.then(
        (d) => d.stop(),
        () => undefined,
      );
    const entries = typeof dry === 'string' ? [] : dry.modules().map((m) => ({ standing: book.standing(m), rendered: capture.rendered(m) }));
    if (typeof dry !== 'string') await dry.stop();
    await run.nc.close();
    if (end === 'signalled') return (o.log.notice('--dry-run interrupted by a signal; nothing written'), 0);
    if (typeof dry === 'string') return (o.err(`${o.node}: the node's plans were not read within ${o.timeoutMs / 1000} s`), 1);
    if (entries.length === 0) return (o.out(`${o.node}: no plans for this node; nothing to render`), 0);
    const summary = await writeDryRun(o.dir, o.node, entries, end === 'timeout');
    for (const line of describeDryRun(summary)) o.out(line);
    return summary.complete ? 0 : 1;
  } finally {
    limit.clear();
  }
}
