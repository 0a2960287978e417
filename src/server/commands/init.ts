// `node dist/server.js init` (DESIGN §3, §13): creates every bucket of the mesh with exactly its own
// subject, the hardening and a bounded `max_consumers`, run with the admin login — on a bus with
// isolation no other login may create, update, delete or purge a stream. Run again when a provider
// is added: what is there is checked, hardened where an update can, and never changed otherwise.
import type { JetStreamManager, StreamConfig } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { askedAgain, BUCKET_TIMING, bucketManager, type BucketTiming } from '../../shared/bucket-bind.ts';
import { bucketProblems, KV_HARDENING, maxConsumersFor, streamConfigOf, streamOf, type BucketSize, type BucketSpec } from '../../shared/bucket-spec.ts';
import { meshBuckets } from '../../shared/buckets.ts';
import type { InitRequest } from '../options.ts';
import { errorText, isPermissionViolation } from '../../shared/errors.ts';
import { isStreamNotFound } from '../../shared/jetstream-errors.ts';
import { isTooManyReplicas, tooManyReplicasLine } from '../seat/replicas-hint.ts';

/** What init did with one bucket. */
type Outcome = { line: string; failed: boolean };

/**
 * Creates or checks every bucket, one line each through `say`; resolves 0, or 1 when a bucket could
 * not be made right. A bucket the bus leaves unanswered (a cluster still forming, init run just after
 * its servers started) is looked at and asked again (askedAgain), saying so.
 */
export async function runInit(nc: NatsConnection, req: InitRequest, say: (line: string) => void, timing: BucketTiming = BUCKET_TIMING): Promise<number> {
  const jsm = await bucketManager(nc, timing.timeoutMs);
  const size: BucketSize = { replicas: req.replicas, maxConsumers: maxConsumersFor(req.nodes) };
  const buckets = meshBuckets(req.providers, req.archives);
  let failed = 0;
  let tooManyReplicas: unknown;
  for (const spec of buckets) {
    let outcome: Outcome;
    try {
      outcome = await askedAgain(spec.name, timing, say, () => initBucket(jsm, spec, size));
    } catch (err) {
      // Any other login is refused at the first call: said once, not once a bucket.
      if (isPermissionViolation(err)) {
        say(
          `init needs the admin login (its seed, admin.nk, as --nkey): this login may not make the JetStream calls init makes (bucket ${spec.name}: ${errorText(err)})`,
        );
        return 1;
      }
      outcome = { line: `bucket ${spec.name}: ${errorText(err)}`, failed: true };
      if (isTooManyReplicas(err)) tooManyReplicas = err;
    }
    say(outcome.line);
    if (outcome.failed) failed += 1;
  }
  if (failed > 0) {
    say(`${failed} of ${buckets.length} buckets are not as the mesh needs them: no program will use those`);
    if (tooManyReplicas !== undefined) say(tooManyReplicasLine(req.replicas, req.replicasFrom, errorText(tooManyReplicas)));
    return 1;
  }
  say(`${buckets.length} buckets ready, each allowing ${size.maxConsumers} consumers (${req.nodes} nodes)`);
  return 0;
}

/** Creates one bucket, or checks the one there and hardens it where an update can. */
async function initBucket(jsm: JetStreamManager, spec: BucketSpec, size: BucketSize): Promise<Outcome> {
  const stream = streamOf(spec);
  let config: StreamConfig;
  try {
    config = (await jsm.streams.info(stream)).config;
  } catch (err) {
    if (!isStreamNotFound(err)) throw err;
    await jsm.streams.add(streamConfigOf(spec, size));
    return { line: `created bucket ${spec.name} (stream ${stream}): ${size.replicas} replica(s), at most ${size.maxConsumers} consumers`, failed: false };
  }
  const problems = bucketProblems(spec, config);
  const refused = problems.filter((p) => !p.fixable);
  if (refused.length > 0) {
    return {
      line:
        `bucket ${spec.name} (stream ${stream}) ${refused.map((p) => p.text).join('; ')}: left as it is — it may hold what it captured; ` +
        `save what you need, remove the stream with the admin login (\`nats stream rm ${stream}\`) and run init again`,
      failed: true,
    };
  }
  const said: string[] = [];
  if (problems.length > 0) {
    await jsm.streams.update(stream, { ...config, ...(spec.kind === 'kv' ? KV_HARDENING : {}) });
    said.push(`hardened (it ${problems.map((p) => p.text).join(', ')})`);
  }
  return {
    line: `bucket ${spec.name} (stream ${stream}) ${[...said, consumersNote(config.max_consumers, size.maxConsumers)].filter(Boolean).join('; ') || 'is as it should be'}`,
    failed: config.max_consumers <= 0,
  };
}

/** What to say of an existing stream's bound on consumers, which nats-server cannot change. */
function consumersNote(has: number, wants: number): string {
  if (has <= 0)
    return 'has no bound on consumers, and nats-server cannot add one to an existing stream: remove the stream with the admin login and run init again';
  if (has < wants) return `allows ${has} consumers, fewer than the ${wants} of this mesh's size; nats-server cannot change that on an existing stream`;
  return '';
}
