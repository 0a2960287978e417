// What to say when JetStream refuses the copies asked of a bucket (issue 20 item 10): a seat or an
// `init` asked for more replicas than the bus has JetStream servers ends with a line naming where
// the number came from (--replicas, or MESH_REPLICAS from a unit's env file) and what to set.
import { JetStreamApiError } from '@nats-io/jetstream';

/** nats-server's codes for copies it cannot place: replicas on a server outside a cluster, too few peers, too few resources. */
const TOO_MANY_REPLICAS_CODES: ReadonlySet<number> = new Set([10074, 10005, 10023]);

/** Whether `err` is JetStream refusing a stream's replicas: too many for the servers there are. */
export function isTooManyReplicas(err: unknown): boolean {
  if (err instanceof JetStreamApiError && TOO_MANY_REPLICAS_CODES.has(err.code)) return true;
  const message = err instanceof Error ? err.message : String(err);
  return /replicas > 1 not supported in non-clustered mode|insufficient resources|no suitable peers/i.test(message);
}

/**
 * The line said of a bucket JetStream would not make with `replicas` copies: `from` is where the
 * number came from, `--replicas` or the variable that set it (flags.ts `valueSource`).
 */
export function tooManyReplicasLine(replicas: number, from: string, detail: string): string {
  const setting = from.startsWith('--') ? '--replicas 1' : `${from}=1 (the seat's unit reads it from /etc/mesh-provisioner/server.env)`;
  return (
    `${from} asks ${replicas} copies of each bucket, more than the bus's JetStream servers can hold (${detail}): ` +
    `on one server set ${setting}; on a cluster at most its number of JetStream servers`
  );
}
