// What a filtered push consumer's start costs nats-server 2.9, made and then living through bursts:
// N nodes' consumers of `<node>.>` on one KV stream of 15 keys a node (a node's watch of its values,
// src/client/sources/keyed.ts), each started one way, then one key a node put N at a time, three
// times. Measured (docs/scale.md, issue 34's last section): a consumer that starts with nothing to
// deliver (`new`, or a start sequence past its keys) is flat to make but costs the server three to
// five times more in every burst than one that starts on a key of its own (`all`, `last`, a start
// sequence at its first key), which costs the server a scan of the stream from there to make.
//
//   node --import tsx bench/consumer-start-cost.ts [--nodes 300,1000] [--starts new,last,all,own]
import { loadavg } from 'node:os';
import { connect, createInbox, type NatsConnection } from '@nats-io/transport-node';
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager, type ConsumerConfig } from '@nats-io/jetstream';
import { startNats } from '../test/helpers/nats.ts';
import { cpuSeconds, stringArg } from './lib.ts';

const KEYS = 15;
const ROUNDS = 3;
const SIZES = stringArg('nodes', '300,1000').split(',').map(Number);
const STARTS = stringArg('starts', 'new,last,all,own').split(',');
const node = (i: number) => `n${String(i).padStart(5, '0')}`;

/** The deliver policy of node `i`'s consumer for `start`. */
function startOf(start: string, i: number): Partial<ConsumerConfig> {
  if (start === 'new') return { deliver_policy: DeliverPolicy.New };
  if (start === 'last') return { deliver_policy: DeliverPolicy.Last };
  if (start === 'all') return { deliver_policy: DeliverPolicy.All };
  if (start === 'own') return { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: i * KEYS + 1 };
  throw new Error(`--starts: ${start} is none of new, last, all, own`);
}

/** Makes `n` consumers started as `start` and puts `n` bursts; prints the server's CPU a create and a node a burst. */
async function measure(n: number, start: string): Promise<void> {
  const nats = await startNats('');
  const nc = await connect({ servers: nats.url });
  const conns: NatsConnection[] = [];
  try {
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: 'KV_c', subjects: ['$KV.c.>'], max_msgs_per_subject: 1, allow_direct: true });
    const js = jetstream(nc);
    const puts: Promise<unknown>[] = [];
    for (let i = 0; i < n; i++) for (let k = 0; k < KEYS; k++) puts.push(js.publish(`$KV.c.${node(i)}.m${k % 5}.k${k}`, 'v0'));
    await Promise.all(puts);
    const pid = nats.pid()!;
    let heard = 0;
    let wake: (() => void) | undefined;
    const madeFrom = cpuSeconds(pid);
    for (let i = 0; i < n; i++) {
      const c = await connect({ servers: nats.url });
      conns.push(c);
      const inbox = createInbox();
      c.subscribe(inbox, {
        callback: (_err, m) => {
          if (new TextDecoder().decode(m.data).startsWith('burst')) {
            heard++;
            wake?.();
          }
          // Flow control asks its answer, as nats.js's own consumers give it.
          if (m.reply && m.headers?.code === 100) c.publish(m.reply);
        },
      });
      await c.flush();
      await jsm.consumers.add('KV_c', {
        ...startOf(start, i),
        ack_policy: AckPolicy.None,
        filter_subject: `$KV.c.${node(i)}.>`,
        deliver_subject: inbox,
        flow_control: true,
        idle_heartbeat: 30e9,
        mem_storage: true,
        num_replicas: 1,
        max_deliver: 1,
      });
    }
    const perCreate = ((cpuSeconds(pid) - madeFrom) * 1000) / n;
    const bursts: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      heard = 0;
      const cpu0 = cpuSeconds(pid);
      const t0 = performance.now();
      await Promise.all(Array.from({ length: n }, (_, i) => js.publish(`$KV.c.${node(i)}.m1.k1`, `burst${round}`)));
      while (heard < n) await new Promise<void>((r) => ((wake = r), setTimeout(r, 50)));
      bursts.push(`${(performance.now() - t0).toFixed(0)} ms, ${(((cpuSeconds(pid) - cpu0) * 1000) / n).toFixed(2)} ms a node`);
    }
    console.log(
      `${String(n).padStart(5)} nodes  start ${start.padEnd(5)} server CPU a create ${perCreate.toFixed(2).padStart(6)} ms  bursts: ${bursts.join('; ')}  load ${loadavg()[0]!.toFixed(2)}`,
    );
  } finally {
    for (const c of conns) await c.close();
    await nc.close();
    await nats.cleanup();
  }
}

for (const n of SIZES) for (const start of STARTS) await measure(n, start);
