// The provider helper's test world: a real nats-server, a fake adapter recording every call, a
// consumers file replaced by rename as the engine does, and a scan of every log line and bucket
// value for every credential written.
import * as assert from 'uvu/assert';
import { renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { connectBus, openKv } from '../../src/shared/bus/bus.ts';
import { readAll } from '../../src/shared/bus/watch/read-all.ts';
import { CREDENTIAL_SET } from '../../src/shared/contract/bound-entry.ts';
import { memoryLogger } from '../../src/shared/cli/log.ts';
import { Refused, runProvider, type Adapter, type ConsumerEntry, type Grant, type ProviderHandle, type ProviderOptions } from '../../src/sdk/provider-index.ts';
import { startNats, type NatsServer } from './nats.ts';
import { tempDir } from './temp.ts';

let server: NatsServer | undefined;
let nc: NatsConnection | undefined;
let suite = 0;

/** Starts the suite's nats-server and connection (call from test.before). */
export async function startProviderBus(): Promise<NatsConnection> {
  server = await startNats();
  nc = await connectBus({ servers: [server.url], name: 'provider-test' });
  return nc;
}

/** Stops them (call from test.after). */
export async function stopProviderBus(): Promise<void> {
  await nc?.close();
  await server?.cleanup();
}

function bus(): NatsConnection {
  if (!nc) throw new Error('startProviderBus was not called');
  return nc;
}

/** One call the fake adapter heard. */
export type Call = { op: 'create' | 'remove' | 'check'; as: string; credential?: string; values?: Record<string, unknown>; at: number };

/** An adapter in memory: every call recorded; refusals, transient failures and drift set by the test. */
export function fakeAdapter(withCheck = true) {
  const calls: Call[] = [];
  const refuse = new Map<string, string>();
  const failures = new Map<string, number>();
  const drifted = new Set<string>();
  /** A create of a login waits for its gate, when it has one. */
  const gates = new Map<string, Promise<void>>();
  const adapter: Adapter = {
    async create(g: Grant) {
      calls.push({ op: 'create', as: g.as, credential: g.credential, values: g.values, at: Date.now() });
      await gates.get(g.as);
      const reason = refuse.get(g.as);
      if (reason !== undefined) throw new Refused(reason);
      const left = failures.get(g.as) ?? 0;
      if (left > 0) {
        failures.set(g.as, left - 1);
        // A careless driver quoting the connection string: the helper must not pass it on.
        throw new Error(`connection reset while setting password '${g.credential}'`);
      }
      drifted.delete(g.as);
      return { user: g.as, values: { host: 'db1', port: 5432, database: String(g.values['name']) } };
    },
    async remove(as: string) {
      calls.push({ op: 'remove', as, at: Date.now() });
    },
    ...(withCheck
      ? {
          async check(g: Grant) {
            calls.push({ op: 'check', as: g.as, at: Date.now() });
            return !drifted.has(g.as);
          },
        }
      : {}),
  };
  const count = (op: Call['op'], as: string) => calls.filter((c) => c.op === op && c.as === as).length;
  return { adapter, calls, refuse, failures, drifted, gates, count };
}

/** What a test may set beside the world's own options. */
export type WorldOptions = Partial<Omit<ProviderOptions, 'nc' | 'provider' | 'provision' | 'consumersFile' | 'adapter' | 'log'>>;

/** One test's world: a provider name of its own, a temp dir with the consumers file, a log, the credentials it used. */
export async function world(provision = 'database') {
  const nc = bus();
  suite += 1;
  const provider = `prov${process.pid}x${suite}`;
  const dir = tempDir('provider-');
  const file = join(dir, 'consumers.json');
  const log = memoryLogger();
  const credentials = new Set<string>();
  /** Texts that hold a credential in some form: none may reach a log line or a bucket value either. */
  const planted = new Set<string>();
  const handles: ProviderHandle[] = [];
  const bucket = `${provider}_bound`;
  /** Replaces the file by rename, as the engine does. */
  const write = (entries: ConsumerEntry[] | string) => {
    if (typeof entries !== 'string') for (const e of entries) credentials.add(e.credential);
    const tmp = join(dir, '.consumers.json.tmp');
    writeFileSync(tmp, typeof entries === 'string' ? entries : JSON.stringify(entries), { mode: 0o600 });
    renameSync(tmp, file);
  };
  const start = (adapter: Adapter, extra: WorldOptions = {}) => {
    const handle = runProvider({ nc, provider, provision, consumersFile: file, adapter, log, ...extra });
    handles.push(handle);
    return handle;
  };
  let created = false;
  /** The bound entry at a key: its JSON, or null when missing, deleted, or the bucket is not there yet. */
  const bound = async (key: string): Promise<unknown> => {
    // A get from a bucket not created yet waits for its timeout rather than failing at once.
    created ||= await jetstreamManager(nc)
      .then((jsm) => jsm.streams.info(`KV_${bucket}`))
      .then(
        () => true,
        () => false,
      );
    if (!created) return null;
    const entry = await (await openKv(nc, bucket)).get(key);
    return entry && entry.operation === 'PUT' ? entry.json() : null;
  };
  /** A served entry without its credential-set marker, which must be there (a string); anything else (a refusal, one out of shape) as `bound` gives it. */
  const served = async (key: string): Promise<unknown> => {
    const entry = (await bound(key)) as { values?: Record<string, unknown>; refused?: unknown } | null;
    if (!entry?.values || 'refused' in entry) return entry;
    const { [CREDENTIAL_SET]: marker, ...values } = entry.values;
    assert.type(marker, 'string', `${key} has no ${CREDENTIAL_SET} marker`);
    return { ...entry, values };
  };
  /** Every credential (1 byte and longer: the short ones are refused, so never written) and every planted text, looked for in every log line and every value of the bucket. */
  const assertNoLeak = async () => {
    const values = created ? [...(await readAll(nc, bucket)).values()].map((b) => new TextDecoder().decode(b)) : [];
    for (const secret of [...credentials].filter((c) => Buffer.byteLength(c) >= 8).concat([...planted])) {
      for (const line of log.lines) assert.not.ok(line.includes(secret), `a log line holds a credential: ${line}`);
      for (const value of values) assert.not.ok(value.includes(secret), `a bound value holds a credential: ${value}`);
    }
  };
  const done = async () => {
    for (const h of handles) await h.stop();
    await assertNoLeak();
    rmSync(dir, { recursive: true, force: true });
  };
  return { nc, provider, bucket, file, log, write, start, bound, served, done, provision, credentials, planted };
}

/** A consumers file entry whose values ask for a database named `name`. */
export const consumer = (node: string, module: string, local: string | null, credential: string, name = module): ConsumerEntry => ({
  consumer: node,
  module,
  local,
  credential,
  value: { name },
});

/**
 * The entry with the consumer's whole provision entry, as a client fills it (DESIGN §3): provider
 * `provider` on node db1, its values the entry's, and `extra` fields of the entry (a secret name).
 */
export const asking = (entry: ConsumerEntry, provider: string, provision = 'database', extra: { name?: string } = {}): ConsumerEntry => ({
  ...entry,
  provision: { provider, provision, node: 'db1', ...(entry.local === null ? {} : { local: entry.local }), ...extra, values: entry.value },
});
