// Wires a node's client: watches feed the modules, the scheduler runs them, triggers refill them all.
import type { NatsConnection } from '@nats-io/transport-node';
import * as v from 'valibot';
import { openKv, watchBucket, watchConnection, type Watch } from '../shared/bus.ts';
import { APPLIED, CONFIG, NEEDS, PLANS, REGISTRY_BUCKET } from '../shared/buckets.ts';
import { parseConfigKey, parseNodeModuleKey } from '../shared/keys.ts';
import type { Logger } from '../shared/log.ts';
import { decodeJson } from '../shared/schemas.ts';
import { loadArchive, natsObjectFetcher, type ArchiveLimits } from './archive.ts';
import type { EngineClient } from './engine.ts';
import { Modules } from './modules.ts';
import { Reporter } from './reporter.ts';
import { Scheduler } from './scheduler.ts';
import { TemplateCache } from './templates.ts';
import { NodeValues } from './values.ts';

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
};

/** A running node client. */
export type NodeClient = {
  /** Resolves when no module has a fill pending or running. */
  idle(): Promise<void>;
  /** Stops watching and waits for the fills in flight. */
  stop(): Promise<void>;
};

/** How long the start waits for a missing config bucket before filling what it can. */
export const START_WAIT_MS = 2000;

/** Starts the client of `node`: resolves once the first fill of every module is asked for. */
export async function startNodeClient(opts: NodeClientOptions): Promise<NodeClient> {
  const { nc, node, log } = opts;
  const [needsKv, appliedKv] = await Promise.all([openKv(nc, NEEDS), openKv(nc, APPLIED)]);
  const fetchObject = natsObjectFetcher(nc);
  const templates = new TemplateCache((ref, digest) => loadArchive(ref, digest, { cacheDir: opts.cacheDir, fetchObject, log, ...(opts.limits ? { limits: opts.limits } : {}), ...(opts.archiveDir ? { archiveDir: opts.archiveDir } : {}) }));
  const values = new NodeValues(node);
  const modules = new Modules({ node, engine: opts.engine, reporter: new Reporter(nc, node, needsKv, appliedKv, log), templates, values, log });
  const scheduler = new Scheduler(opts.settleMs, (m, full) => modules.run(m, full), (m, err) => log.error(`${node}.${m}: ${(err as Error).stack ?? err}`));
  let started = false;

  const refillAll = (why: string) => {
    const names = modules.names();
    log.notice(`${why}: filling ${names.length} module(s) again`);
    for (const m of names) scheduler.schedule(m, true);
  };

  const plans = watchBucket(nc, PLANS, `${node}.*`, (e) => {
    const key = parseNodeModuleKey(e.key);
    if (!key.ok) return log.warn(`${PLANS} ${e.key}: key out of shape: ${key.reason}`);
    if (!modules.setPlan(key.value.module, e.value)) return;
    templates.retain(modules.digests());
    if (started) scheduler.schedule(key.value.module);
  }, log);

  const watches: Watch[] = [plans];
  const configWatch = watchBucket(nc, CONFIG, `${node}.>`, (e) => {
    const key = parseConfigKey(e.key);
    if (!key.ok) return log.warn(`${CONFIG} ${e.key}: key out of shape: ${key.reason}`);
    values.setConfig(key.value.module, key.value.key, e.value);
    if (started && modules.namesValue(key.value.module, 'config', key.value.key)) scheduler.schedule(key.value.module);
  }, log);
  watches.push(configWatch);
  // The registry says where each kind lives; this client reads config where the registry says it is
  // kept today (mesh-config_resolved), and says so when the seat's registry names another place.
  const registry = watchBucket(nc, REGISTRY_BUCKET, 'config', (e) => {
    if (!e.value) return;
    const entry = decodeJson(v.object({ bucket: v.string() }), e.value);
    if (!entry.ok) log.warn(`${REGISTRY_BUCKET} config: ${entry.reason}`);
    else if (entry.value.bucket !== CONFIG) log.warn(`registry names ${entry.value.bucket} for config; this client reads ${CONFIG}`);
  }, log);
  watches.push(registry);

  await plans.caughtUp;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([configWatch.caughtUp, new Promise((r) => (timer = setTimeout(r, START_WAIT_MS)))]);
  clearTimeout(timer);
  started = true;
  refillAll('start');

  opts.engine.onKnock(() => refillAll('engine knocked'));
  let stopped = false;
  watchConnection(nc, log, () => {
    if (!stopped) refillAll('bus back');
  });

  return {
    idle: () => scheduler.idle(),
    async stop() {
      stopped = true;
      for (const w of watches) w.stop();
      await scheduler.idle();
    },
  };
}
