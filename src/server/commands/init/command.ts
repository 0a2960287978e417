// `node dist/server.js init` (DESIGN §3, §13): creates every bucket of the mesh with exactly its own subject, the
// hardening and a bounded `max_consumers`, run with the admin login — on a bus with isolation no other
// login may create, update, delete or purge a stream. Run again when a provider is added: each bucket
// there is compared with what was asked and updated where nats-server can (bucket.ts); what
// stays different is said, counted in the closing lines, and makes init exit 1.
import type { NatsConnection } from '@nats-io/transport-node';
import { BUCKET_API_TIMEOUT_MS, bucketManager } from '../../../shared/bus/bucket-bind.ts';
import { maxConsumersFor } from '../../../shared/contract/bucket-spec.ts';
import { meshBuckets } from '../../../shared/contract/buckets.ts';
import type { InitRequest } from '../../options.ts';
import { errorText, isPermissionViolation } from '../../../shared/base/errors.ts';
import { isTooManyReplicas, tooManyReplicasLine } from '../../../shared/bus/replicas-hint.ts';
import { describeHolding, initBucket, type Outcome } from './bucket.ts';
import type { Asked } from './drift.ts';
import { InitGaveUp, PEERS_GRACE_MS, untilAnswered, type InitClock } from './wait.ts';

/** One bucket's outcome, by name (absent `outcome`: it could not be made or read). */
type Result = { name: string; outcome?: Outcome };

/** How init's calls wait: each call's timeout, and the clock its `--timeout` is measured by (tests hand in their own). */
export type InitTiming = { callMs: number; clock?: Omit<InitClock, 'deadline'> };

/**
 * Creates or checks every bucket, one line each through `say` as it is done; resolves 0, or 1 when
 * a bucket is not as asked. A bucket the bus does not answer yet (a cluster electing its leader,
 * init run just after its servers started) is asked again until `req.timeoutMs` has passed since
 * init began (wait.ts), saying so; then init stops there, naming the bucket, and exits 1.
 */
export async function runInit(
  nc: NatsConnection,
  req: InitRequest,
  say: (line: string) => void,
  timing: InitTiming = { callMs: BUCKET_API_TIMEOUT_MS },
): Promise<number> {
  const now = timing.clock?.now ?? Date.now;
  const clock: InitClock = { ...timing.clock, now, deadline: now() + req.timeoutMs, peersUntil: now() + Math.min(req.timeoutMs, PEERS_GRACE_MS) };
  const asked: Asked = { replicas: req.replicas, maxConsumers: maxConsumersFor(req.nodes), nodes: req.nodes, replicasFrom: req.replicasFrom };
  const specs = meshBuckets(req.providers, req.archives);
  const results: Result[] = [];
  let tooManyReplicas: string | undefined;
  for (const spec of specs) {
    try {
      const outcome = await untilAnswered(spec.name, clock, timing.callMs, say, async (ms) => initBucket(await bucketManager(nc, ms), spec, asked));
      for (const line of outcome.lines) say(line);
      results.push({ name: spec.name, outcome });
      tooManyReplicas ??= outcome.tooManyReplicas;
    } catch (err) {
      // Any other login is refused at the first call: said once, not once a bucket.
      if (isPermissionViolation(err)) {
        say(
          `init needs the admin login (its seed, admin.nk, as --nkey): this login may not make the JetStream calls init makes (bucket ${spec.name}: ${errorText(err)})`,
        );
        return 1;
      }
      if (err instanceof InitGaveUp) return (say(gaveUpLine(err, req.timeoutMs, results.length, specs.length)), 1);
      say(`bucket ${spec.name}: ${errorText(err)}`);
      results.push({ name: spec.name });
      if (isTooManyReplicas(err)) tooManyReplicas ??= errorText(err);
    }
  }
  for (const line of closingLines(results, asked)) say(line);
  if (tooManyReplicas !== undefined) say(tooManyReplicasLine(req.replicas, req.replicasFrom, tooManyReplicas));
  return results.every((r) => r.outcome?.state === 'ready') ? 0 : 1;
}

/** `init gave up after 60 s waiting for bucket B (…); 3 of 11 buckets were done before it, …`. */
function gaveUpLine(err: InitGaveUp, timeoutMs: number, done: number, all: number): string {
  return (
    `init gave up after ${timeoutMs / 1000} s waiting for bucket ${err.bucket} (${err.lastAnswer}); ${done} of ${all} buckets were done before it, ` +
    'as said above: run init again once the bus answers (a cluster needs most of its servers up to elect a leader), or with a longer --timeout'
  );
}

/** The summary: every bucket ready as asked, or how many are not, which, and what the buckets hold now. */
function closingLines(results: readonly Result[], asked: Asked): string[] {
  const all = results.length;
  const askedText = `${describeHolding({ copies: asked.replicas, maxConsumers: asked.maxConsumers })} (${asked.nodes} node${asked.nodes === 1 ? '' : 's'})`;
  if (results.every((r) => r.outcome?.state === 'ready')) return [`${all} buckets ready, each with ${askedText}`];
  const names = (pick: (r: Result) => boolean) => results.filter(pick).map((r) => r.name);
  const refused = names((r) => r.outcome?.state === 'refused');
  const differs = names((r) => r.outcome?.state === 'differs');
  const missing = names((r) => r.outcome === undefined);
  const lines = [`${all - refused.length - differs.length - missing.length} of ${all} buckets are as asked: ${askedText}`];
  const which = (names: string[]) => (names.length === all ? 'every one' : names.join(', '));
  if (differs.length > 0)
    lines.push(`${differs.length} of ${all} buckets differ from what was asked, as said above, and are used as they are: ${which(differs)}`);
  if (refused.length > 0) lines.push(`${refused.length} of ${all} buckets are not as the mesh needs them: no program will use those (${which(refused)})`);
  if (missing.length > 0) lines.push(`${missing.length} of ${all} buckets could not be made or read: ${which(missing)}`);
  lines.push(`the buckets there hold: ${tally(results)}`);
  return lines;
}

/** What the buckets there hold, grouped: `10 with 1 copy, at most 88 consumers; 1 with …`. */
function tally(results: readonly Result[]): string {
  const groups = new Map<string, number>();
  for (const r of results) if (r.outcome) groups.set(describeHolding(r.outcome.holding), (groups.get(describeHolding(r.outcome.holding)) ?? 0) + 1);
  return [...groups].map(([holding, count]) => `${count} with ${holding}`).join('; ') || 'none';
}
