// Wires a node's client, stage by stage: the plan watch and the value sources feed the dependency
// index, the scheduler runs the modules naming a change, a module's run fills and hands its work to
// the sinks (client/sinks.ts) — the bus's for the client and --once, a capture for --dry-run — so
// every path runs the same stages.
import type { NatsConnection } from '@nats-io/transport-node';
import { watchConnection } from '../shared/bus/bus.ts';
import type { Watch } from '../shared/bus/watch/types.ts';
import { APPLIED, COLLECT, CONFIG, NEEDS, PLANS, REGISTRY_BUCKET } from '../shared/contract/buckets.ts';
import { refuseBadBucket } from '../shared/bus/bucket-bind.ts';
import { bindWhenThere } from '../shared/bus/bind-wait.ts';
import { kvBucket } from '../shared/contract/bucket-spec.ts';
import type { Logger } from '../shared/cli/log.ts';
import { keepArchives, loadArchive, natsObjectFetcher, type ArchiveLimits } from './archive/load.ts';
import { changedOf, everyKind, kindsPlanMoved, TurnNotices } from './asks.ts';
import { TemplateCache } from './fill/templates.ts';
import type { EngineClient } from './handoff/fill-socket.ts';
import { Handoff } from './handoff/handoff.ts';
import { settleLeftBehind, type LeftBehind } from './report/stale-needs.ts';
import { DependencyIndex } from './schedule/dependencies.ts';
import { Modules } from './schedule/modules.ts';
import { Scheduler } from './schedule/scheduler.ts';
import { busSinks, type ClientSinks, type OpenSinks } from './sinks.ts';
import { NodeItems } from './sources/collected.ts';
import { startSources, WHOLE_READ_MODULES, type Sources } from './sources/index.ts';
import { watchPlans } from './plans/plans.ts';
import { PlansRecord } from './plans/record.ts';
import { watchRegistry } from './plans/registry.ts';
import { errorText } from '../shared/base/errors.ts';
import { checkNodeLogin } from './login-check.ts';

/** What a node's client needs to run, whatever its sinks. */
export type ClientOptions = {
  /** The node's connection to the bus. */
  nc: NatsConnection;
  /** The node this client fills. */
  node: string;
  log: Logger;
  /** Where archives are kept by digest. */
  cacheDir: string;
  /** The settle window after a change, in ms. */
  settleMs: number;
  /** Limits on archives (defaults from the archive module). */
  limits?: ArchiveLimits;
  /** The only directory `file://` archive refs are read from (--archive-dir); absent: refused. */
  archiveDir?: string;
  /** The login as a refusal names it (shared/bus/login.ts `whichLogin`): its public key and the flag to check. */
  login?: string;
};

/** What the client handing its work to the engine's socket and the bus needs (startNodeClient). */
export type NodeClientOptions = ClientOptions & {
  /** The client's end of the engine's fill socket. */
  engine: EngineClient;
  /** The inbox prefix the connection was made with (`_INBOX_node_<node>`, DESIGN §11), for the acks of the reporter's puts. */
  inboxPrefix: string;
};

/** A running node client. */
export type NodeClient = {
  /** Resolves when no module has a fill pending or running, nor a write left behind by one. */
  idle(): Promise<void>;
  /** The modules with a plan on this node. */
  modules(): string[];
  /** Stops watching and waits for the fills in flight. */
  stop(): Promise<void>;
};

/** The buckets every client binds (a provider's `<provider>_bound` is checked when a plan names it). */
const CLIENT_BUCKETS = [PLANS, REGISTRY_BUCKET, CONFIG, NEEDS, APPLIED, COLLECT];

/** How long the start waits for the node's stored needs (and a node of many modules for its whole config read) before filling. */
const START_WAIT_MS = 2000;

/** `promise`'s value, or `late` when it has not settled within `ms`. */
async function within<T, L>(promise: Promise<T>, ms: number, late: L): Promise<T | L> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise, new Promise<L>((r) => (timer = setTimeout(() => r(late), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/** Starts the client of `node` on the engine's socket and the bus: resolves once the first fill of every module is asked for. */
export function startNodeClient(opts: NodeClientOptions): Promise<NodeClient> {
  return startClient(opts, busSinks(opts));
}

/** Starts the client of `node` handing its work to the sinks `open` makes: resolves once the first fill of every module is asked for. */
export async function startClient(opts: ClientOptions, open: OpenSinks): Promise<NodeClient> {
  const { nc, log } = opts;
  // Another node's seed would have every watch wait at notice, never ready: refused here, at once.
  await checkNodeLogin(nc, opts.node, opts.login);
  // DESIGN §3: a bucket that holds more than its own subject is refused at start (the client exits 1);
  // a node reads the stream configuration only of the buckets it reads whole, the others pass unchecked.
  // A bus whose JetStream answers 503 (a cluster without a meta leader) is waited for, said once.
  const checked = await bindWhenThere(
    (warn) => Promise.all(CLIENT_BUCKETS.map((b) => refuseBadBucket(nc, kvBucket(b), warn))),
    log,
    () => nc.isClosed(),
  );
  if (!checked) throw new Error("the connection closed before the client's buckets were checked");
  const items = new NodeItems(opts.node);
  const sinks = await open(items);
  const plansRecord = await PlansRecord.read(opts.cacheDir, opts.node, log);
  const stages = buildStages(opts, sinks, items, plansRecord);
  const asks = await begin(opts, sinks, stages, items);
  const { modules, scheduler } = stages;

  // Fills and the writes they leave, until neither has anything left.
  const settle = async () => {
    do {
      await scheduler.idle();
      await modules.settled();
    } while (!scheduler.quiet());
  };

  sinks.engine.onKnock(() => stages.refillAll('engine knocked'));
  // A knock line names one module whose file changed on disk (DESIGN §14): that module alone goes again, whole.
  sinks.engine.onModuleKnock?.((module) => {
    if (modules.names().includes(module)) stages.scheduler.schedule(module, true);
  });
  let stopped = false;
  watchConnection(nc, log, () => {
    if (!stopped) stages.refillAll('bus back');
  });

  return {
    idle: () => settle(),
    modules: () => modules.names(),
    async stop() {
      stopped = true;
      asks?.stop();
      for (const watch of [stages.plans, stages.registry, stages.sources]) watch.stop();
      await settle();
      // A report or need whose write is still being tried again is dropped: the next start writes them anew.
      sinks.reporter.close();
      await Promise.all([sinks.flush?.(), plansRecord.flush()]);
    },
  };
}

/** The client's stages, watching; a change is acted on only once `go` is called. */
type Stages = {
  sources: Sources;
  modules: Modules;
  scheduler: Scheduler;
  plans: Watch;
  registry: Watch;
  /** Acts on every change from now on (until the start's full fill, every module is filled anyway). */
  go(): void;
  /** Fills every module again, every file, saying why. */
  refillAll(why: string): void;
};

/** Builds every stage over the sinks and starts the watches. */
function buildStages(opts: ClientOptions, sinks: ClientSinks, items: NodeItems, record: PlansRecord): Stages {
  const { nc, node, log, cacheDir } = opts;
  const archive = {
    cacheDir,
    fetchObject: natsObjectFetcher(nc),
    log,
    ...(opts.limits ? { limits: opts.limits } : {}),
    ...(opts.archiveDir ? { archiveDir: opts.archiveDir } : {}),
  };
  const templates = new TemplateCache((ref, digest) => loadArchive(ref, digest, archive));
  const index = new DependencyIndex();
  const { asks } = sinks;
  const notices = asks ? new TurnNotices((n) => asks.changed(n)) : undefined;
  let started = false;
  const sources = startSources(nc, node, items, log, (dependencies) => {
    if (!started) return;
    for (const m of index.modulesNaming(dependencies)) scheduler.schedule(m);
    notices?.add(dependencies.flatMap((d) => changedOf(d) ?? []));
  });
  const modules = new Modules(
    { node, templates, index, sources, handoff: new Handoff(sinks.engine, log), items: sinks.items, reporter: sinks.reporter },
    (m, err) => log.error(`${node}.${m}: writing needs, items or report: ${errorText(err, { stack: true })}`),
  );
  const scheduler = new Scheduler(
    opts.settleMs,
    (m, full) => modules.run(m, full),
    (m, err) => log.error(`${node}.${m}: ${errorText(err, { stack: true })}`),
  );
  const keep = (digests: Set<string>) => void keepArchives(cacheDir, digests, log);
  const plans = watchPlans(nc, node, { modules, templates, sources, keepArchives: keep, record }, log, (module, before) => {
    if (!started) return;
    scheduler.schedule(module);
    // A plan carries the placement and the provisions: the kinds that read them may read differently now.
    notices?.add(everyKind(module, kindsPlanMoved(before, modules.plan(module))));
  });
  return {
    sources,
    modules,
    scheduler,
    plans,
    registry: watchRegistry(nc, log),
    go: () => void (started = true),
    refillAll(why) {
      const names = modules.names();
      log.notice(`${why}: filling ${names.length} module(s) again (a module is said again only when its report changes)`);
      for (const m of names) scheduler.schedule(m, true);
    },
  };
}

/**
 * Waits for the plans (and, a while, the values and the needs left from before), hands those needs
 * over, fills every module and serves asks; resolves with the asks' stop when they are served.
 */
async function begin(opts: ClientOptions, sinks: ClientSinks, stages: Stages, items: NodeItems): Promise<{ stop(): void } | undefined> {
  const { node, log } = opts;
  const { modules, sources } = stages;
  await stages.plans.caughtUp;
  // No fill before each source has read what its bucket holds, or heard that it holds nothing yet: a
  // value not read is never reported waited for (DESIGN §7 point 4). A timer here filled a site's
  // node while its config watch was still being made, reporting `waiting` for values that were there
  // (issue 22). A bus that answers nothing holds the start, as it holds the plans' watch above.
  const leftBehind = sinks.leftBehind(new Set(modules.names()));
  // A node of many modules reads its config whole before its first fills (WHOLE_READ_MODULES), for
  // START_WAIT_MS at most: a slower read goes on beside the fills, whose keys are read as before.
  const readWhole = modules.names().length > WHOLE_READ_MODULES ? within(sources.readWhole(), START_WAIT_MS, 'late' as const) : undefined;
  const [, needs] = await Promise.all([sources.settled(), within(leftBehind, START_WAIT_MS, 'late' as const), readWhole]);
  stages.go();
  // Needs, items and reports of modules whose plans went, or that a plan's new build no longer names,
  // while this client was down (from its record of written keys, stale-needs.ts): handed over before
  // the first fills, so each fill deletes what its module no longer names.
  const settleNeeds = (left: LeftBehind | undefined) =>
    left &&
    settleLeftBehind(
      left,
      modules.plans(),
      sinks.reporter,
      (m) => modules.removeStale(m),
      (key) => sinks.items.deleteLeft(key),
      node,
      log,
    );
  if (needs !== 'late') settleNeeds(needs);
  else {
    log.warn(`${NEEDS}: ${node}'s needs not read within ${START_WAIT_MS} ms; those left from before this start are handled once they are`);
    void leftBehind.then(settleNeeds);
  }
  stages.refillAll('start');
  const asks = await sinks.asks?.serve({ plans: modules, sources });
  // Whatever a module asked before this client started may have changed while it was away.
  sinks.asks?.changed(modules.names().flatMap((m) => everyKind(m)));
  return asks;
}
