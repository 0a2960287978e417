// The bus's cold floor of bench/latency.ts's scale rows, as a process of its own (bundled by
// bench/cold-floor.ts, spawned fresh as the client is): what the bus must do for a node's cold start
// with none of the mesh's work. A plain nats.js connection reads the node's plans and its config
// values through two filtered watches, reads each plan's archive (with `--archives`: the two direct
// gets a client's archive read costs, DESIGN §7.1), and writes one report-sized entry a module (with
// `--needs N:BYTES`, also N need-sized entries a module in the needs bucket, as DESIGN §7 point 2 has
// the client record what each module needs), every put in flight at once; then says
// `done <plans> <its CPU in µs>`.
//
//   node floor.mjs URL NODE FLOOR_NODE REPORT_BYTES [--archives] [--needs N:BYTES]
import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import { APPLIED, CONFIG, NEEDS, PLANS } from '../src/shared/contract/buckets.ts';

/** Reads every key of `<node>.>` in `kv` through a plain watch; resolves with the values once it has caught up. */
async function readAll(kv: KV, node: string): Promise<Uint8Array[]> {
  const values: Uint8Array[] = [];
  const watch = await kv.watch({ key: `${node}.>` });
  for await (const e of watch) {
    values.push(e.value);
    if (e.delta === 0) break;
  }
  watch.stop();
  return values;
}

/** Reads the archive a plan names as the client reads it: its meta, then its one chunk, by direct get. */
async function readArchive(jsm: JetStreamManager, plan: Uint8Array): Promise<number> {
  const ref = (JSON.parse(new TextDecoder().decode(plan)) as { archive: { ref: string } }).archive.ref;
  const [, bucket, name] = /^obj:\/\/([^/]+)\/(.+)$/.exec(ref)!;
  const stream = `OBJ_${bucket}`;
  const encoded = Buffer.from(name!).toString('base64url');
  const padded = encoded + '='.repeat((4 - (encoded.length % 4)) % 4);
  const meta = await jsm.direct.getMessage(stream, { last_by_subj: `$O.${bucket}.M.${padded}` });
  const nuid = (JSON.parse(new TextDecoder().decode(meta!.data)) as { nuid: string }).nuid;
  const chunk = await jsm.direct.getMessage(stream, { seq: 1, next_by_subj: `$O.${bucket}.C.${nuid}` });
  return chunk!.data.length;
}

async function main(): Promise<void> {
  const [url, node, floorNode, reportBytes, ...flags] = process.argv.slice(2);
  const needsFlag = flags.indexOf('--needs');
  const [needsEach, needBytes] = needsFlag >= 0 ? flags[needsFlag + 1]!.split(':').map(Number) : [0, 0];
  const nc = await connect({ servers: url! });
  const kvm = new Kvm(jetstream(nc));
  const [plans, config, applied, needs] = await Promise.all([kvm.open(PLANS), kvm.open(CONFIG), kvm.open(APPLIED), kvm.open(NEEDS)]);
  const [planValues] = await Promise.all([readAll(plans, node!), readAll(config, node!)]);
  if (flags.includes('--archives')) {
    const jsm = await jetstreamManager(nc, { checkAPI: false });
    await Promise.all(planValues.map((p) => readArchive(jsm, p)));
  }
  const report = new Uint8Array(Number(reportBytes)).fill(0x20);
  const need = new Uint8Array(needBytes!).fill(0x20);
  await Promise.all([
    ...planValues.map((_, i) => applied.put(`${floorNode}.s${i}`, report)),
    ...planValues.flatMap((_, i) => Array.from({ length: needsEach! }, (_n, j) => needs.put(`${floorNode}.s${i}.config.n${j}`, need))),
  ]);
  const used = process.cpuUsage();
  process.stdout.write(`done ${planValues.length} ${used.user + used.system}\n`);
  await nc.close();
}

await main();
