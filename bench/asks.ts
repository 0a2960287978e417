// Benchmarks runtime asks (issue "Runtime asks"): asks answered per second by one client and the
// latency of one ask, beside the bus's own request/reply floor (an echo responder in its own
// process) measured in the same run.
//
//   node build.mjs && node --import tsx bench/asks.ts [--asks N] [--window N] [--samples N]
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { packTar } from 'modern-tar';
import type { NatsConnection } from '@nats-io/transport-node';
import { connectBus } from '../src/shared/bus/bus.ts';
import { jsonBytes } from '../src/shared/base/bytes.ts';
import { APPLIED } from '../src/shared/contract/buckets.ts';
import { askSubject } from '../src/shared/contract/subjects.ts';
import { INBOX_PREFIXES } from '../src/shared/bus/inbox.ts';
import { fakeEngine, latencyRow, now, numberArg, percentile, startBenchMesh, waitUntil } from './lib.ts';

const ASKS = numberArg('asks', 40_000);
const WINDOW = numberArg('window', 64);
const SAMPLES = numberArg('samples', 5000);
const NODE = 'ask';
const ECHO = 'bench.echo';

/** Sends `total` requests keeping `window` in flight; returns requests per second. */
async function throughput(nc: NatsConnection, subject: string, body: Uint8Array, total: number, window: number): Promise<number> {
  let sent = 0;
  const started = now();
  const lane = async () => {
    while (sent < total) {
      sent++;
      await nc.request(subject, body, { timeout: 5000 });
    }
  };
  await Promise.all(Array.from({ length: window }, lane));
  return total / ((now() - started) / 1000);
}

/** One request at a time: each one's round trip in ms. */
async function latencies(nc: NatsConnection, subject: string, body: Uint8Array, samples: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < samples; i++) {
    const started = now();
    await nc.request(subject, body, { timeout: 5000 });
    out.push(now() - started);
  }
  return out;
}

async function main(): Promise<void> {
  const mesh = await startBenchMesh();
  const echo = spawn(process.execPath, ['--import', 'tsx', join(import.meta.dirname, 'echo.ts'), mesh.url, ECHO], { stdio: ['ignore', 'pipe', 'ignore'] });
  try {
    const { kv, store, kvm } = mesh;
    const body = new TextEncoder().encode('level ${config:level}\n');
    const tar = await packTar([{ header: { name: 't', size: body.length, type: 'file' }, body }]);
    await store.putBlob({ name: 'asked.tar' }, tar);
    await kv.modules.put(
      'asked',
      JSON.stringify({
        module: 'asked',
        build: '1',
        published: true,
        archive: { ref: 'obj://mesh-catalog_archives/asked.tar', digest: 'sha256:' + createHash('sha256').update(tar).digest('hex') },
        provisioning: { files: [{ path: '/srv/asked/t', template: 't' }] },
      }),
    );
    await kv.config.put(`${NODE}.asked.level`, 'info');
    await kv.assignments.put(`${NODE}.asked`, JSON.stringify({ node: NODE, module: 'asked', placement: {} }));
    const socket = join(mesh.dir, 'ask.sock');
    await fakeEngine(socket, () => {});
    mesh.startClient(NODE, socket);
    const applied = await kvm.open(APPLIED);
    await waitUntil('the module applied', async () => (await applied.get(`${NODE}.asked`))?.json<{ state: string }>().state === 'applied', 30_000);
    await new Promise<void>((resolve) => echo.stdout!.once('data', () => resolve()));

    const nc = await connectBus({ servers: [mesh.url], name: 'bench-asker', inboxPrefix: INBOX_PREFIXES.runner(NODE) });
    const ask = jsonBytes({ module: 'asked', kind: 'config', key: 'level' });
    const answer = new TextDecoder().decode((await nc.request(askSubject(NODE), ask, { timeout: 5000 })).data);
    if (answer !== '{"value":"info"}') throw new Error(`the client answered ${answer}`);
    // Warm both paths, then measure them in turn.
    await throughput(nc, ECHO, ask, 2000, WINDOW);
    await throughput(nc, askSubject(NODE), ask, 2000, WINDOW);
    const echoRate = await throughput(nc, ECHO, ask, ASKS, WINDOW);
    const askRate = await throughput(nc, askSubject(NODE), ask, ASKS, WINDOW);
    const echoLat = await latencies(nc, ECHO, ask, SAMPLES);
    const askLat = await latencies(nc, askSubject(NODE), ask, SAMPLES);
    await nc.close();
    const p99 = (xs: number[]) =>
      percentile(
        [...xs].sort((a, b) => a - b),
        99,
      );
    console.log(`asks: ${ASKS} with ${WINDOW} in flight, then ${SAMPLES} one at a time`);
    console.log(`  floor: echo responder                  ${Math.round(echoRate).toLocaleString('en')} req/s`);
    console.log(
      `  client: prov.ask answered              ${Math.round(askRate).toLocaleString('en')} asks/s   (${(echoRate / askRate).toFixed(2)}x the floor's time per request)`,
    );
    console.log(latencyRow('  floor: echo round trip', echoLat));
    console.log(latencyRow('  client: ask round trip', askLat));
    console.log(`  ratio client/floor p99 ${(p99(askLat) / p99(echoLat)).toFixed(2)}x`);
  } finally {
    echo.kill('SIGTERM');
    await mesh.close();
  }
}

await main();
