// A seat on a real nats-server for tests, with its input buckets and what its passes did.
import { Kvm, type KV } from '@nats-io/kv';
import { jetstream } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { connectBus, ensureKv } from '../../src/shared/bus/bus.ts';
import { ASSIGNMENTS, MODULES, PLANS } from '../../src/shared/contract/buckets.ts';
import { memoryLogger } from '../../src/shared/cli/log.ts';
import type { PassSummary } from '../../src/server/seat/composer.ts';
import { startSeat, type Seat } from '../../src/server/seat/seat.ts';
import { startNats, type NatsServer } from './nats.ts';

/** A composition of `module` with one file and one secret, as the catalogue would publish it. */
export function composition(module: string, build = '1', extra: Record<string, unknown> = {}) {
  return {
    module,
    build,
    published: true,
    archive: { ref: `obj://mesh-catalog_archives/${module}-${build}.tar`, digest: 'sha256:' + 'a'.repeat(64) },
    provisioning: {
      files: [{ path: '${dir:config}/' + module + '.conf', template: module + '.conf', owner: module, mode: 'owned', change: 'restart' }],
      secrets: [{ name: 'api-key' }],
      ...extra,
    },
  };
}

/** An assignment of `module` to `node` with a config dir. */
export function assignment(node: string, module: string, dir = `/etc/${module}`) {
  return { node, module, placement: { dir: { config: dir }, port: { http: 8080 } } };
}

/** A seat with its bus, input buckets, logs and pass summaries. */
export type SeatFixture = {
  server: NatsServer;
  nc: NatsConnection;
  seat: Seat;
  assignments: KV;
  modules: KV;
  plans: KV;
  passes: PassSummary[];
  log: ReturnType<typeof memoryLogger>;
  put(kv: KV, key: string, value: unknown): Promise<number>;
  close(): Promise<void>;
};

/** Starts nats-server, the input buckets (unless `withoutInputs`) and a seat. */
export async function startSeatFixture(opts: { withoutInputs?: boolean } = {}): Promise<SeatFixture> {
  const server = await startNats();
  const nc = await connectBus({ servers: [server.url], name: 'test' });
  const kvm = new Kvm(jetstream(nc));
  const assignments = opts.withoutInputs ? (undefined as unknown as KV) : await ensureKv(nc, ASSIGNMENTS, 1);
  const modules = opts.withoutInputs ? (undefined as unknown as KV) : await ensureKv(nc, MODULES, 1);
  const passes: PassSummary[] = [];
  const log = memoryLogger();
  const seat = await startSeat({ nc, log, archives: 'mesh-catalog_archives', replicas: 1, onPass: (s) => passes.push(s) });
  const plans = await kvm.open(PLANS);
  return {
    server,
    nc,
    seat,
    assignments,
    modules,
    plans,
    passes,
    log,
    put: (kv, key, value) => kv.put(key, JSON.stringify(value)),
    async close() {
      await seat.stop();
      await nc.close();
      await server.cleanup();
    },
  };
}

/** JSON text of arrays nested `depth` levels deep, as a hostile writer would put it. */
export function nestedJson(depth: number): string {
  return '['.repeat(depth) + ']'.repeat(depth);
}

/** A composition of `module` as JSON text with `nested` (JSON text) as a provision's values. */
export function compositionWithValues(module: string, nested: string): string {
  const base = composition(module);
  const head = JSON.stringify({
    ...base,
    provisioning: { ...base.provisioning, provisions: [{ provider: 'postgres', provision: 'database', values: { v: 0 } }] },
  });
  return head.replace('{"v":0}', `{"v":${nested}}`);
}
