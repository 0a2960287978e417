// What each bus operation a client's start can make costs nats-server (issue 34): its CPU per
// operation, read from /proc, as a stream's subjects grow. The stream is a KV bucket laid out as the
// seat writes plans (module by module over the fleet, so a node's keys are spread over the stream,
// `n<i>.m<j>`), and an object store whose objects grow alike (the archive a client fetches first or
// last of them). The table is what the client's reads are chosen from (docs/scale.md, issue 34).
//
//   npm run bench -- bus-cost [--subjects 10000,100000] [--ops 50]
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager, type ConsumerConfig, type JetStreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { Objm } from '@nats-io/obj';
import { loadavg } from 'node:os';
import { startNats } from '../test/helpers/nats.ts';
import { directObjectReader } from '../src/client/archive/direct.ts';
import { cpuSeconds, numberArg, stringArg } from './lib.ts';
import { bytes, putAll } from './fleet-load.ts';

const SIZES = stringArg('subjects', '10000,100000').split(',').map(Number);
/** Operations measured per row (each row's CPU is their mean). */
const OPS = numberArg('ops', 50);
const MODULES = 5;
const KV = 'cost';
const STREAM = `KV_${KV}`;
const OBJ = 'archives';

/** One operation of a row, given its index (each index picks another node). */
type Op = (i: number) => Promise<unknown>;

/** A row: what it is and how one of it is made. */
type Row = { what: string; op: Op };

/** Fills the KV bucket with `subjects` keys, module by module over the nodes, as the seat writes plans. */
async function loadKv(nc: NatsConnection, nodes: number): Promise<void> {
  await new Kvm(nc).create(KV, { history: 1 });
  await putAll(
    nc,
    KV,
    (function* () {
      for (let m = 0; m < MODULES; m++) for (let n = 0; n < nodes; n++) yield [`n${n}.m${m}`, bytes('x'.repeat(100))] as [string, Uint8Array];
    })(),
  );
}

/**
 * Fills the object store with `subjects` subjects: a real archive (3 chunks) first, then objects of
 * one chunk each written as the object store writes them (chunk, then meta), then another archive last.
 */
async function loadObjects(nc: NatsConnection, subjects: number): Promise<void> {
  const store = await new Objm(nc).create(OBJ);
  const archive = new Uint8Array(300 * 1024).map((_, i) => i % 251);
  await store.putBlob({ name: 'first.tar', options: { max_chunk_size: 128 * 1024 } }, archive);
  const js = jetstream(nc);
  const inFlight: Promise<unknown>[] = [];
  for (let i = 0; i < subjects / 2; i++) {
    const nuid = `filler${i}`;
    inFlight.push(js.publish(`$O.${OBJ}.C.${nuid}`, bytes('y'.repeat(100))));
    const meta = { name: `f${i}`, bucket: OBJ, nuid, size: 100, chunks: 1, digest: 'SHA-256=' };
    inFlight.push(js.publish(`$O.${OBJ}.M.${Buffer.from(`f${i}`).toString('base64url')}`, bytes(JSON.stringify(meta))));
    if (inFlight.length >= 512) await Promise.all(inFlight.splice(0));
  }
  await Promise.all(inFlight);
  await store.putBlob({ name: 'last.tar', options: { max_chunk_size: 128 * 1024 } }, archive);
}

/** A consumer create (and its delete, whose cost is flat) as a client's watch makes it. */
function create(jsm: JetStreamManager, config: (i: number) => Partial<ConsumerConfig>): Op {
  return async (i) => {
    const ci = await jsm.consumers.add(STREAM, { ack_policy: AckPolicy.None, inactive_threshold: 5e9, mem_storage: true, ...config(i) });
    await jsm.consumers.delete(STREAM, ci.name);
  };
}

/** Every row measured on a stream of `nodes × 5` subjects. */
function rows(nc: NatsConnection, jsm: JetStreamManager, nodes: number): Row[] {
  const last = nodes * MODULES;
  const node = (i: number) => `n${(i * 37) % nodes}`;
  const wild = (i: number) => `$KV.${KV}.${node(i)}.>`;
  const literal = (i: number) => `$KV.${KV}.${node(i)}.m1`;
  const read = directObjectReader(nc);
  const kv = new Kvm(nc).open(KV);
  const direct =
    (q: (i: number) => object): Op =>
    (i) =>
      jsm.direct.getMessage(STREAM, q(i) as never);
  return [
    {
      what: 'create, wildcard `<node>.>`, deliver all (the watch from sequence 1)',
      op: create(jsm, (i) => ({ filter_subject: wild(i), deliver_policy: DeliverPolicy.All })),
    },
    { what: 'create, wildcard, deliver last_per_subject', op: create(jsm, (i) => ({ filter_subject: wild(i), deliver_policy: DeliverPolicy.LastPerSubject })) },
    { what: 'create, wildcard, deliver last', op: create(jsm, (i) => ({ filter_subject: wild(i), deliver_policy: DeliverPolicy.Last })) },
    {
      what: 'create, wildcard, by_start_seq = last − 100',
      op: create(jsm, (i) => ({ filter_subject: wild(i), deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: last - 100 })),
    },
    {
      what: 'create, wildcard, by_start_seq = last + 1 (the tail)',
      op: create(jsm, (i) => ({ filter_subject: wild(i), deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: last + 1 })),
    },
    { what: 'create, wildcard, deliver new', op: create(jsm, (i) => ({ filter_subject: wild(i), deliver_policy: DeliverPolicy.New })) },
    { what: 'create, literal key, deliver all', op: create(jsm, (i) => ({ filter_subject: literal(i), deliver_policy: DeliverPolicy.All })) },
    { what: 'create, literal key, deliver last', op: create(jsm, (i) => ({ filter_subject: literal(i), deliver_policy: DeliverPolicy.Last })) },
    {
      what: 'create, literal key, deliver last_per_subject',
      op: create(jsm, (i) => ({ filter_subject: literal(i), deliver_policy: DeliverPolicy.LastPerSubject })),
    },
    { what: 'create, no filter, deliver new', op: create(jsm, () => ({ deliver_policy: DeliverPolicy.New })) },
    { what: 'direct get last_by_subj, literal key', op: direct((i) => ({ last_by_subj: literal(i) })) },
    { what: 'direct get next_by_subj, literal key, from seq 1', op: direct((i) => ({ next_by_subj: literal(i), seq: 1 })) },
    { what: 'direct get next_by_subj, wildcard `<node>.>`, from seq 1', op: direct((i) => ({ next_by_subj: wild(i), seq: 1 })) },
    { what: 'archive fetch (meta last_by_subj + 3 chunks next_by_subj), the first object', op: () => read(OBJ, 'first.tar', 1 << 20) },
    { what: 'archive fetch, the last object', op: () => read(OBJ, 'last.tar', 1 << 20) },
    { what: 'stream info', op: () => jsm.streams.info(STREAM) },
    { what: 'stream info, subjects_filter `<node>.>`', op: (i) => jsm.streams.info(STREAM, { subjects_filter: wild(i) }) },
    { what: 'KV put (one key, acked)', op: async (i) => (await kv).put(`${node(i)}.m1`, bytes('z'.repeat(100))) },
  ];
}

/**
 * The server's CPU (ms) and the wall time (ms) per operation, one after another: at least OPS of
 * them, more until the server's CPU has moved 30 clock ticks (/proc counts CPU in 10 ms ticks) or
 * 3 s have passed, so a cheap operation's mean is not a tick's rounding.
 */
async function measure(pid: number, op: Op): Promise<{ cpuMs: number; wallMs: number }> {
  await op(OPS); // warm: the first of a kind pays for what every later one reuses
  const c0 = cpuSeconds(pid);
  const t0 = performance.now();
  let n = 0;
  while (n < OPS || (cpuSeconds(pid) - c0 < 0.3 && performance.now() - t0 < 3000)) await op(n++);
  return { cpuMs: ((cpuSeconds(pid) - c0) * 1000) / n, wallMs: (performance.now() - t0) / n };
}

/** Measures every row on a fresh server of `subjects` subjects in each stream. */
async function runSize(subjects: number): Promise<Map<string, { cpuMs: number; wallMs: number }>> {
  const nats = await startNats('');
  const nc = await connect({ servers: nats.url, name: 'bench-bus-cost' });
  try {
    const nodes = Math.round(subjects / MODULES);
    await loadKv(nc, nodes);
    await loadObjects(nc, subjects);
    const jsm = await jetstreamManager(nc, { timeout: 30_000 });
    const out = new Map<string, { cpuMs: number; wallMs: number }>();
    for (const row of rows(nc, jsm, nodes)) out.set(row.what, await measure(nats.pid()!, row.op));
    return out;
  } finally {
    await nc.close();
    await nats.cleanup();
  }
}

async function main(): Promise<void> {
  const started = performance.now();
  const load = loadavg()[0]!.toFixed(2);
  const all = [];
  for (const size of SIZES) all.push(await runSize(size));
  const fmt = (x: { cpuMs: number; wallMs: number } | undefined) => (x ? `${x.cpuMs.toFixed(2)} ms (wall ${x.wallMs.toFixed(2)})` : '');
  const head = SIZES.map((s) => `${s.toLocaleString('en')} subjects`);
  console.log(`nats-server CPU per operation (mean of ${OPS}), ${new Date().toISOString().slice(0, 10)}, load average ${load} → ${loadavg()[0]!.toFixed(2)}`);
  console.log(
    `KV stream: n<i>.m<j>, module by module; object store: ${SIZES.join(' / ')} subjects of one-chunk objects between a first and a last archive of 3 chunks\n`,
  );
  console.log(`| operation | ${head.join(' | ')} | growth |`);
  console.log(`|---|${head.map(() => '---|').join('')}---|`);
  for (const what of all[0]!.keys()) {
    const xs = all.map((m) => m.get(what));
    const growth = xs.length > 1 && xs[0]!.cpuMs > 0 ? `×${(xs.at(-1)!.cpuMs / xs[0]!.cpuMs).toFixed(1)}` : '';
    console.log(`| ${what} | ${xs.map(fmt).join(' | ')} | ${growth} |`);
  }
  console.log(`\n(${((performance.now() - started) / 1000).toFixed(0)} s in all)`);
}

await main();
