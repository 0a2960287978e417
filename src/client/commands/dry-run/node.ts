// --dry-run's node (issue 14): the client's own stages — plan watch, sources, scheduler, a module's
// run — with the engine and the bus writers replaced by a capture, so every module is rendered as it
// would be handed while nothing reaches the engine's socket or is written to the bus (no needs,
// report, item, `prov.changed` or ask answered). Values are read as the client reads them.
import type { NatsConnection } from '@nats-io/transport-node';
import type { FillFile } from '../../../shared/fill-protocol.ts';
import type { Logger } from '../../../shared/log.ts';
import { loadArchive, natsObjectFetcher } from '../../archive/load.ts';
import { DependencyIndex } from '../../schedule/dependencies.ts';
import type { EngineClient } from '../../handoff/fill-socket.ts';
import type { FilledItem } from '../../fill/fill.ts';
import { Handoff } from '../../handoff/handoff.ts';
import { Modules, type ModulesDeps } from '../../schedule/modules.ts';
import { watchPlans } from '../../sources/plans.ts';
import { START_WAIT_MS } from '../../node.ts';
import type { ReportBook } from '../once/book.ts';
import type { OneShotSubject } from '../once/command.ts';
import { Scheduler } from '../../schedule/scheduler.ts';
import { startSources } from '../../sources/index.ts';
import { TemplateCache } from '../../fill/templates.ts';

/** What a dry run of a node needs. */
export type DryRunNodeOptions = {
  nc: NatsConnection;
  node: string;
  log: Logger;
  cacheDir: string;
  settleMs: number;
  archiveDir?: string;
  /** Where each module's report goes in place of the bus. */
  book: ReportBook;
};

/** What one module's runs rendered: every file handed, by path, and its items. */
export type Rendered = { files: Map<string, FillFile>; items: FilledItem[] };

/** A running dry run. */
export type DryRunNode = OneShotSubject & {
  /** What the module's runs rendered so far. */
  rendered(module: string): Rendered;
  /** Stops watching and waits for the fills in flight. */
  stop(): Promise<void>;
};

/** Starts a dry run of `node`: resolves once the plans are read and every module's first fill is asked for. */
export async function startDryRunNode(opts: DryRunNodeOptions): Promise<DryRunNode> {
  const { nc, node, log, book } = opts;
  const capture = new Map<string, Rendered>();
  const rendered = (m: string) => capture.get(m) ?? capture.set(m, { files: new Map(), items: [] }).get(m)!;
  const archiveOptions = { cacheDir: opts.cacheDir, fetchObject: natsObjectFetcher(nc), log, ...(opts.archiveDir ? { archiveDir: opts.archiveDir } : {}) };
  const templates = new TemplateCache((ref, digest) => loadArchive(ref, digest, archiveOptions));
  const index = new DependencyIndex();
  let started = false;
  const { sources } = startSources(nc, node, log, (dependencies) => {
    if (started) for (const m of index.modulesNaming(dependencies)) scheduler.schedule(m);
  });
  const reporter: ModulesDeps['reporter'] = {
    needs: async () => {},
    report: async (m, body) => book.record(m, body),
    removed: async (m) => void capture.delete(m),
  };
  const items: ModulesDeps['items'] = {
    record: async (m, filled) => void (rendered(m).items = [...filled]),
    removed: async () => {},
  };
  const modules = new Modules({
    node, templates, index, reporter, items,
    sources,
    handoff: new Handoff(capturingEngine((m, files) => { for (const f of files) rendered(m).files.set(f.path, f); }), log),
  }, (m, err) => log.error(`${node}.${m}: ${(err as Error).stack ?? err}`));
  const scheduler = new Scheduler(opts.settleMs, (m, full) => modules.run(m, full), (m, err) => log.error(`${node}.${m}: ${(err as Error).stack ?? err}`));
  const plans = watchPlans(nc, node, { modules, templates, sources }, log, (module) => {
    if (started) scheduler.schedule(module);
  });

  await plans.caughtUp;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([sources.caughtUp(), new Promise((r) => (timer = setTimeout(r, START_WAIT_MS)))]);
  clearTimeout(timer);
  started = true;
  for (const m of modules.names()) scheduler.schedule(m, true);

  const settle = async () => {
    do {
      await scheduler.idle();
      await modules.settled();
    } while (!scheduler.quiet());
  };
  return {
    idle: settle,
    modules: () => modules.names(),
    rendered,
    async stop() {
      plans.stop();
      sources.stop();
      await settle();
    },
  };
}

/** An engine that takes every file and confirms it written, telling `take` what it was handed; it never opens a socket. */
function capturingEngine(take: (module: string, files: FillFile[]) => void): EngineClient {
  return {
    async fill(req) {
      take(req.module, req.files);
      return { id: 0, ok: true, files: req.files.map((f) => ({ path: f.path, action: 'written' as const })) };
    },
    onKnock: () => {},
    close: () => {},
  };
}
