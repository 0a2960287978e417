// Runtime asks for a module (DESIGN §7 point 13): a module running in its machine's tool runner reads
// values through its node's client instead of files. The module is named by the tool runner (the
// environment it sets, or the options), never chosen by the module's code.
import type { NatsConnection } from '@nats-io/transport-node';
import * as v from 'valibot';
import { connectBus, isAuthError } from '../shared/bus/connect.ts';
import { jsonBytes } from '../shared/base/bytes.ts';
import { INBOX_PREFIXES } from '../shared/bus/inbox.ts';
import { decodeJson } from '../shared/contract/decode.ts';
import { askSubject, changedSubject } from '../shared/contract/subjects.ts';
import { errorText, inChain, isNoResponders, isPermissionViolation, isTimeout } from '../shared/base/errors.ts';
import { MAX_LOGIN_FILE_BYTES } from '../shared/contract/limits.ts';
import { readRegularFile } from '../shared/base/regular-file.ts';
import { watchAsks, type WatchAsks } from './watch-asks.ts';

/**
 * The SDK's own file (the bundle, `sdk.mjs`): its frames are cut from an AskError's stack, which then
 * points at the module's own line. Empty where a bundle has no import.meta (nothing is cut then).
 */
const HERE: string = (import.meta as { url?: string }).url ?? '';

/**
 * An ask the client answered with `{error}`, or could not be made. Left uncaught it prints its first
 * line, which says what to do, and the module's frames: the bus's error is kept as `busError`, not
 * as `cause`, which node and deno print whole, stacks and nested causes (~1.5 KB), however it is
 * defined — an own property, a non-enumerable one or a getter (measured, issue 31).
 */
export class AskError extends Error {
  override name = 'AskError';
  readonly #busError: unknown;

  /** `busError`: the bus's own error when the ask could not be made. */
  constructor(message: string, busError?: unknown) {
    super(message);
    this.#busError = busError;
    if (typeof this.stack === 'string') this.stack = withoutOwnFrames(this.stack);
  }

  /**
   * The bus's own error (nats.js's) when the ask could not be made — a PermissionViolationError for a
   * login the bus refuses, a NoRespondersError or a TimeoutError when no client answered, a
   * ConnectionError — and undefined when the client answered with its reason.
   */
  get busError(): unknown {
    return this.#busError;
  }
}

/** The stack without the SDK's own frames and the runtime's internals: the message, then the module's frames. */
function withoutOwnFrames(stack: string): string {
  if (HERE === '') return stack;
  const [head = '', ...frames] = stack.split('\n');
  const kept = frames.filter((f) => !f.includes(HERE) && !/\((node|ext):|at (node|ext):|node:internal/.test(f));
  return [head, ...kept].join('\n');
}

/** Who asks, and over which connection. */
export type AskerOptions = {
  /** A connection to the bus (the tool runner's). */
  nc: NatsConnection;
  /** The node whose client answers. */
  node: string;
  /** The module asking, as the tool runner names it. */
  module: string;
  /** How long one ask may take (default DEFAULT_ASK_TIMEOUT_MS). */
  timeoutMs?: number;
  /** How long after a reconnect a watch asks again quietly before its callback hears the client is absent (default DEFAULT_CLIENT_ABSENT_MS). */
  absentMs?: number;
};

/** How long one ask waits for the client. */
export const DEFAULT_ASK_TIMEOUT_MS = 2000;
/** How long after a reconnect a watch's client may stay absent (no responders, timeouts) before its callback hears so, once. */
export const DEFAULT_CLIENT_ABSENT_MS = 30_000;
/** The waits between a watch's asks while its client is absent after a reconnect. */
const REASK_BACKOFF = { firstMs: 250, maxMs: 5000 };

/** The largest reply read (NATS's own ceiling on a payload): a value may be as large as its bucket holds. */
const MAX_ASK_REPLY_BYTES = 64 * 1024 * 1024;
/** The largest `prov.changed` notice read: a kind and one key, each a bounded token. */
const MAX_CHANGED_NOTICE_BYTES = 16 * 1024;
/** `{value}` or `{error}` and nothing nested: the deepest a reply or notice may be. */
const MAX_REPLY_DEPTH = 2;

const AskReplySchema = v.union([v.object({ value: v.string() }), v.object({ error: v.string() })]);
const ChangedNoticeSchema = v.object({ kind: v.string(), key: v.optional(v.string()) });

/** Asks and watches of one module. */
export type Asker = {
  /** The value of `kind`/`key` as the client holds it; rejects with AskError and the client's reason. */
  ask(kind: string, key: string): Promise<string>;
  /**
   * Asks now and again on every `prov.changed` of that kind and key, and after a reconnect until the
   * client answers; `onChange` gets the value or the AskError (a client absent after a reconnect only
   * past `absentMs`, once).
   */
  watch(kind: string, key: string, onChange: (value: string | AskError) => void): { stop(): void };
};

/** What an AskError adds on what to do: the seed it needs (the bus refused the login), or the client to look at (none answered). */
function refusedHint(err: unknown, node: string): string {
  if (isPermissionViolation(err))
    return `; the login is not node ${node}'s runner: give the seed of runner.${node} (MESH_NATS_NKEY), and MESH_NODE the node it was made for`;
  if (isNoResponders(err)) return `; no client of node ${node} answers: is its node-provisioner running, on this bus?`;
  if (isTimeout(err)) return `; node ${node}'s client did not answer in time: is it running, and its bus reachable?`;
  return '';
}

/** Makes the asker of one module. */
export function asker(opts: AskerOptions): Asker {
  const { nc, node, module } = opts;
  const timeout = opts.timeoutMs ?? DEFAULT_ASK_TIMEOUT_MS;
  const ask = async (kind: string, key: string): Promise<string> => {
    let data: Uint8Array;
    try {
      data = (await nc.request(askSubject(node), jsonBytes({ module, kind, key }), { timeout })).data;
    } catch (err) {
      throw new AskError(`asking ${kind} "${key}" of node ${node}: ${errorText(err)}${refusedHint(err, node)}`, err);
    }
    const reply = decodeJson(AskReplySchema, data, { maxBytes: MAX_ASK_REPLY_BYTES, maxDepth: MAX_REPLY_DEPTH });
    if (!reply.ok) throw new AskError(`the client answered out of shape: ${reply.reason.startsWith('not JSON') ? 'not JSON' : reply.reason}`);
    if ('value' in reply.value) return reply.value.value;
    throw new AskError(reply.value.error);
  };
  // What each watch asks again once the connection is back: a notice sent while it was away is lost,
  // and the node's client may subscribe again after this connection is back.
  const watching = new Set<WatchAsks>();
  let following = false;
  const askAgainWhenBack = () => {
    if (following) return;
    following = true;
    void (async () => {
      for await (const s of nc.status()) if (s.type === 'reconnect') for (const asks of [...watching]) asks.askNow(true);
    })().catch(() => {});
  };
  const absentMs = opts.absentMs ?? DEFAULT_CLIENT_ABSENT_MS;
  const watch: Asker['watch'] = (kind, key, onChange) => {
    let stopped = false;
    // An answer that comes after the watch was stopped or the module closed the connection is not
    // its to hear: an ask in flight at `close()` failed with "connection closed" into the module's
    // callback after the module had its value and was done.
    const hear = (value: string | AskError) => void (stopped || nc.isClosed() || onChange(value));
    const asks = watchAsks(() => ask(kind, key), hear, { backoff: REASK_BACKOFF, absentMs });
    const stop = () => {
      stopped = true;
      asks.stop();
      watching.delete(asks);
      sub.unsubscribe();
    };
    const sub = nc.subscribe(changedSubject(node, module), {
      callback: (err, msg) => {
        // The bus refusing the notices is the login refused, as an ask is: said the same way, and the watch ends.
        if (err && isPermissionViolation(err) && !stopped) {
          const refused = new AskError(`watching ${kind} "${key}" of node ${node}: ${errorText(err)}${refusedHint(err, node)}`, err);
          stop();
          return void (nc.isClosed() || onChange(refused));
        }
        if (err) return;
        // A notice out of shape says nothing about this value: ignored, as one for another kind.
        const notice = decodeJson(ChangedNoticeSchema, msg.data, { maxBytes: MAX_CHANGED_NOTICE_BYTES, maxDepth: MAX_REPLY_DEPTH });
        if (!notice.ok) return;
        if (notice.value.kind === kind && (notice.value.key === undefined || notice.value.key === key)) asks.askNow(false);
      },
    });
    // Asked as after a reconnect: a module started before its node's client (a boot) hears the value once the client is up, not an error first.
    void nc.flush().then(() => stopped || asks.askNow(true));
    watching.add(asks);
    askAgainWhenBack();
    return { stop };
  };
  return { ask, watch };
}

/** The tool runner's connection and the asker on it, made by the first `ask` or `watch`. */
let fromEnvironment: Promise<{ nc: NatsConnection; asker: Asker }> | undefined;

/**
 * The connection and the asker the tool runner's environment names: MESH_NATS_URL, MESH_NODE, MESH_MODULE, and
 * MESH_NATS_NKEY (the runner's seed, `runner.<node>` on the bus `bus-config` generates), with the
 * runner's inbox prefix (DESIGN §11, §13).
 */
function environment(): Promise<{ nc: NatsConnection; asker: Asker }> {
  fromEnvironment ??= (async () => {
    const { MESH_NATS_URL: url, MESH_NODE: node, MESH_MODULE: module, MESH_NATS_NKEY: nkey } = process.env;
    if (!node || !module)
      throw new AskError(
        'MESH_NODE and MESH_MODULE are not set: run the module under its node’s tool runner, which sets them, or set them (and MESH_NATS_URL, MESH_NATS_NKEY) yourself',
      );
    const servers = (url ?? 'nats://127.0.0.1:4222').split(',');
    // A regular file within its limit, said as the variable it came from (a FIFO would hang the module, /dev/zero fill it).
    const seed = nkey ? readRegularFile(nkey, MAX_LOGIN_FILE_BYTES) : undefined;
    if (seed && !seed.ok) throw new AskError(`MESH_NATS_NKEY: ${seed.reason}: give the file holding the seed of runner.${node}`);
    // The first connection is tried once (a module started with the wrong seed or no bus is told at
    // once); once made it comes back after the bus does, as a daemon's, and its watches ask again.
    const nc = await connectBus({ servers, name: `module ${module}`, inboxPrefix: INBOX_PREFIXES.runner(node), ...(nkey ? { nkey } : {}) }, true, {
      reconnect: true,
    }).catch((err: unknown) => {
      const hint = inChain(err, isAuthError)
        ? `the bus refused the login: give the seed of runner.${node} in MESH_NATS_NKEY`
        : 'is MESH_NATS_URL the address of the bus, and is it up?';
      throw new AskError(`connecting to the bus at ${servers.join(',')} for module ${module} of node ${node}: ${errorText(err)}; ${hint}`, err);
    });
    return { nc, asker: asker({ nc, node, module }) };
  })();
  return fromEnvironment;
}

/** Asks the node's client for a value of the module the tool runner named. */
export async function ask(kind: string, key: string): Promise<string> {
  return (await environment()).asker.ask(kind, key);
}

/**
 * Watches a value of the module the tool runner named: now, and again on each change. Rejects with
 * the AskError, as `ask` does, when the bus refuses the login its notices (another node's runner
 * seed, or no runner's); `onChange` hears every later value and error.
 */
export async function watch(kind: string, key: string, onChange: (value: string | AskError) => void): Promise<{ stop(): void }> {
  const { nc, asker: asks } = await environment();
  // Until the bus has answered the subscription, a refusal is the watch's own to throw, not the callback's.
  let refused: AskError | undefined;
  let returned = false;
  const handle = asks.watch(kind, key, (value) => {
    if (!returned && value instanceof AskError && isPermissionViolation(value.busError)) refused ??= value;
    else onChange(value);
  });
  await nc.flush().catch(() => {});
  returned = true;
  if (refused) throw refused;
  return handle;
}

/**
 * Closes the connection `ask` and `watch` opened, ending their watches: without it the connection
 * keeps a script's process alive after its last ask. A later `ask` connects again.
 */
export async function close(): Promise<void> {
  const opened = fromEnvironment;
  fromEnvironment = undefined;
  const made = await opened?.catch(() => undefined);
  await made?.nc.close();
}
