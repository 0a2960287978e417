// A fleet for rollout tests (DESIGN §12): nats-server, the seat (its bundle copied alone, or in the
// test's process on a clock the test moves: fleet-seat.ts), and the test standing in for each node's
// client by writing its reports into mesh-provisioner_applied. Every plan write is recorded in order,
// so a test can say what each node was planned, and when.
import { createHash } from 'node:crypto';
import { Kvm, type KV } from '@nats-io/kv';
import { jetstream } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { ensureKv } from '../../src/shared/bus/bus.ts';
import { APPLIED, ASSIGNMENTS, MODULES, PLANS, ROLLOUTS } from '../../src/shared/contract/buckets.ts';
import { HEALTH_SUBJECT, PROVISIONING_VERB } from '../../src/shared/contract/subjects.ts';
import { watchKv } from '../../src/shared/bus/watch/watch.ts';
import type { Watch } from '../../src/shared/bus/watch/types.ts';
import type { RolloutState } from '../../src/shared/contract/rollout-state.ts';
import { bucketManager } from '../../src/shared/bus/bucket-bind.ts';
import { copyBundleAlone, ensureBuilt, runBundle, type Finished } from './bundle.ts';
import { jumpClock, type JumpClock } from './clock.ts';
import { startFleetSeat, type FleetSeat, type SeatRun } from './fleet-seat.ts';
import { startNats, type NatsServer } from './nats.ts';
import { waitFor } from './wait.ts';

/** One plan write seen on the bus: the key, the build (null: deleted), the archive digest, and when (the fleet's clock). */
export type PlanWrite = { key: string; build: string | null; digest: string | null; at: number };

/** A rollout a composition carries. */
export type RolloutSpec = { waves: number[]; halt?: number; wait?: number };

/** The running fleet. */
export type RolloutFleet = {
  nats: NatsServer;
  nc: NatsConnection;
  dir: string;
  kv: { assignments: KV; modules: KV; applied: KV; plans: KV; rollouts: KV };
  seat: FleetSeat;
  /**
   * The clock of a seat run in process, kept across its restarts. The bus's timestamps do not jump
   * with it: a test comparing a plan's write on the bus with the seat's clock does so before any jump.
   */
  clock: JumpClock;
  /** Every plan write seen, in order. */
  writes: PlanWrite[];
  /** Every line said on provisioner_health. */
  health: { module: string; node?: string; build: string; reason: string }[];
  /** Starts the seat again (after `seat` was killed), with `args`, as `run` says (by default as it ran). */
  restartSeat(args?: string[], run?: SeatRun): Promise<void>;
  /** Resolves once the seat (in process) has handled every change stored so far and the fleet has seen every plan it wrote. */
  settled(): Promise<void>;
  /** Publishes `build` of `module`: one file under ${dir:<dirName>}, the archive digest from `content`. */
  publish(module: string, build: string, opts?: { rollout?: RolloutSpec; content?: string; dirName?: string }): Promise<void>;
  /** Assigns `module` to each node, with dirs `config` (and any `extra`). */
  assign(module: string, nodes: string[], extraDirs?: Record<string, string>): Promise<void>;
  unassign(module: string, node: string): Promise<void>;
  /** The build of a node's stored plan (undefined: none). */
  planBuild(module: string, node: string): Promise<string | undefined>;
  /** The archive digest of a node's stored plan. */
  planDigest(module: string, node: string): Promise<string | undefined>;
  /** Writes a node's report, as its client would. */
  report(module: string, node: string, build: string, state: 'applied' | 'waiting' | 'failed', reason?: string): Promise<void>;
  /** The stored state of a module's rollout. */
  state(module: string): Promise<RolloutState | undefined>;
  /** Waits until the module's stored state satisfies `pred`. */
  waitState(module: string, pred: (s: RolloutState) => boolean, what: string, ms?: number): Promise<RolloutState>;
  /** Waits until every node's plan of `module` is on the build given for it. */
  waitPlans(module: string, want: Record<string, string>, ms?: number): Promise<void>;
  /** The verb's `health` entries. */
  verbHealth(module?: string): Promise<{ key: string; value: Record<string, unknown> }[]>;
  /** Runs `server.js <args> --nats URL` to its end. */
  command(args: string[]): Promise<Finished>;
  close(): Promise<void>;
};

/** A composition's archive digest for `content`. */
export function digestFor(content: string): string {
  return 'sha256:' + Buffer.from(content).toString('hex').padEnd(64, '0').slice(0, 64);
}

/**
 * The nodes in the waves' order for `module` and `build`, worked out here from DESIGN §12's words
 * (ascending hex sha256 of the UTF-8 `<module>.<build>.<node>`), not by the seat's code under test.
 */
export function inWaveOrder(module: string, build: string, nodes: string[]): string[] {
  const hex = (node: string) =>
    createHash('sha256')
      .update(Buffer.from(`${module}.${build}.${node}`, 'utf8'))
      .digest('hex');
  return nodes
    .map((node) => [hex(node), node] as const)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, node]) => node);
}

/** Starts the fleet's bus, buckets and seat (`seatArgs` appended to its command line), run as `run` says. */
export async function startRolloutFleet(seatArgs: string[] = [], run: SeatRun = 'bundle'): Promise<RolloutFleet> {
  ensureBuilt('server');
  const dir = copyBundleAlone('server');
  const nats = await startNats();
  const nc = await connect({ servers: nats.url });
  const kvm = new Kvm(jetstream(nc));
  const [assignments, modules] = await Promise.all([ensureKv(nc, ASSIGNMENTS, 1), ensureKv(nc, MODULES, 1)]);
  const clock = jumpClock();
  let seat = await startFleetSeat(run, { dir, url: nats.url, clock }, seatArgs);
  const [applied, plans, rollouts] = await Promise.all([APPLIED, PLANS, ROLLOUTS].map((b) => kvm.open(b)));
  const writes: PlanWrite[] = [];
  let planRevision = 0;
  const planWatch: Watch = await watchKv(nc, PLANS, '>', (e) => {
    const plan = e.value ? (JSON.parse(Buffer.from(e.value).toString()) as { build: string; archive: { digest: string } }) : undefined;
    writes.push({ key: e.key, build: plan?.build ?? null, digest: plan?.archive.digest ?? null, at: clock.now() });
    planRevision = e.revision;
  });
  const jsm = await bucketManager(nc);
  const health: RolloutFleet['health'] = [];
  const sub = nc.subscribe(HEALTH_SUBJECT, { callback: (_e, m) => void health.push(m.json()) });
  const get = async (kv: KV, key: string) => {
    const e = await kv.get(key);
    return e && e.operation === 'PUT' ? (e.json() as Record<string, unknown>) : undefined;
  };
  const fleet: RolloutFleet = {
    nats,
    nc,
    dir,
    kv: { assignments, modules, applied: applied!, plans: plans!, rollouts: rollouts! },
    get seat() {
      return seat;
    },
    clock,
    writes,
    health,
    async restartSeat(args = seatArgs, how = seat.run) {
      seat = await startFleetSeat(how, { dir, url: nats.url, clock }, args);
    },
    async settled() {
      await seat.settled();
      await nc.flush();
      const last = (await jsm.streams.info(`KV_${PLANS}`)).state.last_seq;
      await waitFor('the fleet to see every plan written', () => planRevision >= last);
    },
    async publish(module, build, opts = {}) {
      const dirName = opts.dirName ?? 'config';
      const composition = {
        module,
        build,
        published: true,
        archive: { ref: `obj://mesh-catalog_archives/${module}-${build}.tar`, digest: digestFor(opts.content ?? build) },
        provisioning: { files: [{ path: `\${dir:${dirName}}/${module}.conf`, template: `${module}.conf`, mode: 'owned', change: 'restart' }] },
        ...(opts.rollout ? { rollout: opts.rollout } : {}),
      };
      await modules.put(module, JSON.stringify(composition));
    },
    async assign(module, nodes, extraDirs = {}) {
      await Promise.all(
        nodes.map((node) =>
          assignments.put(`${node}.${module}`, JSON.stringify({ node, module, placement: { dir: { config: `/etc/${module}`, ...extraDirs } } })),
        ),
      );
    },
    async unassign(module, node) {
      await assignments.delete(`${node}.${module}`);
    },
    async planBuild(module, node) {
      return (await get(plans!, `${node}.${module}`))?.['build'] as string | undefined;
    },
    async planDigest(module, node) {
      return ((await get(plans!, `${node}.${module}`))?.['archive'] as { digest: string } | undefined)?.digest;
    },
    async report(module, node, build, state, reason) {
      const value = { node, module, build, state, files: [], waiting: [], ...(reason ? { reason } : {}), at: new Date().toISOString() };
      await applied!.put(`${node}.${module}`, JSON.stringify(value));
    },
    async state(module) {
      return (await get(rollouts!, module)) as RolloutState | undefined;
    },
    async waitState(module, pred, what, ms = 10_000) {
      let last: RolloutState | undefined;
      try {
        return await waitFor(what, async () => ((last = await fleet.state(module)) && pred(last) ? last : undefined), ms);
      } catch (err) {
        throw new Error(`${(err as Error).message}; last state: ${JSON.stringify(last && { ...last, previous: '…' })}; seat: ${seat.stderr().slice(-3000)}`);
      }
    },
    async waitPlans(module, want, ms = 10_000) {
      const wrong = async () => {
        const out: string[] = [];
        for (const [node, build] of Object.entries(want)) {
          const got = await fleet.planBuild(module, node);
          if (got !== build) out.push(`${node}: ${got} not ${build}`);
        }
        return out;
      };
      try {
        await waitFor(`plans of ${module}`, async () => (await wrong()).length === 0, ms);
      } catch {
        throw new Error(`plans of ${module}: ${(await wrong()).join(', ')}; seat: ${seat.stderr().slice(-3000)}`);
      }
    },
    async verbHealth(module) {
      const reply = await nc.request(PROVISIONING_VERB, JSON.stringify({ what: 'health', ...(module ? { module } : {}) }), { timeout: 5000 });
      return (reply.json() as { entries: { key: string; value: Record<string, unknown> }[] }).entries;
    },
    command: (args) => runBundle('node', dir, 'server', [...args, '--nats', nats.url], {}, 20_000),
    async close() {
      planWatch.stop();
      sub.unsubscribe();
      seat.kill();
      await seat.exited;
      await nc.close();
      await nats.cleanup();
    },
  };
  return fleet;
}

/** The same build for every node given. */
export function all(nodes: string[], build: string): Record<string, string> {
  return Object.fromEntries(nodes.map((n) => [n, build]));
}
