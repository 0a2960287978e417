// Who creates buckets and what a program binds (DESIGN §3, §11, issue 18 item 1): `init` makes every
// bucket with exactly its own subject, hardened, with a bounded max_consumers; the seat, the client
// and a provider refuse a bucket that holds more — a second subject, a mirror, a source, no
// hardening — naming the bucket and the difference, and exit 1 when they find it at start.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import { DiscardPolicy, jetstreamManager, StorageType, type StreamConfig } from '@nats-io/jetstream';
import { nanos, type NatsConnection } from '@nats-io/transport-node';
import { connectBus } from '../src/shared/bus/bus.ts';
import { BUCKET_API_TIMEOUT_MS, BucketRefusedError, ensureBucket, refuseBadBucket, STREAM_READ_ASK_MS } from '../src/shared/bus/bucket-bind.ts';
import { isTimeout } from '../src/shared/base/errors.ts';
import { paceOf } from '../src/shared/bus/watch/pace.ts';
import { runInit } from '../src/server/commands/init/command.ts';
import { bucketProblems, kvBucket, maxConsumersFor, objBucket, ownSubject, streamConfigOf, streamOf } from '../src/shared/contract/bucket-spec.ts';
import { meshBuckets, PLANS, REGISTRY_BUCKET } from '../src/shared/contract/buckets.ts';
import { memoryLogger } from '../src/shared/cli/log.ts';
import { runProvider } from '../src/sdk/provider.ts';
import { INBOX_PREFIXES } from '../src/server/commands/bus-config/config.ts';
import { USERS } from '../src/server/commands/bus-config/users.ts';
import { cleanupBundles, ensureBuilt, ROOT, runBundle, startBundle } from './helpers/bundle.ts';
import { startIsolatedMesh, startMeshBus } from './helpers/isolated-mesh.ts';
import { startNats, type NatsServer } from './helpers/nats.ts';
import { waitFor } from './helpers/wait.ts';
import { startGeneratedCluster } from './helpers/generated-cluster.ts';

const KV_EXACT = streamConfigOf(kvBucket('b'), { replicas: 1, maxConsumers: 10 }) as StreamConfig;

test('a key/value bucket made as init makes it has no problem; each thing more is named', () => {
  const spec = kvBucket('b');
  assert.equal(bucketProblems(spec, KV_EXACT), []);
  const texts = (config: Partial<StreamConfig>) => bucketProblems(spec, config).map((p) => `${p.fixable ? 'fixable' : 'refused'}: ${p.text}`);
  assert.equal(texts({ ...KV_EXACT, subjects: ['$KV.b.>', '_R_.>'] }), ['refused: holds "_R_.>" besides its own subject $KV.b.>']);
  assert.equal(texts({ ...KV_EXACT, subjects: ['_R_.>'] }), [
    'refused: holds "_R_.>" besides its own subject $KV.b.>',
    'refused: does not hold its own subject $KV.b.>',
  ]);
  assert.equal(texts({ ...KV_EXACT, sources: [{ name: 'other' }] }), ['refused: sources "other"']);
  assert.equal(texts({ ...KV_EXACT, subjects: [], mirror: { name: 'other' } }), [
    'refused: does not hold its own subject $KV.b.>',
    'refused: mirrors stream "other"',
  ]);
  assert.equal(texts({ ...KV_EXACT, republish: { src: '>', dest: 'out.>' } }), ['refused: republishes ">" to "out.>"']);
  assert.equal(texts({ ...KV_EXACT, deny_purge: false, allow_rollup_hdrs: true }), [
    'fixable: has allow_rollup_hdrs true (wants false)',
    'fixable: has deny_purge false (wants true)',
  ]);
});

test('an archives store holds its own subject, whole or as the library splits it, and nothing else', () => {
  const spec = objBucket('arch');
  assert.is(ownSubject(spec), '$O.arch.>');
  assert.equal(bucketProblems(spec, { subjects: ['$O.arch.>'] }), []);
  assert.equal(bucketProblems(spec, { subjects: ['$O.arch.C.>', '$O.arch.M.>'] }), []);
  assert.equal(
    bucketProblems(spec, { subjects: ['$O.arch.>', '$O.other.>'] }).map((p) => p.text),
    ['holds "$O.other.>" besides its own subject $O.arch.>'],
  );
});

test('the bound on consumers grows with the nodes', () => {
  assert.ok(maxConsumersFor(2) > 0 && maxConsumersFor(200) > maxConsumersFor(2));
});

/** A bus without isolation, its admin connection, and the JetStream manager. */
async function openBus(): Promise<{ nats: NatsServer; nc: NatsConnection; close(): Promise<void> }> {
  const nats = await startNats();
  const nc = await connectBus({ servers: [nats.url], name: 'test' });
  return {
    nats,
    nc,
    async close() {
      await nc.close();
      await nats.cleanup();
    },
  };
}

/** Runs `node dist/server.js init` against `url` with `args`. */
function init(url: string, args: string[] = []) {
  ensureBuilt('server');
  return runBundle('node', ROOT, 'dist/server', ['init', '--nats', url, ...args], {}, 20_000);
}

test('a bucket checked twice on one connection within 5 s is asked of the bus once; a failed check is asked again', async () => {
  const server = await startNats();
  const nc = await connectBus({ servers: [server.url], name: 'test' });
  try {
    await (await jetstreamManager(nc)).streams.add(streamConfigOf(kvBucket('once'), { replicas: 1, maxConsumers: 10 }) as StreamConfig);
    const asked: string[] = [];
    const sub = nc.subscribe('$JS.API.STREAM.INFO.>', { callback: (_e, m) => void asked.push(m.subject) });
    await nc.flush();
    await Promise.all([refuseBadBucket(nc, kvBucket('once')), refuseBadBucket(nc, kvBucket('once'))]);
    await refuseBadBucket(nc, kvBucket('once'));
    const other = await connectBus({ servers: [server.url], name: 'other' });
    await refuseBadBucket(other, kvBucket('once'));
    await other.close();
    await nc.flush();
    assert.equal(asked, ['$JS.API.STREAM.INFO.KV_once', '$JS.API.STREAM.INFO.KV_once'], 'once a connection');
    // A refused bucket is refused again, asked each time: it may have been mended meanwhile.
    await (
      await jetstreamManager(nc)
    ).streams.add({ ...(streamConfigOf(kvBucket('bad'), { replicas: 1, maxConsumers: 10 }) as StreamConfig), subjects: ['$KV.bad.>', '_R_.>'] });
    for (let i = 0; i < 2; i++)
      await refuseBadBucket(nc, kvBucket('bad')).then(
        () => assert.unreachable('refused'),
        (err: Error) => assert.instance(err, BucketRefusedError),
      );
    await nc.flush();
    assert.is(asked.filter((s) => s.endsWith('KV_bad')).length, 2);
    sub.unsubscribe();
  } finally {
    await nc.close();
    await server.cleanup();
  }
});

test('a check the bus leaves unanswered until its timeout answers for the checks just after it, not asked again', async () => {
  // A site's leaf server carried a stream info a node may not read to the hub, where nothing answers it:
  // here a bus without JetStream, where a subscriber that never answers stands for the hub.
  const server = await startNats('', { whole: ({ listen }) => `listen: ${JSON.stringify(listen)}\n` });
  const nc = await connectBus({ servers: [server.url], name: 'test' });
  try {
    const asked: string[] = [];
    const sub = nc.subscribe('$JS.API.STREAM.INFO.>', { callback: (_e, m) => void asked.push(m.subject) });
    await nc.flush();
    const first = Date.now();
    await refuseBadBucket(nc, kvBucket('silent'));
    assert.ok(Date.now() - first >= BUCKET_API_TIMEOUT_MS - 100, 'the first check waited out its timeout');
    const again = Date.now();
    await refuseBadBucket(nc, kvBucket('silent'));
    assert.ok(Date.now() - again < 1000, `answered by the first check (took ${Date.now() - again} ms)`);
    await nc.flush();
    // The first check asked again every STREAM_READ_ASK_MS (a stream choosing a leader answers the next ask); the second asked nothing.
    assert.equal(asked, Array(BUCKET_API_TIMEOUT_MS / STREAM_READ_ASK_MS).fill('$JS.API.STREAM.INFO.KV_silent'));
    sub.unsubscribe();
  } finally {
    await nc.close();
    await server.cleanup();
  }
});

test('a stream read left unanswered is asked again every 0.5 s: a stream choosing its leader is checked within 0.5 s of having one, and a replica its leader has not heard from tells the watches on the connection the cluster is failing over', async () => {
  const { nc, close } = await busWithoutJetStream();
  try {
    const config = streamConfigOf(kvBucket('b'), { replicas: 3, maxConsumers: 10 });
    const cluster = {
      leader: 's1',
      replicas: [
        { name: 's2', current: true, active: 300e6 },
        { name: 's3', current: false, active: 4000e6 },
      ],
    };
    let asks = 0;
    // The stream has no leader for its first two reads, as while its peers elect one after a kill.
    nc.subscribe('$JS.API.STREAM.INFO.KV_b', {
      callback: (_e, m) => {
        if (++asks <= 2) return;
        m.respond(
          new TextEncoder().encode(
            JSON.stringify({ type: 'io.nats.jetstream.api.v1.stream_info_response', config, cluster, created: new Date().toISOString(), state: {} }),
          ),
        );
      },
    });
    await nc.flush();
    assert.not.ok(paceOf(nc).unsettled());
    const started = Date.now();
    await refuseBadBucket(nc, kvBucket('b'));
    const took = Date.now() - started;
    assert.ok(took >= 2 * STREAM_READ_ASK_MS - 100 && took < 3 * STREAM_READ_ASK_MS, `checked on the third ask, ${took} ms after the first`);
    assert.ok(paceOf(nc).unsettled(), 's3 is behind and unheard for 4 s: its server counts as gone');
  } finally {
    await close();
  }
});

/**
 * A JetStream API on a bus without JetStream, answering stream infos and creates as nats-server
 * does, except the creates `unanswered` picks (by stream and how many creates of it were asked,
 * from 1), which get no answer; `madeAnyway` makes such a create still make the stream, as a slow
 * cluster's does. Returns what was asked, `<info|create> <stream>` in order.
 */
function standInJetStream(nc: NatsConnection, unanswered: (stream: string, nth: number) => boolean, madeAnyway = false): string[] {
  const made = new Map<string, unknown>();
  const asked: string[] = [];
  const json = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
  const streamOf = (subject: string) => subject.slice(subject.lastIndexOf('.') + 1);
  nc.subscribe('$JS.API.STREAM.INFO.*', {
    callback: (_e, m) => {
      const stream = streamOf(m.subject);
      asked.push(`info ${stream}`);
      const config = made.get(stream);
      const found = { config, created: new Date().toISOString(), state: {} };
      const missing = { error: { code: 404, err_code: 10059, description: 'stream not found' } };
      m.respond(json({ type: 'io.nats.jetstream.api.v1.stream_info_response', ...(config ? found : missing) }));
    },
  });
  nc.subscribe('$JS.API.STREAM.CREATE.*', {
    callback: (_e, m) => {
      const stream = streamOf(m.subject);
      asked.push(`create ${stream}`);
      const nth = asked.filter((a) => a === `create ${stream}`).length;
      const config = JSON.parse(new TextDecoder().decode(m.data)) as unknown;
      if (!unanswered(stream, nth) || madeAnyway) made.set(stream, config);
      if (unanswered(stream, nth)) return;
      m.respond(json({ type: 'io.nats.jetstream.api.v1.stream_create_response', config, created: new Date().toISOString(), state: {} }));
    },
  });
  return asked;
}

/** A bus without JetStream (the stand-in answers for it) and a connection to it. */
async function busWithoutJetStream(): Promise<{ nc: NatsConnection; close(): Promise<void> }> {
  const server = await startNats('', { whole: (w) => `listen: "${w.listen}"\n` });
  const nc = await connectBus({ servers: [server.url], name: 'test' });
  return { nc, close: () => nc.close().then(() => server.cleanup()) };
}

test('a stream create the bus leaves unanswered is asked again, after looking whether it was made; past three asks it fails', async () => {
  const size = { replicas: 1, maxConsumers: 10 };
  const timing = { timeoutMs: 300, asks: 3 };
  /** Runs `fn` on a bus of its own whose stand-in JetStream leaves unanswered what `unanswered` picks. */
  const onBus = async (
    unanswered: (stream: string, nth: number) => boolean,
    madeAnyway: boolean,
    fn: (nc: NatsConnection, asked: string[]) => Promise<void>,
  ) => {
    const { nc, close } = await busWithoutJetStream();
    try {
      const asked = standInJetStream(nc, unanswered, madeAnyway);
      await nc.flush();
      await fn(nc, asked);
    } finally {
      await close();
    }
  };
  await onBus(
    (s, nth) => s === 'KV_late' && nth === 1,
    false,
    async (nc, asked) => {
      const warned: string[] = [];
      assert.is(await ensureBucket(nc, kvBucket('late'), size, (l) => warned.push(l), timing), 'created');
      assert.equal(asked, ['info KV_late', 'create KV_late', 'info KV_late', 'create KV_late']);
      assert.match(warned.join('\n'), /bucket late: unanswered within 300 ms; asking again \(2 more at most\)/);
    },
  );
  await onBus(
    (s, nth) => s === 'KV_slow' && nth === 1,
    true,
    async (nc, asked) => {
      assert.is(await ensureBucket(nc, kvBucket('slow'), size, undefined, timing), 'found', 'the unanswered create made it: found, not made twice');
      assert.equal(asked, ['info KV_slow', 'create KV_slow', 'info KV_slow']);
    },
  );
  await onBus(
    () => true,
    false,
    async (nc, asked) => {
      await ensureBucket(nc, kvBucket('never'), size, undefined, timing).then(
        () => assert.unreachable('never answered'),
        (err: Error) => assert.ok(isTimeout(err), err.message),
      );
      assert.is(asked.filter((a) => a === 'create KV_never').length, 3);
    },
  );
});

test('init asks again for a bucket the bus leaves unanswered, saying so, and makes every bucket', async () => {
  const { nc, close } = await busWithoutJetStream();
  try {
    const plans = streamOf(kvBucket(PLANS));
    const asked = standInJetStream(nc, (s, nth) => s === plans && nth === 1);
    await nc.flush();
    const said: string[] = [];
    const req = { replicas: 1, replicasFrom: '--replicas', providers: [], nodes: 2, archives: 'mesh-catalog_archives', timeoutMs: 10_000 };
    assert.is(await runInit(nc, req, (l) => said.push(l), { callMs: 300 }), 0, said.join('\n'));
    assert.match(said.join('\n'), new RegExp(`bucket ${PLANS}: unanswered within 300 ms; asking again`));
    assert.is(asked.filter((a) => a === `create ${plans}`).length, 2);
    assert.match(said.at(-1)!, /buckets ready/);
  } finally {
    await close();
  }
});

test('init makes every bucket of the mesh exactly, and a second run finds them as they should be', async () => {
  const bus = await openBus();
  try {
    const first = await init(bus.nats.url, ['--provider', 'pg', '--nodes', '3']);
    assert.is(first.code, 0, first.stdout + first.stderr);
    const jsm = await jetstreamManager(bus.nc);
    for (const spec of meshBuckets(['pg'], 'mesh-catalog_archives')) {
      const config = (await jsm.streams.info(`${spec.kind === 'kv' ? 'KV' : 'OBJ'}_${spec.name}`)).config;
      assert.equal(bucketProblems(spec, config), [], spec.name);
      assert.is(config.max_consumers, maxConsumersFor(3), `${spec.name} max_consumers`);
      assert.equal(config.subjects, [ownSubject(spec)], spec.name);
    }
    assert.match(first.stdout, /created bucket pg_bound/);
    const second = await init(bus.nats.url, ['--provider', 'pg', '--nodes', '3']);
    assert.is(second.code, 0, second.stdout + second.stderr);
    assert.is(second.stdout.match(/is as it should be/g)?.length, 11, second.stdout);
  } finally {
    await bus.close();
  }
});

test('init refuses a bucket that holds a second subject, naming it, hardens one that lacks the hardening, and makes the rest', async () => {
  const bus = await openBus();
  try {
    const jsm = await jetstreamManager(bus.nc);
    await jsm.streams.add({ ...streamConfigOf(kvBucket('pg_bound'), { replicas: 1, maxConsumers: 50 }), subjects: ['$KV.pg_bound.>', '_R_.>'] });
    await jsm.streams.add({ ...streamConfigOf(kvBucket(PLANS), { replicas: 1, maxConsumers: 50 }), deny_purge: false, allow_rollup_hdrs: true });
    const run = await init(bus.nats.url, ['--provider', 'pg']);
    assert.is(run.code, 1, run.stdout + run.stderr);
    assert.match(run.stdout, /bucket pg_bound \(stream KV_pg_bound\) holds "_R_\.>" besides its own subject \$KV\.pg_bound\.>: left as it is/);
    assert.equal((await jsm.streams.info('KV_pg_bound')).config.subjects, ['$KV.pg_bound.>', '_R_.>'], 'left as it is');
    assert.match(run.stdout, /bucket mesh-provisioner_plans \(stream KV_mesh-provisioner_plans\) hardened/);
    const plans = (await jsm.streams.info(`KV_${PLANS}`)).config;
    assert.equal([plans.deny_purge, plans.allow_rollup_hdrs], [true, false]);
    assert.match(run.stdout, /created bucket mesh-provisioner_registry/);
    assert.match(run.stdout, /1 of 11 buckets are not as the mesh needs them/);
  } finally {
    await bus.close();
  }
});

test('init brings a bucket made with an age, a size or a count back to no bound, saying each, and names one kept in memory', async () => {
  const bus = await openBus();
  try {
    const jsm = await jetstreamManager(bus.nc);
    const size = { replicas: 1, maxConsumers: maxConsumersFor(100) };
    // As another tool might have made them: values dropped after an hour, a full bucket refusing writes, lost on a restart.
    await jsm.streams.add({ ...streamConfigOf(kvBucket(PLANS), size), max_age: nanos(3_600_000), max_bytes: 1_000_000, max_msgs: 500, max_msg_size: 4096 });
    await jsm.streams.add({ ...streamConfigOf(kvBucket(REGISTRY_BUCKET), size), storage: StorageType.Memory });
    const run = await init(bus.nats.url);
    assert.is(run.code, 1, run.stdout + run.stderr);
    const said = (bucket: string) => run.stdout.split('\n').filter((l) => l.startsWith(`bucket ${bucket} `));
    assert.equal(
      said(PLANS),
      [
        `bucket ${PLANS} (stream KV_${PLANS}) max_age was 3600 s, now none; max_bytes was 1000000, now no bound; max_msgs was 500, now no bound; max_msg_size was 4096, now no bound`,
      ],
      run.stdout,
    );
    const plans = (await jsm.streams.info(`KV_${PLANS}`)).config;
    assert.equal([plans.max_age, plans.max_bytes, plans.max_msgs, plans.max_msg_size], [0, -1, -1, -1]);
    assert.match(
      said(REGISTRY_BUCKET).join('\n'),
      /keeps its values in memory, asked file \(a restart of its server loses them\): not changed — nats-server cannot change the storage of a stream; save what you need, remove the stream/,
    );
    assert.match(run.stdout, /1 of 10 buckets differ from what was asked, as said above, and are used as they are: mesh-provisioner_registry/);
    // Run again: the plans are as they should be now; the registry is still named.
    const again = await init(bus.nats.url);
    assert.is(again.code, 1, again.stdout);
    assert.match(again.stdout, new RegExp(`bucket ${PLANS} \\(stream KV_${PLANS}\\) is as it should be`));
  } finally {
    await bus.close();
  }
});

test('the seat bundle exits 1 on a registry bucket that holds `_R_.>` too, naming the bucket and the subject', async () => {
  const bus = await openBus();
  try {
    await (
      await jetstreamManager(bus.nc)
    ).streams.add({ ...streamConfigOf(kvBucket(REGISTRY_BUCKET), { replicas: 1, maxConsumers: 50 }), subjects: [`$KV.${REGISTRY_BUCKET}.>`, '_R_.>'] });
    const run = await runBundle('node', ROOT, 'dist/server', ['--nats', bus.nats.url], {}, 20_000);
    assert.is(run.code, 1, run.stderr);
    assert.match(run.stderr, /bucket mesh-provisioner_registry \(stream KV_mesh-provisioner_registry\) holds "_R_\.>" besides its own subject/);
    assert.not.match(run.stderr, /seat ready/);
  } finally {
    await bus.close();
  }
});

test('the client bundle exits 1 on a plans bucket that mirrors another stream, naming it', async () => {
  const bus = await openBus();
  try {
    const jsm = await jetstreamManager(bus.nc);
    await jsm.streams.add({ name: 'elsewhere', subjects: ['elsewhere.>'] });
    await jsm.streams.add({
      ...streamConfigOf(kvBucket(PLANS), { replicas: 1, maxConsumers: 50 }),
      subjects: [`$KV.${PLANS}.>`],
      sources: [{ name: 'elsewhere' }],
    });
    ensureBuilt('client');
    const run = await runBundle('node', ROOT, 'dist/client', ['--node', 'n1', '--nats', bus.nats.url, '--socket', '/nonexistent/fill.sock'], {}, 20_000);
    assert.is(run.code, 1, run.stderr);
    assert.match(run.stderr, /bucket mesh-provisioner_plans \(stream KV_mesh-provisioner_plans\) sources "elsewhere"/);
  } finally {
    await bus.close();
  }
});

test('a provider does not serve from a bound bucket that holds more than its subject, and says why', async () => {
  const bus = await openBus();
  try {
    await (
      await jetstreamManager(bus.nc)
    ).streams.add({ ...streamConfigOf(kvBucket('pg_bound'), { replicas: 1, maxConsumers: 50 }), subjects: ['$KV.pg_bound.>', '_R_.>'] });
    const lines: string[] = [];
    const log = { info: (l: string) => lines.push(l), warn: (l: string) => lines.push(l), error: (l: string) => lines.push(l) };
    let created = 0;
    const adapter = { create: async () => ((created += 1), { user: 'u', values: {} }), remove: async () => {} };
    const handle = runProvider({
      nc: bus.nc,
      provider: 'pg',
      provision: 'database',
      consumersFile: '/nonexistent/consumers.json',
      adapter,
      log,
      retry: { firstMs: 50, maxMs: 100 },
    });
    await waitFor('the refusal said', () => lines.some((l) => /pg_bound.*holds "_R_\.>"/.test(l)));
    await handle.stop();
    assert.is(created, 0);
  } finally {
    await bus.close();
  }
});

test('on the generated bus, the seat bundle waits for init, saying to run it, and is ready once init has run as admin', async () => {
  const bus = await startMeshBus({ nodes: ['na'] });
  try {
    ensureBuilt('server');
    const seat = startBundle('node', ROOT, 'dist/server', ['--nats', bus.nats.url, '--nkey', bus.nkey(USERS.seat)]);
    await seat.waitForLog(/bucket mesh-provisioner_\w+ is missing and this login may not create it: run `server\.js init` with the admin login/, 15_000);
    const made = await init(bus.nats.url, ['--nkey', bus.nkey(USERS.admin), '--nodes', '1']);
    assert.is(made.code, 0, made.stdout + made.stderr);
    await seat.waitForLog(/seat ready/, 20_000);
    seat.kill();
    const asSeat = await init(bus.nats.url, ['--nkey', bus.nkey(USERS.seat)]);
    assert.is(asSeat.code, 1);
    assert.match(asSeat.stdout, /^init needs the admin login \(its seed, admin\.nk, as --nkey\)/);
    assert.is(asSeat.stdout.trim().split('\n').length, 1, 'said once, not once a bucket');
    assert.equal(
      bus.violations().filter((l) => !/STREAM\.CREATE|_INBOX_admin/.test(l)),
      [],
      'the seat tried nothing but creating what was missing',
    );
  } finally {
    await bus.close();
    cleanupBundles();
  }
});

test('on the generated bus, init run again asking more copies than one server keeps, or room for more nodes, says each bucket as it is and exits 1', async () => {
  const bus = await startMeshBus({ nodes: ['na'] });
  try {
    const admin = ['--nkey', bus.nkey(USERS.admin), '--provider', 'pg'];
    const made = await init(bus.nats.url, [...admin, '--nodes', '3']);
    assert.is(made.code, 0, made.stdout + made.stderr);
    assert.match(made.stdout, /^11 buckets ready, each with 1 copy, at most 88 consumers \(3 nodes\)$/m);

    const copies = await init(bus.nats.url, [...admin, '--nodes', '3', '--replicas', '3']);
    assert.is(copies.code, 1, copies.stdout + copies.stderr);
    assert.not.match(copies.stdout, /is as it should be|buckets ready/);
    assert.is(
      copies.stdout.match(
        /^bucket \S+ \(stream \S+\) keeps 1 copy, asked 3: not changed — its server is not in a cluster, where nats-server would record more copies and keep one; run init with --replicas 1$/gm,
      )?.length,
      11,
      copies.stdout,
    );
    assert.match(copies.stdout, /^0 of 11 buckets are as asked: 3 copies, at most 88 consumers \(3 nodes\)$/m);
    assert.match(copies.stdout, /^11 of 11 buckets differ from what was asked, as said above, and are used as they are: every one$/m);
    assert.match(copies.stdout, /^the buckets there hold: 11 with 1 copy, at most 88 consumers$/m);
    assert.match(copies.stdout, /^--replicas asks 3 copies of each bucket.*set --replicas 1;/m);
    const jsm = await jetstreamManager(bus.admin);
    // nats-server 2.9 would take an update to 3 replicas on one server, record 3 and keep 1: none is asked.
    for (const spec of meshBuckets(['pg'], 'mesh-catalog_archives')) assert.is((await jsm.streams.info(streamOf(spec))).config.num_replicas, 1, spec.name);

    const room = await init(bus.nats.url, [...admin, '--nodes', '50']);
    assert.is(room.code, 1, room.stdout + room.stderr);
    assert.not.match(room.stdout, /buckets ready/);
    assert.match(
      room.stdout,
      /bucket mesh-provisioner_plans \(stream KV_mesh-provisioner_plans\) max_consumers is 88, asked 464 \(50 nodes\): not changed — nats-server refused the update \([^)]*MaxConsumers\); to keep it, run init with --nodes 3 \(the size it was made for\); to make it the size asked, save what you need, remove the stream with the admin login \(the NATS CLI's `nats stream rm KV_mesh-provisioner_plans`\) and run init again/,
    );
    assert.is(room.stdout.match(/max_consumers is 88, asked 464/g)?.length, 11, room.stdout);
    assert.match(room.stdout, /^0 of 11 buckets are as asked: 1 copy, at most 464 consumers \(50 nodes\)$/m);
    assert.match(room.stdout, /^the buckets there hold: 11 with 1 copy, at most 88 consumers$/m);

    // As `nats kv add --history 5` would have made it: fields nats-server lets an update change.
    const modules = (await jsm.streams.info('KV_mesh-catalog_modules')).config;
    await jsm.streams.update('KV_mesh-catalog_modules', { ...modules, max_msgs_per_subject: 5, discard: DiscardPolicy.Old });
    const again = await init(bus.nats.url, [...admin, '--nodes', '3']);
    assert.is(again.code, 0, again.stdout + again.stderr);
    assert.is(again.stdout.match(/is as it should be/g)?.length, 10, again.stdout);
    assert.match(again.stdout, /^bucket mesh-catalog_modules \(stream KV_mesh-catalog_modules\) discard was old, now new; max_msgs_per_subject was 5, now 1$/m);
    const mended = (await jsm.streams.info('KV_mesh-catalog_modules')).config;
    assert.equal([mended.discard, mended.max_msgs_per_subject], [DiscardPolicy.New, 1]);
    assert.equal(bus.violations(), [], 'init as admin is refused nothing');
  } finally {
    await bus.close();
    cleanupBundles();
  }
});

test('on a three-server cluster, init run again with --replicas 3 brings each one-copy bucket to three copies and says so; run again without it, takes none away', async () => {
  const { cluster, seed } = await startGeneratedCluster(['na']);
  try {
    const urls = cluster.urls.join(',');
    const made = await init(urls, ['--nkey', seed(USERS.admin), '--nodes', '2']);
    assert.is(made.code, 0, made.stdout + made.stderr);
    const five = await init(urls, ['--nkey', seed(USERS.admin), '--nodes', '2', '--replicas', '5']);
    assert.is(five.code, 1, five.stdout + five.stderr);
    assert.match(
      five.stdout,
      /^bucket mesh-provisioner_plans \(stream KV_mesh-provisioner_plans\) num_replicas is 1, asked 5: not changed — nats-server refused the update \([^)]+\); run init with --replicas 1, or ask at most the cluster's number of JetStream servers$/m,
    );
    assert.match(five.stdout, /^--replicas asks 5 copies of each bucket, more than the bus's JetStream servers can hold/m);
    const copies = await init(urls, ['--nkey', seed(USERS.admin), '--nodes', '2', '--replicas', '3']);
    assert.is(copies.code, 0, copies.stdout + copies.stderr);
    assert.is(copies.stdout.match(/^bucket \S+ \(stream \S+\) num_replicas was 1, now 3$/gm)?.length, 10, copies.stdout);
    assert.match(copies.stdout, /^10 buckets ready, each with 3 copies, at most 80 consumers \(2 nodes\)$/m);
    const nc = await connectBus({ servers: cluster.urls, name: 'admin', nkey: seed(USERS.admin), inboxPrefix: INBOX_PREFIXES.admin });
    try {
      const jsm = await jetstreamManager(nc);
      for (const spec of meshBuckets([], 'mesh-catalog_archives')) {
        assert.is((await jsm.streams.info(streamOf(spec))).config.num_replicas, 3, spec.name);
        // A stream whose copies were just added is led by one server and followed by two, once elected.
        await waitFor(`${spec.name}: a copy on each server`, async () => {
          const cluster = (await jsm.streams.info(streamOf(spec))).cluster;
          return cluster?.leader !== undefined && new Set([cluster.leader, ...(cluster.replicas ?? []).map((r) => r.name)]).size === 3;
        });
      }
      // Run again without --replicas (it defaults to 1), as when a provider is added: nothing is taken away.
      const fewer = await init(urls, ['--nkey', seed(USERS.admin), '--nodes', '2']);
      assert.is(fewer.code, 1, fewer.stdout + fewer.stderr);
      assert.match(
        fewer.stdout,
        /^bucket mesh-provisioner_plans \(stream KV_mesh-provisioner_plans\) num_replicas is 3, asked 1: not changed — init never takes copies away; to keep them, run init with --replicas 3; to have fewer, the NATS CLI's `nats stream edit KV_mesh-provisioner_plans --replicas 1` with the admin login$/m,
      );
      assert.match(fewer.stdout, /^the buckets there hold: 10 with 3 copies, at most 80 consumers$/m);
      for (const spec of meshBuckets([], 'mesh-catalog_archives')) assert.is((await jsm.streams.info(streamOf(spec))).config.num_replicas, 3, spec.name);
    } finally {
      await nc.close();
    }
  } finally {
    await cluster.cleanup();
    cleanupBundles();
  }
});

test("a node's client on the generated bus exits 1 on a plans bucket holding its inbox as well", async () => {
  const m = await startIsolatedMesh({ nodes: ['na', 'nb'] });
  try {
    const jsm = await jetstreamManager(m.admin);
    const plans = (await jsm.streams.info(`KV_${PLANS}`)).config;
    await jsm.streams.update(`KV_${PLANS}`, { ...plans, subjects: [...plans.subjects, '_INBOX_node_nb.>'] });
    ensureBuilt('client');
    const run = await runBundle(
      'node',
      ROOT,
      'dist/client',
      ['--node', 'na', '--nats', m.nats.url, '--nkey', m.nkey(USERS.client('na')), '--socket', '/nonexistent/fill.sock'],
      {},
      20_000,
    );
    assert.is(run.code, 1, run.stderr);
    assert.match(run.stderr, /bucket mesh-provisioner_plans \(stream KV_mesh-provisioner_plans\) holds "_INBOX_node_nb\.>" besides its own subject/);
  } finally {
    await m.close();
    cleanupBundles();
  }
});

test.after(() => cleanupBundles());
test.run();
