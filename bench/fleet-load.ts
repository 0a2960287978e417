// The fleet bench's load (bench/fleet.ts, bench/fleet-failover.ts): N nodes of 5 modules each, every
// module three files naming its build and one config value, three config keys a module, written as
// the controller, mesh-config and `publish` would.
import type { NatsConnection } from '@nats-io/transport-node';
import { Kvm, type KV } from '@nats-io/kv';
import { jetstream } from '@nats-io/jetstream';
import { Objm } from '@nats-io/obj';
import { ASSIGNMENTS, CONFIG, DEFAULT_ARCHIVES, MODULES, PLANS } from '../src/shared/contract/buckets.ts';
import { jsonBytes } from '../src/shared/base/bytes.ts';
import { KvPublisher } from '../src/shared/bus/kv-publisher.ts';
import { packTemplates, publishModule, putArchive } from '../test/helpers/archive.ts';
import { wallNow } from './fleet-worker.ts';
import { countingWatch, putPipelined } from './seat-lib.ts';

/** Modules a node. */
export const MODULES_N = 5;
const KEYS = ['a', 'b', 'c'];

export const nodeName = (i: number) => `n${String(i).padStart(5, '0')}`;
export const moduleName = (j: number) => `m${j}`;
export const bytes = (text: string) => new TextEncoder().encode(text);

const templatesOf = (module: string, build: string) =>
  Object.fromEntries(KEYS.map((k) => [`${k}.conf`, `# ${module} build ${build}\nvalue \${config:${k}}\n`]));

/** Publishes `module` at `build`: three files, each naming the build and one config value. */
export function publishBuild(nc: NatsConnection, modules: KV, module: string, build: string) {
  const store = new Objm(jetstream(nc)).open(DEFAULT_ARCHIVES);
  const files = KEYS.map((k) => ({ path: `/srv/${module}/${k}.conf`, template: `${k}.conf`, change: 'restart' }));
  return store.then((s) =>
    publishModule(modules, { store: s, bucket: DEFAULT_ARCHIVES }, module, { build, templates: templatesOf(module, build), provisioning: { files } }),
  );
}

/** Stores the archive of `module` at `build` as `name`, as `publish` does before the catalog entry (the floor's build); resolves with its ref. */
export async function storeArchive(nc: NatsConnection, module: string, build: string, name: string): Promise<string> {
  const store = await new Objm(jetstream(nc)).open(DEFAULT_ARCHIVES);
  return putArchive({ store, bucket: DEFAULT_ARCHIVES }, name, await packTemplates(templatesOf(module, build)));
}

/** Every config value and assignment of the fleet, as the controller and mesh-config would write them. */
export function* fleetEntries(nodes: string[], bucket: 'config' | 'assignments'): Generator<[string, Uint8Array]> {
  for (const node of nodes)
    for (let j = 0; j < MODULES_N; j++) {
      const module = moduleName(j);
      if (bucket === 'assignments') yield [`${node}.${module}`, jsonBytes({ node, module, placement: {} })];
      else for (const k of KEYS) yield [`${node}.${module}.${k}`, bytes(`${k}0`)];
    }
}

/** Puts `entries` into `bucket`, at most 256 in flight. */
export async function putAll(nc: NatsConnection, bucket: string, entries: Iterable<[string, Uint8Array]>): Promise<void> {
  const publisher = new KvPublisher(nc, bucket);
  await putPipelined(publisher, entries);
  publisher.close();
}

/** Publishes build 1 of every module, every value and assignment, and waits until the seat wrote every plan; resolves with the modules bucket. */
export async function loadFleet(nc: NatsConnection, nodes: string[]): Promise<KV> {
  const plans = await countingWatch(nc, PLANS, wallNow);
  const modules = await new Kvm(jetstream(nc)).open(MODULES);
  for (let j = 0; j < MODULES_N; j++) await publishBuild(nc, modules, moduleName(j), '1');
  await putAll(nc, CONFIG, fleetEntries(nodes, 'config'));
  await putAll(nc, ASSIGNMENTS, fleetEntries(nodes, 'assignments'));
  await plans.keysReached(nodes.length * MODULES_N);
  plans.stop();
  return modules;
}
