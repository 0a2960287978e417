// The provider helper (DESIGN §1, §3): keeps what a provider serves in step with its consumers
// file — creating, rotating and withdrawing each consumer's resource through the adapter and
// publishing what was served in `<provider>_bound`. Driven by change: the file's directory watch,
// a capped backoff per failing consumer and an optional re-check; never a blind poll.
import type { KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import * as v from 'valibot';
import { ensureKv, jsonBytes, readAll, sameBytes } from '../shared/bus.ts';
import { boundBucket, isName, parseBoundKey, segmentNameProblem } from '../shared/keys.ts';
import { createLogger, underSystemd } from '../shared/log.ts';
import { BoundEntrySchema, decodeJson } from '../shared/schemas.ts';
import { labelOf, readConsumersFile, wantsOf, watchFile, type FileWatch, type Want } from './consumers-file.ts';
import { deriveLogin } from './logins.ts';
import type { Adapter, BoundValue, Served } from './types.ts';

/** The backoff after a failure: 1 s, doubling, at most 30 s. */
export const DEFAULT_RETRY = { firstMs: 1000, maxMs: 30_000 } as const;

/** Where the helper says what it does; one call, one line, never a credential. */
export type ProviderLog = { info(line: string): void; warn(line: string): void; error(line: string): void };

/** What runProvider is handed. */
export type ProviderOptions = {
  /** A connection to the bus; the helper never closes it. */
  nc: NatsConnection;
  /** The provider module's name (`postgres`): its bound entries go to `<provider>_bound`. */
  provider: string;
  /** The provision served (`database`), as in `${consumers:<provision>}`. */
  provision: string;
  /** The file the node's engine writes from the template holding `${consumers:<provision>}`. */
  consumersFile: string;
  /** The per-service half: creates, removes and checks one consumer's resource. */
  adapter: Adapter;
  /** A re-check of everything served every so many ms, for an adapter whose service drifts (default: none). */
  recheckMs?: number;
  /** The backoff after a failure, per consumer (default DEFAULT_RETRY). */
  retry?: { firstMs: number; maxMs: number };
  /** Copies of `<provider>_bound` kept when the helper creates it (default 1). */
  replicas?: number;
  /** Where lines go (default: stderr, with sd-daemon prefixes under systemd). */
  log?: ProviderLog;
};

/** A running helper. */
export type ProviderHandle = {
  /** Stops watching and retrying, and resolves once a reconcile under way has ended. */
  stop(): Promise<void>;
  /** Resolves once no reconcile is running or queued (a retry waiting for its time is not queued). */
  reconciled(): Promise<void>;
};

/** Serves the consumers of one provision of a provider module until stopped; see ProviderOptions. */
export function runProvider(opts: ProviderOptions): ProviderHandle {
  if (!isName(opts.provider)) throw new TypeError(`provider "${opts.provider}" is not a valid module name`);
  const problem = segmentNameProblem(opts.provision);
  if (problem) throw new TypeError(`provision ${problem}`);
  const loop = new ProviderLoop(opts);
  loop.begin();
  return { stop: () => loop.stop(), reconciled: () => loop.reconciled() };
}

/** What the helper holds for one bound key: a login it may have touched, and what it published. */
type Held = { as: string; label: string; published?: Uint8Array; served?: Served; fingerprint?: string };
/** A failed consumer waiting for its next try. */
type Retry = { failures: number; fingerprint: string | undefined; due: boolean; timer: NodeJS.Timeout };
/** What the next pass must do: read the file, visit every consumer, or only these keys. */
type Pending = { file: boolean; all: boolean; keys: Set<string> };

const ServedSchema = v.object({ user: v.pipe(v.string(), v.minLength(1)), values: v.record(v.string(), v.union([v.string(), v.number()])) });
const nothing = (): Pending => ({ file: false, all: false, keys: new Set() });
const isPending = (p: Pending) => p.file || p.all || p.keys.size > 0;
const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err));

class ProviderLoop {
  readonly #o: ProviderOptions;
  readonly #log: ProviderLog;
  readonly #retry: { firstMs: number; maxMs: number };
  readonly #bucket: string;
  #kv: KV | undefined;
  /** What the file asks for, from its last good read; undefined until there is one. */
  #wants: Map<string, Want> | undefined;
  /** The bytes last read (null: no file), so a write of the same bytes is no change. */
  #lastBytes: Buffer | null | undefined;
  readonly #held = new Map<string, Held>();
  readonly #retries = new Map<string, Retry>();
  #pending = nothing();
  #running = false;
  #stopped = false;
  #waiters: (() => void)[] = [];
  #watch: FileWatch | undefined;
  #timers = new Set<NodeJS.Timeout>();
  #loopFailures = 0;
  /** Whether a whole pass that failed has its retry armed (one at a time). */
  #loopRetrying = false;

  constructor(opts: ProviderOptions) {
    this.#o = opts;
    this.#log = opts.log ?? createLogger({ prefix: underSystemd() });
    this.#retry = opts.retry ?? DEFAULT_RETRY;
    this.#bucket = boundBucket(opts.provider);
  }

  begin(): void {
    this.#armWatch(0);
    const every = this.#o.recheckMs;
    if (every) this.#timers.add(setInterval(() => this.#kick({ file: true, all: true }), every).unref());
    this.#kick({ file: true, all: true });
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#watch?.close();
    for (const t of this.#timers) clearTimeout(t);
    for (const r of this.#retries.values()) clearTimeout(r.timer);
    await this.reconciled();
  }

  reconciled(): Promise<void> {
    if (!this.#running && (this.#stopped || !isPending(this.#pending))) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  /** Watches the file; a directory that cannot be watched is tried again with the backoff. */
  #armWatch(failures: number): void {
    const again = (err: unknown, failed: number) => {
      this.#watch?.close();
      const wait = this.#backoff(failed);
      this.#say('error', `cannot watch ${this.#o.consumersFile}: ${errorText(err)}; trying again in ${wait} ms`);
      this.#later(wait, () => this.#armWatch(failed));
    };
    try {
      this.#watch = watchFile(this.#o.consumersFile, () => this.#kick({ file: true }), (err) => again(err, 1));
      // The file may have changed while nothing watched it.
      if (failures > 0) this.#kick({ file: true });
    } catch (err) {
      again(err, failures + 1);
    }
  }

  #kick(what: { file?: boolean; all?: boolean; key?: string }): void {
    if (this.#stopped) return;
    this.#pending.file ||= what.file ?? false;
    this.#pending.all ||= what.all ?? false;
    if (what.key !== undefined) this.#pending.keys.add(what.key);
    void this.#drain();
  }

  /** Runs passes one at a time until nothing is pending: a burst of changes folds into one pass. */
  async #drain(): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    while (!this.#stopped && isPending(this.#pending)) {
      const pass = this.#pending;
      this.#pending = nothing();
      try {
        await this.#pass(pass);
        this.#loopFailures = 0;
      } catch (err) {
        const wait = this.#backoff(++this.#loopFailures);
        this.#say('error', `reconcile of ${this.#o.provision} failed: ${errorText(err)}; trying again in ${wait} ms`);
        if (!this.#loopRetrying) {
          this.#loopRetrying = true;
          this.#later(wait, () => {
            this.#loopRetrying = false;
            this.#kick({ file: true, all: true });
          });
        }
      }
    }
    this.#running = false;
    for (const resolve of this.#waiters.splice(0)) resolve();
  }

  async #pass(pass: Pending): Promise<void> {
    if (!this.#kv) await this.#start();
    const changed = pass.file && (await this.#readFile());
    if (!this.#wants) return; // no good list yet: nothing is safe to do
    const keys = pass.all || changed ? new Set([...this.#wants.keys(), ...this.#held.keys()]) : pass.keys;
    for (const key of keys) {
      if (this.#stopped) return;
      await this.#settle(key, pass.all || changed);
    }
  }

  /** Opens (creating when missing) the bucket and takes what it holds for this provision as served. */
  async #start(): Promise<void> {
    const kv = await ensureKv(this.#o.nc, this.#bucket, this.#o.replicas ?? 1);
    for (const [key, bytes] of await readAll(this.#o.nc, this.#bucket, '>')) {
      const parsed = parseBoundKey(key);
      if (!parsed.ok) {
        this.#say('warn', `${this.#bucket} ${key}: key out of shape (${parsed.reason}); left alone`);
        continue;
      }
      const { node, module, provision, local } = parsed.value;
      if (provision !== this.#o.provision) continue;
      const label = labelOf(node, module, local);
      // The login is always derived, never taken from the bucket: a stored value names no SQL.
      const held: Held = { as: deriveLogin({ node, module, local: local ?? null }), label, published: bytes };
      const entry = decodeJson(BoundEntrySchema, bytes);
      if (!entry.ok) this.#say('warn', `${this.#bucket} ${key}: ${entry.reason}; serving it again`);
      else if ('as' in entry.value) held.served = { user: entry.value.user, values: plainValues(entry.value.values) };
      this.#held.set(key, held);
    }
    this.#kv = kv;
    this.#say('info', `${this.#bucket}: ${this.#held.size} bound entries of ${this.#o.provision} at start`);
  }

  /** Reads the file; true when what it asks for changed. A malformed file keeps the last good list. */
  async #readFile(): Promise<boolean> {
    const read = await readConsumersFile(this.#o.consumersFile);
    const bytes = read.state === 'absent' ? null : read.bytes;
    const last = this.#lastBytes;
    if (last !== undefined && (bytes === null || last === null ? bytes === last : bytes.equals(last))) return false;
    this.#lastBytes = bytes;
    if (read.state === 'malformed') {
      const kept = this.#wants ? `keeping the last good list (${this.#wants.size} consumers)` : 'nothing is served or withdrawn until it is fixed';
      this.#say('error', `consumers file ${this.#o.consumersFile} ${read.reason}: ${kept}`);
      return false;
    }
    if (read.state === 'absent') this.#say('info', `consumers file ${this.#o.consumersFile} is absent: no consumers`);
    this.#wants = wantsOf(read.state === 'read' ? read.entries : [], this.#o.provision);
    return true;
  }

  /** Brings one key in step; a failure is retried for that consumer alone, with the backoff. */
  async #settle(key: string, full: boolean): Promise<void> {
    const want = this.#wants!.get(key);
    const retry = this.#retries.get(key);
    if (retry && !retry.due && retry.fingerprint === want?.fingerprint) return;
    try {
      if (want) await this.#serveIfNeeded(want, full);
      else await this.#withdraw(key);
      if (retry) clearTimeout(retry.timer);
      this.#retries.delete(key);
    } catch (err) {
      this.#failed(key, want, retry, err);
    }
  }

  async #serveIfNeeded(want: Want, full: boolean): Promise<void> {
    const held = this.#held.get(want.key);
    const check = this.#o.adapter.check?.bind(this.#o.adapter);
    const fresh = held?.fingerprint === want.fingerprint;
    if (fresh && !(full && held?.served && check)) return;
    // Served before a restart (fingerprint unknown) or re-checked on a full pass: check, don't recreate.
    if (held?.served && check && (fresh || held.fingerprint === undefined)) {
      if (await check(want.grant, held.served)) {
        held.fingerprint = want.fingerprint;
        return;
      }
      this.#say('warn', `${want.label}: the check found ${want.grant.as} drifted; creating it again`);
    }
    await this.#serve(want, held?.published);
  }

  async #serve(want: Want, published: Uint8Array | undefined): Promise<void> {
    // Held before the create: a create that fails half-way still leaves a login to withdraw.
    const held: Held = { as: want.grant.as, label: want.label, ...(published ? { published } : {}) };
    this.#held.set(want.key, held);
    let served: Served;
    try {
      served = await this.#o.adapter.create(want.grant);
    } catch (err) {
      if (!(err instanceof Error && err.name === 'Refused')) throw err;
      return this.#refuse(want, held, this.#redact(err.message));
    }
    const problem = servedProblem(served, want.grant.credential);
    if (problem) return this.#refuse(want, held, `the adapter served ${problem}`);
    await this.#publish(want.key, held, { as: want.grant.as, user: served.user, values: served.values });
    Object.assign(held, { served, fingerprint: want.fingerprint });
    this.#say('info', `${want.label}: served as ${want.grant.as}`);
  }

  async #refuse(want: Want, held: Held, reason: string): Promise<void> {
    await this.#publish(want.key, held, { refused: reason });
    held.fingerprint = want.fingerprint;
    this.#say('warn', `${want.label}: refused: ${reason}`);
  }

  async #publish(key: string, held: Held, value: BoundValue): Promise<void> {
    const bytes = jsonBytes(value);
    if (sameBytes(held.published, bytes)) return;
    await this.#kv!.put(key, bytes);
    held.published = bytes;
  }

  async #withdraw(key: string): Promise<void> {
    const held = this.#held.get(key);
    if (!held) return;
    await this.#o.adapter.remove(held.as);
    if (held.published) await this.#kv!.delete(key);
    this.#held.delete(key);
    this.#say('info', `${held.label}: withdrawn (${held.as} removed, its bound entry deleted)`);
  }

  #failed(key: string, want: Want | undefined, last: Retry | undefined, err: unknown): void {
    if (last) clearTimeout(last.timer);
    const failures = (last && last.fingerprint === want?.fingerprint ? last.failures : 0) + 1;
    const wait = this.#backoff(failures);
    const retry: Retry = { failures, fingerprint: want?.fingerprint, due: false, timer: setTimeout(() => {
      retry.due = true;
      this.#kick({ key });
    }, wait).unref() };
    this.#retries.set(key, retry);
    const label = want?.label ?? this.#held.get(key)?.label ?? key;
    this.#say('error', `${label}: ${want ? 'serving' : 'withdrawing'} failed (try ${failures}): ${errorText(err)}; trying again in ${wait} ms`);
  }

  #backoff(failures: number): number {
    return Math.min(this.#retry.firstMs * 2 ** (failures - 1), this.#retry.maxMs);
  }

  #later(ms: number, fn: () => void): void {
    if (this.#stopped) return;
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      fn();
    }, ms).unref();
    this.#timers.add(timer);
  }

  /** Every line passes here: any credential the file holds is cut out, whoever wrote the text. */
  #say(level: keyof ProviderLog, line: string): void {
    this.#log[level](this.#redact(line));
  }

  #redact(text: string): string {
    for (const want of this.#wants?.values() ?? []) text = text.replaceAll(want.grant.credential, '<credential>');
    return text;
  }
}

/** Says what is wrong with what an adapter served: not `{user, values}` of strings and numbers, or the credential among them. */
function servedProblem(served: unknown, credential: string): string | undefined {
  const checked = v.safeParse(ServedSchema, served);
  if (!checked.success) return `no valid {user, values} (${checked.issues.map((i) => v.getDotPath(i) ?? 'value').join(', ')})`;
  const texts = [checked.output.user, ...Object.values(checked.output.values).map(String)];
  return texts.some((t) => t.includes(credential)) ? 'the credential among its values: not published' : undefined;
}

/** The string and number values of a stored entry (what a Served holds). */
function plainValues(values: Record<string, unknown>): Record<string, string | number> {
  return Object.fromEntries(Object.entries(values).filter((e): e is [string, string | number] => typeof e[1] === 'string' || typeof e[1] === 'number'));
}
