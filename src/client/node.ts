// Wires a node's client, stage by stage: the plan watch and the value sources feed the dependency
// index, the scheduler runs the modules naming a change, a module's run fills and hands off.
import type { KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { openKv, watchConnection } from '../shared/bus.ts';
import { APPLIED, COLLECT, CONFIG, NEEDS, PLANS, REGISTRY_BUCKET } from '../shared/buckets.ts';
import { refuseBadBucket } from '../shared/bucket-bind.ts';
import { kvBucket } from '../shared/bucket-spec.ts';
import { KvPublisher } from '../shared/kv-publisher.ts';
import type { Logger } from '../shared/log.ts';
import { loadArchive, natsObjectFetcher, type ArchiveLimits } from './archive/load.ts';
import { changedOf, everyKind, publishChanged, serveAsks } from './asks.ts';
import { DependencyIndex } from './schedule/dependencies.ts';
import type { EngineClient } from './handoff/fill-socket.ts';
import { Handoff } from './handoff/handoff.ts';
import { ItemWriter } from './report/items.ts';
import { Modules, type ModulesDeps } from './schedule/modules.ts';
import { watchPlans } from './sources/plans.ts';
import { watchRegistry } from './sources/registry.ts';
import { Reporter, type KeyWriter, type ReportBody } from './report/reporter.ts';
import { Scheduler } from './schedule/scheduler.ts';
import { startSources } from './sources/index.ts';
import { readStoredNeeds, settleStoredNeeds, type StoredNeeds } from './report/stale-needs.ts';
import { TemplateCache } from './fill/templates.ts';

/** What a node's client needs to run. */
export type NodeClientOptions = {
  nc: NatsConnection;
  node: string;
  engine: EngineClient;
  log: Logger;
  /** Where archives are kept by digest. */
  cacheDir: string;
  /** The settle window after a change, in ms. */
  settleMs: number;
  /** Limits on archives (defaults from the archive module). */
  limits?: ArchiveLimits;
  /** The only directory `file://` archive refs are read from (--archive-dir); absent: refused. */
  archiveDir?: string;
  /** The inbox prefix the connection was made with (`_INBOX_<node>`, DESIGN §11), for the acks of the reporter's puts. */
  inboxPrefix: string;
  /** Hears each report a module's run writes, once written (--once judges the node by them, client/commands/once/command.ts). */
  onReport?: (module: string, report: ReportBody) => void;
};

/** A running node client. */
export type NodeClient = {
  /** Resolves when no module has a fill pending or running. */
  idle(): Promise<void>;
  /** The modules with a plan on this node. */
  modules(): string[];
  /** Stops watching and waits for the fills in flight. */
  stop(): Promise<void>;
};

/** Puts as pipelined publishes (no request, timer or stack trace per write), deletes as the bucket's own. */
function keyWriter(nc: NatsConnection, bucket: string, kv: KV, inboxPrefix: string): KeyWriter {
  const publisher = new KvPublisher(nc, bucket, { inboxPrefix });
  return { put: (key, value) => publisher.put(key, value), delete: (key) => kv.delete(key) };
}

/** The buckets every client binds (a provider's `<provider>_bound` is checked when a plan names it). */
const CLIENT_BUCKETS = [PLANS, REGISTRY_BUCKET, CONFIG, NEEDS, APPLIED, COLLECT];

/** How long the start waits for the sources' buckets (and the node's stored needs) before filling what it can. */
export const START_WAIT_MS = 2000;

/** `promise`'s value, or `late` when it has not settled within `ms`. */
async function within<T, L>(promise: Promise<T>, ms: number, late: L): Promise<T | L> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<L>((r) => (timer = setTimeout(() => r(late), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/** Starts the client of `node`: resolves once the first fill of every module is asked for. */
export async function startNodeClient(opts: NodeClientOptions): Promise<NodeClient> {
  const { nc, node, log } = opts;
  // DESIGN §3: a bucket that holds more than its own subject is refused at start (the client exits 1);
  // a node reads the stream configuration only of the buckets it reads whole, the others pass unchecked.
  await Promise.all(CLIENT_BUCKETS.map((b) => refuseBadBucket(nc, kvBucket(b), (line) => log.warn(line))));
  const [needsKv, appliedKv, collectKv] = await Promise.all([openKv(nc, NEEDS), openKv(nc, APPLIED), openKv(nc, COLLECT)]);
  // Read beside the watches: handed to the reporter before the first fills (see settleStoredNeeds).
  const storedNeeds = readStoredNeeds(nc, node, log);
  const fetchObject = natsObjectFetcher(nc);
  const archiveOptions = { cacheDir: opts.cacheDir, fetchObject, log, ...(opts.limits ? { limits: opts.limits } : {}), ...(opts.archiveDir ? { archiveDir: opts.archiveDir } : {}) };
  const templates = new TemplateCache((ref, digest) => loadArchive(ref, digest, archiveOptions));
  const index = new DependencyIndex();
  let started = false;
  // Only after the start's full fill: until then every module is filled anyway.
  const { sources, items } = startSources(nc, node, log, (dependencies) => {
    if (!started) return;
    for (const m of index.modulesNaming(dependencies)) scheduler.schedule(m);
    // After the fills this turn starts: the notice's flush is a socket write the engine need not wait for.
    const notices = dependencies.flatMap((d) => changedOf(d) ?? []);
    if (notices.length > 0) setImmediate(() => publishChanged(nc, node, notices));
  });
  const itemWriter = new ItemWriter(node, collectKv, (module) => items.itemsOfContributor(module), log);
  const reporter = new Reporter(nc, node, keyWriter(nc, NEEDS, needsKv, opts.inboxPrefix), keyWriter(nc, APPLIED, appliedKv, opts.inboxPrefix), log);
  const modules = new Modules({
    node, templates, index,
    sources,
    handoff: new Handoff(opts.engine, log),
    items: itemWriter,
    reporter: opts.onReport ? heardReporter(reporter, opts.onReport) : reporter,
  }, (m, err) => log.error(`${node}.${m}: writing needs, items or report: ${(err as Error).stack ?? err}`));
  const scheduler = new Scheduler(opts.settleMs, (m, full) => modules.run(m, full), (m, err) => log.error(`${node}.${m}: ${(err as Error).stack ?? err}`));

  const refillAll = (why: string) => {
    const names = modules.names();
    log.notice(`${why}: filling ${names.length} module(s) again`);
    for (const m of names) scheduler.schedule(m, true);
  };

  const plans = watchPlans(nc, node, { modules, templates, sources }, log, (module) => {
    if (!started) return;
    scheduler.schedule(module);
    // A plan carries the placement: every askable kind of the module may read differently now.
    publishChanged(nc, node, everyKind(module));
  });
  const registry = watchRegistry(nc, log);

  await plans.caughtUp;
  const [caughtUp, needs] = await Promise.all([
    within(sources.caughtUp().then(() => true), START_WAIT_MS, false),
    within(storedNeeds, START_WAIT_MS, 'late' as const),
  ]);
  started = true;
  // Needs of modules whose plans went (and their reports), or that a plan's new build no longer names,
  // while this client was down: handed over before the first fills, so each fill deletes what its
  // module no longer names.
  const settleNeeds = (stored: StoredNeeds | undefined) => stored && settleStoredNeeds(stored, new Set(modules.names()), reporter, (m) => modules.removeStale(m), node, log);
  if (needs !== 'late') settleNeeds(needs);
  else {
    log.warn(`${NEEDS}: ${node}'s needs not read within ${START_WAIT_MS} ms; those left from before this start are handled once they are`);
    void storedNeeds.then(settleNeeds);
  }
  refillAll('start');
  const asks = serveAsks(nc, node, { plans: modules, sources }, log);
  // Ready means the bus knows the ask handler: an ask sent once this resolves finds it.
  await nc.flush();
  // Whatever a module asked before this client started may have changed while it was away.
  publishChanged(nc, node, modules.names().flatMap((m) => everyKind(m)));
  // Items of modules whose plans went while this client was down (only once the items are all read).
  if (caughtUp) {
    const planned = new Set(modules.names());
    for (const contributor of items.contributors()) {
      if (planned.has(contributor)) continue;
      log.notice(`${COLLECT}: items of ${contributor}, which has no plan on ${node}, deleted`);
      void itemWriter.removed(contributor);
    }
  }

  // Fills and the writes they leave, until neither has anything left.
  const settle = async () => {
    do {
      await scheduler.idle();
      await modules.settled();
    } while (!scheduler.quiet());
  };

  opts.engine.onKnock(() => refillAll('engine knocked'));
  let stopped = false;
  watchConnection(nc, log, () => {
    if (!stopped) refillAll('bus back');
  });

  return {
    idle: () => settle(),
    modules: () => modules.names(),
    async stop() {
      stopped = true;
      asks.stop();
      plans.stop();
      registry.stop();
      sources.stop();
      await settle();
      // A report or need whose write is still being tried again is dropped: the next start writes them anew.
      reporter.close();
    },
  };
}

/** The reporter, with each report also told to `onReport` once its write is done (or given up). */
function heardReporter(reporter: Reporter, onReport: (module: string, report: ReportBody) => void): ModulesDeps['reporter'] {
  return {
    needs: (module, entries) => reporter.needs(module, entries),
    removed: (module, build) => reporter.removed(module, build),
    report: (module, body) => reporter.report(module, body).finally(() => onReport(module, body)),
  };
}
