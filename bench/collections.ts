// Benchmarks a large collection (issue "Collections"): CONTRIBUTORS modules on one node each
// contribute an item to `shell:zsh:normal`, one collector assembles them. One contributor's config
// changes → its item is rewritten → the collector's file reaches the engine. Printed beside the bus
// floor (a KV put → a plain watcher) measured in the same run, with the engine requests the
// collector got per change (the goal: exactly one). Then the collector's report as the bus holds it:
// its size with the file's `from` (DESIGN §14: 64 inputs, then `{more: N}`) beside the same report
// without it, under the connection's max payload (§3's limit).
//
//   node build.mjs && node --import tsx bench/collections.ts [--contributors N] [--changes N]
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { packTar } from 'modern-tar';
import { connectBus } from '../src/shared/bus/bus.ts';
import { watchKv } from '../src/shared/bus/watch/watch.ts';
import { APPLIED, CONFIG } from '../src/shared/contract/buckets.ts';
import type { Report } from '../src/shared/contract/report.ts';
import { fakeEngine, latencyRow, now, numberArg, startBenchMesh, waitUntil } from './lib.ts';

const CONTRIBUTORS = numberArg('contributors', 500);
const CHANGES = numberArg('changes', 300);
const NODE = 'coll';
const COLLECTION = 'shell:zsh:normal';

async function archive(store: Awaited<ReturnType<typeof startBenchMesh>>['store'], name: string, templates: Record<string, string>) {
  const tar = await packTar(
    Object.entries(templates).map(([file, text]) => {
      const body = new TextEncoder().encode(text);
      return { header: { name: file, size: body.length, type: 'file' as const }, body };
    }),
  );
  await store.putBlob({ name }, tar);
  return { ref: `obj://mesh-catalog_archives/${name}`, digest: 'sha256:' + createHash('sha256').update(tar).digest('hex') };
}

async function main(): Promise<void> {
  const mesh = await startBenchMesh();
  try {
    const { kv, store, kvm } = mesh;
    const itemArchive = await archive(store, 'item.tar', { 'item.zsh': 'alias ${config:name}=${config:v}\n' });
    const collectorArchive = await archive(store, 'collector.tar', { zshrc: '# assembled\n${collected:shell:zsh:normal}' });
    const names = Array.from({ length: CONTRIBUTORS }, (_, i) => `c${String(i).padStart(4, '0')}`);
    for (const name of names) {
      await kv.modules.put(
        name,
        JSON.stringify({
          module: name,
          build: '1',
          published: true,
          archive: itemArchive,
          provisioning: { items: [{ collection: COLLECTION, template: 'item.zsh' }] },
        }),
      );
      await kv.config.put(`${NODE}.${name}.name`, name);
      await kv.config.put(`${NODE}.${name}.v`, 'v0');
      await kv.assignments.put(`${NODE}.${name}`, JSON.stringify({ node: NODE, module: name, placement: {} }));
    }
    await kv.modules.put(
      'rc',
      JSON.stringify({
        module: 'rc',
        build: '1',
        published: true,
        archive: collectorArchive,
        provisioning: { files: [{ path: '/etc/zsh/zshrc', template: 'zshrc', change: 'reload' }], collections: [{ name: COLLECTION, comment: '#' }] },
      }),
    );
    await kv.assignments.put(`${NODE}.rc`, JSON.stringify({ node: NODE, module: 'rc', placement: {} }));

    let collectorRequests = 0;
    const waiters = new Map<string, (t: number) => void>();
    const socket = join(mesh.dir, 'coll.sock');
    await fakeEngine(socket, (req) => {
      if (req.module !== 'rc') return;
      collectorRequests++;
      const t = now();
      const content = req.files[0]?.content;
      if (typeof content !== 'string') return;
      for (const [needle, resolve] of waiters)
        if (content.includes(needle)) {
          waiters.delete(needle);
          resolve(t);
        }
    });
    const started = now();
    const client = mesh.startClient(NODE, socket);
    const applied = await kvm.open(APPLIED);
    const lastContributor = names.at(-1)!;
    const full = `alias ${lastContributor}=v0\n`;
    await new Promise<void>((resolve) => waiters.set(full, () => resolve()));
    console.log(
      `collection of ${CONTRIBUTORS} contributors on one node: client start → collector file with every item ${((now() - started) / 1000).toFixed(2)} s`,
    );
    await waitUntil('rc applied', async () => (await applied.get(`${NODE}.rc`))?.json<{ state: string }>().state === 'applied', 60_000);

    const floorNc = await connectBus({ servers: [mesh.url], name: 'bench-floor' });
    reportRow((await applied.get(`${NODE}.rc`))!.value, floorNc.info?.max_payload ?? 0);
    const floorSeen = new Map<string, (t: number) => void>();
    const floorWatch = await watchKv(floorNc, CONFIG, `${NODE}.*.v`, (e) => {
      const t = now();
      floorSeen.get(e.value ? new TextDecoder().decode(e.value) : '')?.(t);
    });
    await floorWatch.caughtUp;
    // Let the start settle, then count from a quiet point.
    await new Promise((r) => setTimeout(r, 500));
    const before = collectorRequests;
    const fill: number[] = [];
    const floor: number[] = [];
    for (let i = 1; i <= CHANGES; i++) {
      const name = names[(i * 7919) % names.length]!;
      const value = `v${i}`;
      const engineAt = new Promise<number>((resolve) => waiters.set(`alias ${name}=${value}\n`, resolve));
      const floorAt = new Promise<number>((resolve) => floorSeen.set(value, resolve));
      const put = now();
      await mesh.kv.config.put(`${NODE}.${name}.v`, value);
      const [e, f] = await Promise.all([engineAt, floorAt]);
      floorSeen.delete(value);
      fill.push(e - put);
      floor.push(f - put);
    }
    await new Promise((r) => setTimeout(r, 500));
    floorWatch.stop();
    await floorNc.close();
    client.kill('SIGTERM');
    console.log(`one item changed → collector file at the engine, over ${CHANGES} changes (client --settle 0)`);
    console.log(latencyRow('  floor: KV put → watcher', floor));
    console.log(latencyRow('  client: config put → collector file', fill));
    console.log(
      `  engine requests for the collector per change: ${((collectorRequests - before) / CHANGES).toFixed(2)} (${collectorRequests - before} for ${CHANGES})`,
    );
  } finally {
    await mesh.close();
  }
}

/** Prints the collector's report: its bytes with its file's `from` and without, and what the `from` lists. */
function reportRow(bytes: Uint8Array, maxPayload: number): void {
  const report = JSON.parse(new TextDecoder().decode(bytes)) as Report;
  const from = report.files[0]?.from ?? [];
  const bare = { ...report, files: report.files.map(({ from: _from, ...file }) => file) };
  const more = from.find((i) => 'more' in i);
  console.log(
    `the collector's report as the bus holds it: ${bytes.length} bytes with its file's from, ${Buffer.byteLength(JSON.stringify(bare))} without (the connection's max payload: ${maxPayload} bytes)`,
  );
  console.log(`  its from lists ${from.length - (more ? 1 : 0)} inputs (the archive first), then ${more ? JSON.stringify(more) : 'nothing more'}`);
}

await main();
