// `init` on a cluster that cannot answer yet (issue 31 item 7): one server of three up, so no
// JetStream leader — what init meets run just after the servers start, or during a slow election.
// The seat's bundle, as admin on the generated configuration: it says what it waits for, gives up
// after --timeout naming the bucket, and once the other servers are back makes every bucket.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { JetStreamApiError } from '@nats-io/jetstream';
import { USERS } from '../src/server/commands/bus-config/users.ts';
import { InitGaveUp, PEERS_GRACE_MS, untilAnswered, type InitClock } from '../src/server/commands/init/wait.ts';
import { meshBuckets } from '../src/shared/contract/buckets.ts';
import { cleanupBundles, ROOT, runBundle, startBundle } from './helpers/bundle.ts';
import { startGeneratedCluster } from './helpers/generated-cluster.ts';
import { waitFor } from './helpers/wait.ts';

test.after(() => cleanupBundles());

/** A clock that moves only when the retry waits, each wait recorded. */
function fakeClock(giveUpMs: number): InitClock & { waits: number[] } {
  let t = 0;
  const waits: number[] = [];
  return {
    waits,
    deadline: giveUpMs,
    now: () => t,
    timer: (fn, ms) => {
      t += ms;
      waits.push(ms);
      queueMicrotask(fn);
      return { cancel() {} };
    },
  };
}

/**
 * What init said it did with each bucket, in its order: `made` when it said "created bucket", or
 * when its own create went unanswered and, asked again, it found the bucket as it should be — a
 * create a recovering cluster carries out after the call's 5 s (a restarted server placed the
 * stream, then answered late or not at all): the bus made it, init made no second one. Anything
 * else (a bucket found there without an unanswered create of its own, or not said) is said as is.
 */
function madeBy(stdout: string): string[] {
  const lines = stdout.split('\n');
  return meshBuckets([], 'mesh-catalog_archives').map(({ name }) => {
    const at = (re: RegExp) => lines.findIndex((l) => re.test(l));
    const q = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    if (at(new RegExp(`^created bucket ${q} `)) >= 0) return `${name}: made`;
    const unanswered = at(new RegExp(`^bucket ${q}: unanswered within \\d+ ms; asking again`));
    const found = at(new RegExp(`^bucket ${q} \\(stream [^)]+\\) is as it should be$`));
    if (unanswered >= 0 && found > unanswered) return `${name}: made`;
    return `${name}: ${lines.filter((l) => l.includes(` ${name} `) || l.includes(` ${name}:`)).join(' | ') || 'not said'}`;
  });
}

const unavailable = () => new JetStreamApiError({ code: 503, err_code: 10008, description: 'JetStream system temporarily unavailable' });

test('a bucket answered "temporarily unavailable" is asked again with the one backoff, said once; past the deadline init gives up naming it; another refusal is thrown at once', async () => {
  const said: string[] = [];
  const clock = fakeClock(60_000);
  let tries = 0;
  const made = await untilAnswered(
    'b',
    clock,
    5000,
    (l) => said.push(l),
    async () => (++tries < 4 ? Promise.reject(unavailable()) : 'made'),
  );
  assert.is(made, 'made');
  assert.equal(clock.waits, [250, 500, 1000]);
  assert.equal(said, ['bucket b: the bus answered "JetStream system temporarily unavailable"; asking again until init\'s --timeout (60 s left)']);

  const late = fakeClock(10_000);
  const gaveUp = await untilAnswered(
    'b',
    late,
    5000,
    () => {},
    () => Promise.reject(unavailable()),
  ).catch((e: unknown) => e);
  assert.instance(gaveUp, InitGaveUp);
  assert.equal([(gaveUp as InitGaveUp).bucket, (gaveUp as InitGaveUp).lastAnswer], ['b', 'JetStream system temporarily unavailable']);
  assert.ok(late.now() < 10_000, 'no wait past the deadline');

  const other = new JetStreamApiError({ code: 503, err_code: 10039, description: 'jetstream not enabled for account' });
  const thrown = await untilAnswered(
    'b',
    fakeClock(60_000),
    5000,
    () => {},
    () => Promise.reject(other),
  ).catch((e: unknown) => e);
  assert.is(thrown, other, 'JetStream not enabled is no wait: said at once');
});

test('copies a forming cluster cannot place yet are asked again for PEERS_GRACE_MS, said once; a lone server refusing copies is said at once', async () => {
  const noPeers = () => new JetStreamApiError({ code: 500, err_code: 10005, description: 'no suitable peers for placement' });
  const said: string[] = [];
  const clock = { ...fakeClock(60_000), peersUntil: PEERS_GRACE_MS };
  let tries = 0;
  const made = await untilAnswered(
    'b',
    clock,
    5000,
    (l) => said.push(l),
    async () => (++tries < 3 ? Promise.reject(noPeers()) : 'made'),
  );
  assert.is(made, 'made');
  assert.equal(said, [
    'bucket b: the bus answered "no suitable peers for placement"; asking again while its cluster\'s servers may still be joining (15 s more at most)',
  ]);

  const never = { ...fakeClock(60_000), peersUntil: PEERS_GRACE_MS };
  const thrown = await untilAnswered(
    'b',
    never,
    5000,
    () => {},
    () => Promise.reject(noPeers()),
  ).catch((e: unknown) => e);
  assert.instance(thrown, JetStreamApiError, 'past the grace the refusal is thrown as it is, for the replicas hint');
  assert.ok(never.now() <= PEERS_GRACE_MS, 'no wait past the grace');

  const lone = new JetStreamApiError({ code: 500, err_code: 10074, description: 'replicas > 1 not supported in non-clustered mode' });
  const fast = fakeClock(60_000);
  const refused = await untilAnswered(
    'b',
    { ...fast, peersUntil: PEERS_GRACE_MS },
    5000,
    () => {},
    () => Promise.reject(lone),
  ).catch((e: unknown) => e);
  assert.is(refused, lone);
  assert.equal(fast.waits, [], 'a lone server is no wait');
});

test('init with one server of three up waits, saying so, gives up after --timeout naming the bucket; run again, it makes every bucket once the others are back', async () => {
  const { cluster, seed } = await startGeneratedCluster(['na']);
  try {
    const [s1, s2, s3] = cluster.servers as [(typeof cluster.servers)[0], (typeof cluster.servers)[0], (typeof cluster.servers)[0]];
    await Promise.all([s2.kill(), s3.kill()]);
    const args = ['init', '--nats', s1.url, '--nkey', seed(USERS.admin), '--nodes', '1'];
    const first = meshBuckets([], 'mesh-catalog_archives')[0]!.name;

    const short = await runBundle('node', ROOT, 'dist/server', [...args, '--timeout', '8'], {}, 30_000);
    assert.is(short.code, 1, short.stdout + short.stderr);
    assert.ok(short.ms >= 8000 && short.ms < 15_000, `gave up after ${short.ms} ms for --timeout 8`);
    assert.match(
      short.stdout,
      new RegExp(
        `^bucket ${first}: (unanswered within \\d+ ms|the bus answered "JetStream system temporarily unavailable"); asking again until init's --timeout \\(\\d+ s left\\)$`,
        'm',
      ),
      short.stdout,
    );
    assert.match(
      short.stdout,
      new RegExp(
        `^init gave up after 8 s waiting for bucket ${first} \\([^)]+\\); 0 of 10 buckets were done before it, as said above: run init again once the bus answers`,
        'm',
      ),
    );

    const waiting = startBundle('node', ROOT, 'dist/server', [...args, '--timeout', '120']);
    await waitFor('init saying it waits', () => /asking again/.test(waiting.stdout()), 20_000);
    await Promise.all([s2.restart(), s3.restart()]);
    const { code } = await waiting.exited;
    if (process.env['MESH_TEST_VERBOSE']) console.log(`--- init with the others restarted said:\n${waiting.stdout()}`);
    assert.is(code, 0, waiting.stdout() + waiting.stderr());
    assert.equal(
      madeBy(waiting.stdout()),
      meshBuckets([], 'mesh-catalog_archives').map((b) => `${b.name}: made`),
      waiting.stdout(),
    );
    assert.match(waiting.stdout(), /^10 buckets ready, each with 1 copy, at most 72 consumers \(1 node\)$/m);
  } finally {
    await cluster.cleanup();
  }
});

test.run();
