// Whether the bus lets this login read its node's own keys (issue 22): another node's seed, or the
// runner's, is refused every subscription to the node's inbox, and the watches would wait on it
// forever at notice while systemd waits for a ready that never comes.
import type { NatsConnection } from '@nats-io/transport-node';
import { CONFIG } from '../shared/contract/buckets.ts';
import { permissionRefusal } from '../shared/bus/login.ts';

/** The bus refused the node's own reads to this login: a configuration error, said at once. */
export class NodeLoginRefusedError extends Error {
  constructor(
    /** The node the client was started for. */
    readonly node: string,
    /** The server's refusal. */
    readonly refusal: Error,
    /** The login as `whichLogin` names it (its key, the flag to check); absent: not known here. */
    login?: string,
  ) {
    super(`the bus refuses node ${node}'s subscriptions to its own keys (${refusal.message}) for ${login ?? 'this login'}`, { cause: refusal });
    this.name = 'NodeLoginRefusedError';
  }
}

/**
 * Reads one of the node's own keys of mesh-config_resolved by direct get, as every watch and read of
 * the client does, and throws NodeLoginRefusedError when the server refuses it to this login. A
 * missing bucket, an import not there yet, a missing key or no answer is no refusal: the watches
 * wait for those and say them.
 */
export async function checkNodeLogin(nc: NatsConnection, node: string, login?: string): Promise<void> {
  const refusal = await permissionRefusal(nc, `$JS.API.DIRECT.GET.KV_${CONFIG}.$KV.${CONFIG}.${node}.login-check`);
  if (refusal) throw new NodeLoginRefusedError(node, refusal, login);
}
