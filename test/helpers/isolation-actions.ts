// What the isolation matrix's rows are made of (DESIGN §11, issue 12): the mesh they run on (node
// `na` is the attacker's, `nb` the other node, whose keys must stay as they are), the actions a
// real connection makes, and the builders of the common kinds of row.
import { createInbox, headers, type NatsConnection } from '@nats-io/transport-node';
import { openKv } from '../../src/shared/bus/bus.ts';
import { jsonBytes } from '../../src/shared/base/bytes.ts';
import { watchKv } from '../../src/shared/bus/watch/watch.ts';
import { APPLIED, COLLECT, CONFIG, NEEDS } from '../../src/shared/contract/buckets.ts';
import { collectKey, needKey } from '../../src/shared/contract/keys.ts';
import { INBOX_PREFIXES } from '../../src/server/commands/bus-config/config.ts';
import { USERS } from '../../src/server/commands/bus-config/users.ts';
import { apiError, judgeRead, judgeWrite, PROBE_TIMEOUT_MS, refusal, SETTLE_MS, stored, type Observed, type Verdict } from './isolation-probe.ts';
import { sleep } from './wait.ts';

/** The attacker's node, the other node, the module both run, and the provider both read. */
export const A = 'na';
export const B = 'nb';
export const MODULE = 'web';
export const PROVIDER = 'pg';
/** The collection the module's item goes to. */
export const COLLECTION = 'shell:zsh:normal';
/** The config value each node's module has, by node. */
export const LEVEL = (node: string) => `${node}-level`;
/** The vault name of nb.web's credential (whose plan binds PROVIDER on na), and the credential. */
export const CREDENTIAL = { name: `pair/${PROVIDER}/database/${B}/${MODULE}`, value: 'nb-credential' };

/** What a row runs against: the actors' connections and what the handlers said. */
export type MatrixContext = {
  /** The test's connection, as admin (reads every key). */
  admin: NatsConnection;
  /** The connection of an actor, by user name. */
  as(user: string): NatsConnection;
  /** What the seat has said so far. */
  seatSaid(): string;
  /** What a node's client has said so far. */
  nodeSaid(node: string): string;
  /** The names the vault was asked, in order. */
  vaultAsked(): readonly string[];
  /** The requests the vault ignored (`<subject> reply <reply>`), in order. */
  vaultIgnored(): readonly string[];
  /** The archive's bytes as published. */
  archive: Uint8Array;
  /** A node's leaf login on the hub (bus-config --leaf-listen): the hub's client URL, the user and its password. */
  leafLogin(node: string): { url: string; user: string; password: string };
  /** A new connection as `user`, named `name`, with its inbox prefix; closed with the mesh. */
  connect(user: string, name?: string): Promise<NatsConnection>;
};

/** One row: who does what, what should come of it, and how to see what did. */
export type Row = { actor: string; action: string; expected: Verdict; run(c: MatrixContext): Promise<Observed> };

export const client = USERS.client(A);
export const runner = USERS.runner(A);
export const key = {
  config: (n: string) => `${n}.${MODULE}.level`,
  report: (n: string) => `${n}.${MODULE}`,
  need: (n: string) => needKey(n, MODULE, 'config', 'level'),
  item: (n: string) => collectKey(n, COLLECTION, MODULE),
  bound: (n: string) => `${n}.${MODULE}.database`,
  probe: { [APPLIED]: `${A}.probe`, [NEEDS]: needKey(A, 'probe', 'config', 'x'), [COLLECT]: collectKey(A, 'probe', 'probe') } as Record<string, string>,
};
export const kvSubject = (bucket: string, k: string) => `$KV.${bucket}.${k}`;

/** A KV put as a request: the JetStream error it is answered with, or nothing when stored. */
export async function put(nc: NatsConnection, bucket: string, k: string, value: string, opts: { hdr?: [string, string] } = {}): Promise<string | undefined> {
  const h = opts.hdr ? headers() : undefined;
  if (opts.hdr) h!.set(...opts.hdr);
  const reply = await nc.request(kvSubject(bucket, k), value, { timeout: PROBE_TIMEOUT_MS, ...(h ? { headers: h } : {}) });
  return apiError(reply.data);
}

/** A KV get the way a client opens buckets: bound only, direct get. */
export async function kvGet(nc: NatsConnection, bucket: string, k: string): Promise<string | null> {
  const e = await (await openKv(nc, bucket)).get(k);
  return e && e.operation === 'PUT' ? e.string() : null;
}

/** The value of `k` seen by a watch of `filter` (the project's own watch: a filtered ordered consumer). */
export async function watched(nc: NatsConnection, bucket: string, filter: string, k: string): Promise<string | null> {
  let value: string | null = null;
  const w = await watchKv(nc, bucket, filter, (e) => void (e.key === k && e.value && (value = new TextDecoder().decode(e.value))));
  try {
    await w.caughtUp;
  } finally {
    w.stop();
  }
  return value;
}

/**
 * The value of `k` seen by a watch of `filter` resumed as a start over its record of plans does
 * (src/client/plans/record.ts): its consumer begun after the stream sequence just before `k`'s.
 */
export async function watchedFrom(nc: NatsConnection, bucket: string, filter: string, k: string): Promise<string | null> {
  const entry = await (await openKv(nc, bucket)).get(k);
  if (!entry) return null;
  let value: string | null = null;
  const w = await watchKv(nc, bucket, filter, (e) => void (e.key === k && e.value && (value = new TextDecoder().decode(e.value))), undefined, {
    resume: () => ({ after: entry.revision - 1, events: [] }),
  });
  try {
    await w.caughtUp;
  } finally {
    w.stop();
  }
  return value;
}

/** The stored text of a key, as admin reads it. */
export async function text(c: MatrixContext, bucket: string, k: string): Promise<string> {
  const s = await stored(c.admin, bucket, k);
  if (!s) throw new Error(`${bucket} ${k} is not there to compare with`);
  return new TextDecoder().decode(s.data);
}

/** Creates a push consumer on `bucket` for `filter` delivering to `deliver`, by the named, filtered subject. */
export async function pushConsumer(
  nc: NatsConnection,
  bucket: string,
  filter: string,
  name: string,
  deliver: string,
  subject?: string,
): Promise<string | undefined> {
  const filterSubject = kvSubject(bucket, filter);
  const body = {
    stream_name: `KV_${bucket}`,
    config: { name, deliver_subject: deliver, filter_subject: filterSubject, deliver_policy: 'all', ack_policy: 'none' },
  };
  const reply = await nc.request(subject ?? `$JS.API.CONSUMER.CREATE.KV_${bucket}.${name}.${filterSubject}`, jsonBytes(body), { timeout: PROBE_TIMEOUT_MS });
  return apiError(reply.data);
}

/** Reads the first value a consumer created on `subject` for `filter` delivers to the actor's own inbox. */
export async function consumerRead(nc: NatsConnection, subject: string, filter: string, name?: string): Promise<string | null> {
  const inbox = createInbox(INBOX_PREFIXES.node(A));
  const sub = nc.subscribe(inbox, { max: 1 });
  try {
    const body = {
      stream_name: `KV_${CONFIG}`,
      config: { ...(name ? { name } : {}), deliver_subject: inbox, filter_subject: kvSubject(CONFIG, filter), deliver_policy: 'all', ack_policy: 'none' },
    };
    const reply = await nc.request(subject, jsonBytes(body), { timeout: PROBE_TIMEOUT_MS });
    const error = apiError(reply.data);
    if (error) throw new Error(error);
    for await (const m of sub) return m.string();
    return null;
  } finally {
    sub.unsubscribe();
  }
}

/**
 * Counts what `nc` receives on `subject` while `fn` runs (and a settle after it). Nothing received,
 * `fn` runs once more after the settle: a subscription made on the hub reaches a site's leaf server
 * a moment after its flush, and a publish there before it arrives is dropped, as a refused one is.
 */
export async function received(nc: NatsConnection, subject: string, fn: () => Promise<unknown>): Promise<number> {
  const sub = nc.subscribe(subject);
  await nc.flush();
  try {
    await fn();
    await sleep(SETTLE_MS);
    if (sub.getReceived() > 0) return sub.getReceived();
    await fn();
    await sleep(SETTLE_MS);
    return sub.getReceived();
  } finally {
    sub.unsubscribe();
  }
}

/** An actor's own write, judged by admin reading back exactly the bytes put. */
export function ownWrite(bucket: string): Row {
  const k = key.probe[bucket]!;
  const value = JSON.stringify({ probe: A, bucket });
  return {
    actor: client,
    action: `put its own key \`${k}\` in ${bucket}`,
    expected: 'allowed',
    async run(c) {
      const said = await put(c.as(client), bucket, k, value).catch(refusal);
      const now = await stored(c.admin, bucket, k);
      if (now && new TextDecoder().decode(now.data) === value) return { verdict: 'allowed', how: 'admin reads back the bytes put' };
      return { verdict: 'refused', how: said ?? 'nothing stored' };
    },
  };
}

/** A write of `nb`'s key (or the mesh's) the actor must not make. */
export function foreignWrite(actor: string, bucket: string, k: string, action = `put \`${k}\` in ${bucket}`): Row {
  return {
    actor,
    action,
    expected: 'refused',
    run: (c) => judgeWrite(c.admin, c.as(actor), [bucket, k], () => put(c.as(actor), bucket, k, '{"forged":true}')),
  };
}

/** A read that must return the stored value (`label` says it when it is the same on every run). */
export function read(
  actor: string,
  action: string,
  expected: Verdict,
  bucket: string,
  k: string,
  fn: (nc: NatsConnection) => Promise<string | null>,
  label?: string,
): Row {
  return { actor, action, expected, run: async (c) => judgeRead(await text(c, bucket, k), () => fn(c.as(actor)), label) };
}

/** An actor publishing with a reply subject aimed at a key it may not write. */
export function forgedReply(
  actor: string,
  action: string,
  target: readonly [string, string],
  publish: (nc: NatsConnection, reply: string) => void,
  also: readonly (readonly [string, string])[] = [],
): Row {
  return {
    actor,
    action,
    expected: 'refused',
    run: (c) => judgeWrite(c.admin, c.as(actor), target, async () => void publish(c.as(actor), kvSubject(...target)), also),
  };
}
