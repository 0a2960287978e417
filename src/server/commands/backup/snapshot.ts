// One stream snapshotted by nats-server (its JetStream API `$JS.API.STREAM.SNAPSHOT`, which the `nats`
// CLI calls and Debian does not package): the server answers with the stream's configuration and
// state, then sends its data — an s2-compressed tar of the stream's store, taken at one moment — in
// chunks to an inbox, each acknowledged (the server's flow control), and an empty message at the end.
import { createInbox, type Msg, type NatsConnection } from '@nats-io/transport-node';
import { parseBoundedJson } from '../../../shared/contract/limits.ts';

/** The bytes of each chunk asked of the server. */
export const SNAPSHOT_CHUNK_BYTES = 128 * 1024;
/** How long the server may be silent (its answer, or between two chunks) before the snapshot is given up. */
export const SNAPSHOT_IDLE_MS = 10_000;

/** What the server said of a stream it snapshotted: its configuration and its state (messages, sequences), as JSON. */
export type SnapshotMeta = { config: Record<string, unknown>; state: Record<string, unknown> };

/**
 * Snapshots `stream`, handing each chunk of its data to `write` in order; resolves with its
 * configuration and state once the last chunk came, rejects with the server's reason.
 */
export async function snapshotStream(nc: NatsConnection, stream: string, inboxPrefix: string, write: (chunk: Uint8Array) => void): Promise<SnapshotMeta> {
  const inbox = createInbox(inboxPrefix);
  let idle: NodeJS.Timeout | undefined;
  let settle: (why?: Error) => void = () => {};
  const ended = new Promise<void>((resolve, reject) => (settle = (why) => (why ? reject(why) : resolve())));
  const restartIdle = () => {
    clearTimeout(idle);
    idle = setTimeout(() => settle(new Error(`nats-server sent nothing for ${SNAPSHOT_IDLE_MS / 1000} s`)), SNAPSHOT_IDLE_MS);
  };
  const sub = nc.subscribe(inbox, {
    callback: (err, msg) => {
      if (err) return settle(err);
      restartIdle();
      const end = chunkOrEnd(msg);
      if (end === 'chunk') {
        write(msg.data);
        // The acknowledgement is the server's flow control: unanswered, it stops after its window.
        if (msg.reply) msg.respond();
      } else settle(end);
    },
  });
  try {
    restartIdle();
    const request = { deliver_subject: inbox, no_consumers: true, chunk_size: SNAPSHOT_CHUNK_BYTES };
    const answer = await nc.request(`$JS.API.STREAM.SNAPSHOT.${stream}`, JSON.stringify(request), { timeout: SNAPSHOT_IDLE_MS });
    const meta = apiAnswer(answer.data);
    await ended;
    return { config: objectField(meta, 'config'), state: objectField(meta, 'state') };
  } finally {
    clearTimeout(idle);
    sub.unsubscribe();
  }
}

/** A chunk of data; the end (undefined); or the end with the server's error (a status header, 408 when it got no acknowledgement). */
function chunkOrEnd(msg: Msg): 'chunk' | Error | undefined {
  if (msg.data.length > 0) return 'chunk';
  const code = msg.headers?.code ?? 0;
  return code >= 400 ? new Error(`nats-server ended the snapshot: ${code} ${msg.headers?.description ?? ''}`.trim()) : undefined;
}

/** A JetStream API answer as an object; its `error` thrown as the server's description. */
export function apiAnswer(data: Uint8Array): Record<string, unknown> {
  const parsed = parseBoundedJson(data, { maxBytes: 1024 * 1024 });
  if (!parsed.ok || typeof parsed.value !== 'object' || parsed.value === null) throw new Error('nats-server answered something that is not a JSON object');
  const answer = parsed.value as Record<string, unknown>;
  const error = answer['error'] as { description?: unknown; err_code?: unknown } | undefined;
  if (error) throw new JetStreamRefusal(String(error.description ?? 'an error'), typeof error.err_code === 'number' ? error.err_code : 0);
  return answer;
}

/** JetStream's refusal of an API call: its description and error code. */
export class JetStreamRefusal extends Error {
  override name = 'JetStreamRefusal';
  constructor(
    message: string,
    /** nats-server's `err_code` (10130: a stream of that name is there already). */
    readonly code: number,
  ) {
    super(message);
  }
}

function objectField(answer: Record<string, unknown>, field: string): Record<string, unknown> {
  const value = answer[field];
  if (typeof value !== 'object' || value === null) throw new Error(`nats-server's answer has no ${field}`);
  return value as Record<string, unknown>;
}
