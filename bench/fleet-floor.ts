// The floor's watcher of bench/fleet-worker.ts: a node's plans and values watched with nats.js's own
// KV watch (an ordered push consumer with the library's defaults, none of the mesh's keeping), and,
// for a plan whose build changed, the archive it names fetched as any reader of the object store
// would (its meta by last_by_subj, then each chunk by next_by_subj): the bus's own work for a new
// build, which the mesh's client does too. A value changed to `report.text` is, once seen, answered as
// a client answers a change (DESIGN §7): a report-sized entry put in `report.bucket` and its two
// notices published — the bus's own work for a change, which the burst's second floor holds. With
// `cold`, each plan found at the start has its archive fetched, its report and needs put and its
// notice published before the watcher says it caught up: the bus's work of a client's cold start. A
// plan changed to `reportBuild` has its archive fetched and is then reported as a change is: the
// bus's work of a client's new build.
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { Kvm, type KvWatchEntry } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Watch } from '../src/shared/bus/watch/types.ts';
import type { Seen } from './fleet-worker.ts';

/**
 * What a floor watcher watches, the build whose plans have their archive fetched (the others are only
 * seen), the value it reports, with `cold` what it does for each plan it finds at its start, and the
 * build whose plans have their archive fetched and are then reported as a client reports a build.
 */
export type FloorBuckets = { plans: string; config: string; fetchBuild: string; report: FloorReport; cold?: FloorColdWork; reportBuild?: string };

/**
 * The bus's work of a client's cold start for each plan (DESIGN §7): the plan's archive fetched, its
 * report (`report.bytes`) put, `needs` needs of `needBytes` each put in `bucket`, every put acked,
 * then the `applied` notice; the watcher says `caught-up` once every plan found at its start has had it.
 */
export type FloorColdWork = { bucket: string; needs: number; needBytes: number };

/** A value that, once a watcher has seen it, is reported: `bytes` put as `<node>.<module>` in `bucket`, and a notice on `subject`.changed/.applied. */
export type FloorReport = { text: string; bucket: string; bytes: number; subject: string };

/** What a floor watcher reports to: each sighting, and each watch of its kept going. */
export type FloorSink = { seen(s: Seen): void; watches: Watch[] };

/**
 * How long a watch is asked for again before the watcher gives up: a thousand watchers started at
 * once wait past nats.js's 5 s API timeout for their consumers; a floor that fails is no floor.
 */
const RETRY_FOR_MS = 120_000;

const decoder = new TextDecoder();
const buildOf = (v: Uint8Array) => /"build":"([^"]*)"/.exec(decoder.decode(v))?.[1] ?? '';
const wallNow = (): number => performance.timeOrigin + performance.now();

/** `make()`, asked again (after 0.5, 1, 2, 4, 4… s) while it fails, each retry said as a sighting `retry`. */
async function retried<T>(node: string, sink: FloorSink, make: () => Promise<T>): Promise<T> {
  const until = Date.now() + RETRY_FOR_MS;
  for (let wait = 500; ; wait = Math.min(wait * 2, 4000)) {
    try {
      return await make();
    } catch (err) {
      if (Date.now() + wait > until) throw err;
      sink.seen([node, 'retry', String((err as Error).message ?? err), wallNow()]);
      await new Promise((r) => setTimeout(r, wait * (0.5 + Math.random() / 2)));
    }
  }
}

/** Reads the object `name` of `bucket` by direct gets; resolves with its size in bytes. */
async function fetchObject(jsm: JetStreamManager, bucket: string, name: string): Promise<number> {
  const stream = `OBJ_${bucket}`;
  const subject = Buffer.from(name).toString('base64url');
  const meta = await jsm.direct.getMessage(stream, { last_by_subj: `$O.${bucket}.M.${subject + '='.repeat((4 - (subject.length % 4)) % 4)}` });
  if (!meta) throw new Error(`no object ${name} in ${bucket}`);
  const { nuid, chunks } = meta.json<{ nuid: string; chunks: number }>();
  let size = 0;
  let seq = 0;
  for (let i = 0; i < chunks; i++) {
    const chunk = await jsm.direct.getMessage(stream, { seq: seq + 1, next_by_subj: `$O.${bucket}.C.${nuid}` });
    if (!chunk) throw new Error(`object ${name}: chunk ${i + 1} of ${chunks} missing`);
    size += chunk.data.length;
    seq = chunk.seq;
  }
  return size;
}

/**
 * Watches `node`'s plans (`<node>.*` of `plans`) and values (`<node>.>` of `config`), saying each key
 * with its build or text, `caught-up` once both have, and `archive` with the build once a plan
 * changed to `fetchBuild` has had its archive fetched.
 */
export async function startFloorWatcher(nc: NatsConnection, node: string, buckets: FloorBuckets, sink: FloorSink): Promise<void> {
  const { plans, config, fetchBuild, report } = buckets;
  const kvm = new Kvm(nc);
  const reports = kvm.open(report.bucket);
  const reportBytes = new Uint8Array(report.bytes).fill(0x20);
  // What a client does after the engine answered a change: its report put (acked), then `applied`; `changed` went before.
  const reportChange = async (module: string) => {
    nc.publish(`${report.subject}.changed.${node}.${module}`, reportBytes.subarray(0, 64));
    await (await reports).put(`${node}.${module}`, reportBytes);
    nc.publish(`${report.subject}.applied.${node}.${module}`, reportBytes);
  };
  const onValue = (e: KvWatchEntry) => {
    if (decoder.decode(e.value) !== report.text) return;
    const module = e.key.slice(node.length + 1).split('.')[0]!;
    void reportChange(module).catch((err: unknown) => sink.seen([node, 'report-failed', String(err), wallNow()]));
  };
  const jsm = jetstreamManager(nc, { checkAPI: false, timeout: 10_000 });
  const builds = new Map<string, string>();
  const archiveOf = (e: KvWatchEntry) => {
    const ref = /"ref":"obj:\/\/([^/"]+)\/([^"]+)"/.exec(decoder.decode(e.value));
    return ref ? retried(node, sink, async () => fetchObject(await jsm, ref[1]!, ref[2]!)) : Promise.resolve(0);
  };
  // The cold start's work for each plan found at the start (FloorColdWork), done before `caught-up` is said.
  const coldWork: Promise<unknown>[] = [];
  const onColdPlan = (e: KvWatchEntry, cold: FloorColdWork) => {
    const module = e.key.slice(node.length + 1);
    const needBytes = reportBytes.subarray(0, cold.needBytes);
    const work = archiveOf(e)
      .then(async () => {
        const [kv, needs] = await Promise.all([reports, kvm.open(cold.bucket)]);
        await Promise.all([
          kv.put(`${node}.${module}`, reportBytes),
          ...Array.from({ length: cold.needs }, (_, i) => needs.put(`${node}.${module}.config.k${i}`, needBytes)),
        ]);
        nc.publish(`${report.subject}.applied.${node}.${module}`, reportBytes);
      })
      .catch((err: unknown) => sink.seen([node, 'cold-failed', String(err), wallNow()]));
    coldWork.push(work);
  };
  const onPlan = (e: KvWatchEntry) => {
    const build = e.value.length > 0 ? buildOf(e.value) : '';
    const before = builds.get(e.key);
    builds.set(e.key, build);
    if (before === undefined && build !== '' && buckets.cold) return onColdPlan(e, buckets.cold);
    if (before === undefined || before === build || (build !== fetchBuild && build !== buckets.reportBuild)) return;
    const module = e.key.slice(node.length + 1);
    const done = build === buckets.reportBuild ? archiveOf(e).then(() => reportChange(module)) : archiveOf(e);
    void done.then(
      () => sink.seen([node, 'archive', build, wallNow()]),
      (err: unknown) => sink.seen([node, 'archive-failed', String(err), wallNow()]),
    );
  };
  const follow = async (bucket: string, key: string, text: (e: KvWatchEntry) => string, also?: (e: KvWatchEntry) => void) => {
    let caughtUp!: () => void;
    const done = new Promise<void>((r) => (caughtUp = r));
    const iter = await retried(node, sink, async () => (await kvm.open(bucket)).watch({ key }));
    sink.watches.push({ caughtUp: done, stop: () => iter.stop() });
    void (async () => {
      for await (const e of iter) {
        sink.seen([node, e.key, text(e), wallNow()]);
        also?.(e);
        // Every node holds entries in both buckets: the last of those stored says it has caught up.
        if (e.delta === 0) caughtUp();
      }
    })();
    return done;
  };
  await Promise.all([
    follow(plans, `${node}.*`, (e) => (e.value.length > 0 ? buildOf(e.value) : ''), onPlan),
    follow(config, `${node}.>`, (e) => decoder.decode(e.value), onValue),
  ]);
  await Promise.all(coldWork);
  sink.seen([node, 'caught-up', '', wallNow()]);
}
