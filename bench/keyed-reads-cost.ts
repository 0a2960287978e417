// What a client's keyed reads (src/client/sources/keyed.ts) cost nats-server against one whole read
// of the node's keys, as the stream grows: the rule WHOLE_READ_KEYS is chosen from these figures.
// Run: node --import tsx bench/keyed-reads-cost.ts [subjects,…]
import { loadavg } from 'node:os';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { watchKv } from '../src/shared/bus/watch/watch.ts';
import { startNats } from '../test/helpers/nats.ts';
import { cpuSeconds } from './lib.ts';

const BIG = 1024;
for (const subjects of (process.argv[2] ?? '20000,100000').split(',').map(Number)) {
  const nats = await startNats('');
  const nc = await connect({ servers: nats.url });
  const kv = await new Kvm(nc).create('cfg', { history: 1 });
  const puts: Promise<unknown>[] = [];
  const put = async (key: string) => {
    puts.push(kv.put(key, '4'));
    if (puts.length >= 2000) await Promise.all(puts.splice(0));
  };
  for (let i = 0; i < BIG; i++) await put(`big.m${i}.workers`);
  for (let i = 0; i < subjects - BIG; i++) await put(`n${Math.floor(i / 5)}.m${i % 5}.workers`);
  await Promise.all(puts);
  const jsm = await jetstreamManager(nc);
  const pid = nats.pid()!;
  // Each op REPEATS times: the server's CPU is read in 10 ms ticks.
  const REPEATS = 20;
  const measure = async (label: string, op: () => Promise<unknown>) => {
    const c0 = cpuSeconds(pid);
    const t0 = performance.now();
    for (let i = 0; i < REPEATS; i++) await op();
    const cpu = ((cpuSeconds(pid) - c0) * 1000) / REPEATS;
    const wall = (performance.now() - t0) / REPEATS;
    console.log(
      `${String(subjects).padStart(7)} subj  ${label.padEnd(40)} server CPU ${cpu.toFixed(1).padStart(6)} ms  wall ${wall.toFixed(1).padStart(6)} ms  load ${loadavg()[0]!.toFixed(2)}`,
    );
  };
  for (const k of [16, 64, 256, 1024]) {
    await measure(`${k} direct gets, pipelined`, () =>
      Promise.all(Array.from({ length: k }, (_, i) => jsm.direct.getMessage('KV_cfg', { last_by_subj: `$KV.cfg.big.m${i}.workers` }))),
    );
  }
  await measure(`one whole read of big.> (${BIG} keys)`, async () => {
    const w = await watchKv(nc, 'cfg', 'big.>', () => {});
    await w.caughtUp;
    w.stop();
  });
  await measure(`one whole read of n1.> (5 keys)`, async () => {
    const w = await watchKv(nc, 'cfg', 'n1.>', () => {});
    await w.caughtUp;
    w.stop();
  });
  await measure(`a tail watch of n1.>`, async () => {
    const w = await watchKv(nc, 'cfg', 'n1.>', () => {}, undefined, { from: 'tail' });
    await w.caughtUp;
    w.stop();
  });
  await nc.close();
  await nats.cleanup();
}
