// The bus's own connect and disconnect events of node accounts (DESIGN §14), as nats-server 2.9
// publishes them in its system account and bus-config exports them to the seat: what the seat reads
// of one, and whether it is the node's client's. docs/isolation.md says what a payload holds.
import * as v from 'valibot';
import { clientConnectionName } from '../../../shared/contract/alive.ts';
import { validate } from '../../../shared/contract/decode.ts';

/** The account of a node as the events name it (`provisioner.<node>`, named whole: `*` matches none). */
export const NODE_ACCOUNT_PREFIX = 'provisioner.';

/** What the seat subscribes: every node account's connect events, and its disconnect events. */
export const CONNECT_EVENTS = `$SYS.ACCOUNT.${NODE_ACCOUNT_PREFIX}*.CONNECT`;
/** Every node account's disconnect events. */
export const DISCONNECT_EVENTS = `$SYS.ACCOUNT.${NODE_ACCOUNT_PREFIX}*.DISCONNECT`;

/** The subject of a node account's event, as bus-config exports it from the system account. */
export function eventSubject(node: string, kind: 'CONNECT' | 'DISCONNECT'): string {
  return `$SYS.ACCOUNT.${NODE_ACCOUNT_PREFIX}${node}.${kind}`;
}

/** The fields of an event the seat reads (`io.nats.server.advisory.v1.client_connect` / `client_disconnect`). */
const EventSchema = v.object({
  server: v.object({ id: v.string() }),
  client: v.object({ id: v.number(), acc: v.string(), user: v.optional(v.string()), name: v.optional(v.string()) }),
});

/** A node's client opening or closing a connection. */
export type ClientEvent = { node: string; kind: 'CONNECT' | 'DISCONNECT'; connection: string };

/**
 * Reads an event: the node's client's (its account's connection named as the client names it), or
 * undefined for another login of the node's account (a runner's: it says nothing of the client);
 * a reason when it is out of shape.
 */
export function readEvent(subject: string, data: unknown): { ok: true; event?: ClientEvent } | { ok: false; reason: string } {
  const parts = subject.split('.');
  const kind = parts[4];
  if (parts.length !== 5 || (kind !== 'CONNECT' && kind !== 'DISCONNECT')) return { ok: false, reason: `subject ${subject} is no node account's event` };
  const node = parts[3]!;
  const read = validate(EventSchema, data);
  if (!read.ok) return read;
  const { client, server } = read.value;
  if (client.acc !== `${NODE_ACCOUNT_PREFIX}${node}`) return { ok: false, reason: `client.acc ${JSON.stringify(client.acc)} is not the subject's account` };
  if (client.name !== clientConnectionName(node)) return { ok: true };
  return { ok: true, event: { node, kind, connection: `${server.id}/${client.id}` } };
}
