// Every message of every stream of a bus, read one sequence at a time: what a backup must give back
// exactly (each KV entry with its revision, each archive chunk) to a bus it is restored into.
import { createHash } from 'node:crypto';
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';

/** A stream's messages by sequence (`seq subject sha256`, or `seq deleted`) and the configuration the mesh relies on. */
export type StreamContents = { config: Record<string, unknown>; messages: string[] };

/** The fields of a stream's configuration a restore keeps (the copies may change with `--replicas`). */
const KEPT = ['name', 'subjects', 'max_msgs_per_subject', 'max_consumers', 'deny_delete', 'deny_purge', 'allow_rollup_hdrs', 'allow_direct', 'discard'];

/** Every stream of the connection's account, by name. */
export async function streamContents(nc: NatsConnection): Promise<Map<string, StreamContents>> {
  const jsm = await jetstreamManager(nc, { checkAPI: false });
  const found = new Map<string, StreamContents>();
  for await (const info of jsm.streams.list()) {
    const config = Object.fromEntries(KEPT.map((k) => [k, (info.config as unknown as Record<string, unknown>)[k]]));
    const messages: string[] = [];
    for (let seq = info.state.first_seq; info.state.messages > 0 && seq <= info.state.last_seq; seq++) {
      try {
        const m = await jsm.streams.getMessage(info.config.name, { seq });
        if (!m) throw new Error('no message');
        messages.push(`${seq} ${m.subject} ${createHash('sha256').update(m.data).digest('hex')}`);
      } catch {
        messages.push(`${seq} deleted`);
      }
    }
    found.set(info.config.name, { config, messages });
  }
  return new Map([...found].sort(([a], [b]) => (a < b ? -1 : 1)));
}
