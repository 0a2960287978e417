// The provider helper's loop (DESIGN §1): reads the consumers file when it changes, and brings each
// consumer in step on a bounded work queue — a failing or hung consumer waits for its own retry
// (capped backoff) while the others are served. Driven by change: the file's directory watch, a
// retry per failing consumer and an optional re-check; never a blind poll.
import { Backoff } from '../shared/base/backoff.ts';
import { AdapterCalls } from './adapter-calls.ts';
import type { BoundStore } from './bound-store.ts';
import { BucketOpening } from './bucket-opening.ts';
import { ConsumerSync } from './consumer-sync.ts';
import type { Want } from './consumers-file.ts';
import { KeptWatch } from './kept-watch.ts';
import type { ProviderLog, ResolvedOptions } from './provider-options.ts';
import { isUnavailable, Outage } from './outage.ts';
import { Retries } from './retries.ts';
import { WantedList } from './wanted-list.ts';
import { WorkQueue } from './work-queue.ts';
import { errorText } from '../shared/base/errors.ts';

/** The line written in place of one that would hold a consumer's credential. */
export const WITHHELD_LINE = "provider helper: a line was withheld: it held a consumer's credential";
/** What a failure's message is replaced by when it holds a consumer's credential. */
const WITHHELD_MESSAGE = "(its message is withheld: it holds a consumer's credential)";

/** What the next read must do: read the file, and whether to visit every consumer. */
type Refresh = { file: boolean; all: boolean };

/** One helper's loop; see the file's comment. */
export class Reconciler {
  readonly #o: ResolvedOptions;
  readonly #calls: AdapterCalls;
  readonly #queue: WorkQueue;
  readonly #sync: ConsumerSync;
  #store: BoundStore | undefined;
  readonly #wanted: WantedList;
  readonly #retries: Retries;
  /** The adapter's service not answering: said once for every consumer, its end too. */
  readonly #outage: Outage;
  /** Consumers asked for while a call given up on still runs for them, with whether a full pass was asked. */
  readonly #deferred = new Map<string, boolean>();
  #refresh: Refresh = { file: false, all: false };
  /** Whether reads are running; `#refreshDone` resolves when they end. */
  #refreshing = false;
  #refreshDone: Promise<void> = Promise.resolve();
  /** Reads failed in a row, and the wait before the next. */
  readonly #readBackoff: Backoff;
  #refreshRetrying = false;
  #stopped = false;
  readonly #watch: KeptWatch;
  readonly #timers = new Set<NodeJS.Timeout>();
  /** The bound bucket's opening, this helper's claim on its provider and provision first. */
  readonly #opening: BucketOpening;
  #ended: (why: string) => void = () => {};
  /** Resolves with why, when the helper stops by itself: another serves its provider and provision, or the bus refuses its login. */
  readonly ended = new Promise<string>((resolve) => (this.#ended = resolve));

  constructor(opts: ResolvedOptions) {
    this.#o = opts;
    this.#wanted = new WantedList(opts.consumersFile, opts.provision, (level, line) => this.#say(level, line));
    this.#opening = new BucketOpening(
      opts,
      (level, line) => this.#say(level, line),
      () => this.#stopped,
    );
    this.#outage = new Outage((level, line) => this.#say(level, line));
    this.#calls = new AdapterCalls(
      opts.callTimeoutMs,
      (key) => this.#settled(key),
      () => this.#outage.answered(),
    );
    this.#readBackoff = new Backoff(opts.retry);
    this.#watch = new KeptWatch({
      file: opts.consumersFile,
      retry: opts.retry,
      onChange: () => this.#kick({ file: true }),
      say: (level, line) => this.#say(level, line),
      later: (ms, fn) => this.#later(ms, fn),
    });
    // A retry is a full visit: a check that failed (a re-check's, or one at start) is made again,
    // where a plain visit found the consumer's fingerprint unchanged, took that for done and reset its backoff.
    this.#retries = new Retries(opts.retry, (key) => {
      if (!this.#stopped) this.#queue.add(key, true);
    });
    this.#queue = new WorkQueue(
      opts.concurrency,
      (key, full) => this.#work(key, full),
      (key, err) => this.#say('error', `${key}: ${this.#screen(errorText(err))}`),
    );
    this.#sync = new ConsumerSync({
      adapter: opts.adapter,
      calls: this.#calls,
      store: () => this.#store!,
      matcher: () => this.#wanted.matcher,
      say: (level, line) => this.#say(level, line),
    });
  }

  /** Watches the file, arms the re-check, and reads everything once. */
  begin(): void {
    this.#watch.arm();
    const every = this.#o.recheckMs;
    if (every) this.#timers.add(setInterval(() => this.#kick({ file: true, all: true }), every).unref());
    this.#kick({ file: true, all: true });
  }

  /** Stops watching and retrying, aborts the adapter calls under way, and waits for the work under way at most `stopTimeoutMs`. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#opening.release();
    this.#watch.close();
    for (const t of this.#timers) clearTimeout(t);
    this.#retries.clear();
    this.#queue.clear();
    this.#calls.stop();
    let bound: NodeJS.Timeout | undefined;
    await Promise.race([this.reconciled(), new Promise<void>((resolve) => (bound = setTimeout(resolve, this.#o.stopTimeoutMs)))]);
    clearTimeout(bound);
  }

  /** Resolves once no read runs or is asked for and no consumer waits or is worked on (a retry waiting for its time is not waiting). */
  async reconciled(): Promise<void> {
    for (;;) {
      if (this.#refreshing) await this.#refreshDone;
      else if (!this.#queue.idle) await this.#queue.whenIdle();
      else return;
    }
  }

  #kick(what: Partial<Refresh>): void {
    if (this.#stopped) return;
    this.#refresh.file ||= what.file ?? false;
    this.#refresh.all ||= what.all ?? false;
    if (this.#refreshing) return;
    this.#refreshing = true;
    this.#refreshDone = this.#drainRefresh();
  }

  /** Runs reads one at a time until none is asked for: a burst of changes folds into one read. */
  async #drainRefresh(): Promise<void> {
    while (!this.#stopped && (this.#refresh.file || this.#refresh.all)) {
      const asked = this.#refresh;
      this.#refresh = { file: false, all: false };
      try {
        await this.#read(asked);
        this.#readBackoff.reset();
      } catch (err) {
        this.#readFailed(err);
      }
    }
    this.#refreshing = false;
  }

  /** Opens the bucket when not yet open, reads the file, and queues every consumer when the file changed or a full pass is asked. */
  async #read(asked: Refresh): Promise<void> {
    if (!this.#store) await this.#open();
    if (this.#stopped || !this.#store) return;
    const changed = asked.file && (await this.#wanted.read());
    const wants = this.#wanted.wants;
    if (!wants || !(asked.all || changed)) return;
    for (const key of new Set([...wants.keys(), ...this.#sync.held.keys()])) this.#queue.add(key, true);
  }

  async #open(): Promise<void> {
    const opened = await this.#opening.open();
    if (!opened) return;
    if ('ended' in opened) return this.#end(opened.ended);
    this.#sync.adopt(opened.found);
    this.#store = opened.store;
    this.#opening.opened();
  }

  /** Another helper serves this provider and provision, or the bus refuses this login: said at error; the helper stops, having touched nothing. */
  #end(why: string): void {
    this.#say('error', why);
    this.#ended(why);
    void this.stop();
  }

  #readFailed(err: unknown): void {
    const wait = this.#readBackoff.failed();
    // The bucket not opened yet for want of JetStream (a cluster without a meta leader): a wait, said once (issue 31).
    const waiting = !this.#store && this.#opening.waitsFor(err);
    if (!waiting) this.#say('error', `reconcile of ${this.#o.provision} failed: ${this.#screen(errorText(err))}; trying again in ${wait} ms`);
    if (this.#refreshRetrying) return;
    this.#refreshRetrying = true;
    this.#later(wait, () => {
      this.#refreshRetrying = false;
      this.#kick({ file: true, all: true });
    });
  }

  /** Brings one consumer in step; a failure is retried for that consumer alone, with the backoff. */
  async #work(key: string, full: boolean): Promise<void> {
    if (this.#stopped) return;
    if (this.#calls.busy(key)) {
      this.#deferred.set(key, (this.#deferred.get(key) ?? false) || full);
      return;
    }
    const want = this.#wanted.wants!.get(key);
    if (!this.#retries.mayRun(key, want?.fingerprint)) return;
    try {
      if (want) await this.#sync.serveIfNeeded(want, full);
      else await this.#sync.withdraw(key);
      this.#retries.succeeded(key);
    } catch (err) {
      if (!this.#stopped) this.#failed(key, want, err);
    }
  }

  /** A consumer's call settled: when it was asked for meanwhile, it is queued now. */
  #settled(key: string): void {
    const full = this.#deferred.get(key);
    if (full === undefined || this.#stopped) return;
    this.#deferred.delete(key);
    this.#queue.add(key, full);
  }

  #failed(key: string, want: Want | undefined, err: unknown): void {
    const { failures, waitMs } = this.#retries.failed(key, want?.fingerprint);
    const label = want?.label ?? this.#sync.held.get(key)?.label ?? key;
    const verb = want ? 'serving' : 'withdrawing';
    const reason = this.#screen(errorText(err));
    // A service that cannot be reached is one wait for every consumer, said once (outage.ts); anything else at error each try.
    if (isUnavailable(err)) return this.#outage.failed(label, verb, reason, failures, waitMs);
    this.#say('error', `${label}: ${verb} failed (try ${failures}): ${reason}; trying again in ${waitMs} ms`);
  }

  #later(ms: number, fn: () => void): void {
    if (this.#stopped) return;
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      fn();
    }, ms).unref();
    this.#timers.add(timer);
  }

  /** A text from elsewhere (an adapter's error), or a note in its place when it holds a credential. */
  #screen(text: string): string {
    return this.#wanted.matcher.holds(text) ? WITHHELD_MESSAGE : text;
  }

  /** Every line passes here: one holding a consumer's credential in any form is withheld whole. */
  #say(level: keyof ProviderLog, line: string): void {
    const log = this.#o.log;
    const write = level === 'notice' ? (log.notice ?? log.info) : log[level];
    write?.call(log, this.#wanted.matcher.holds(line) ? WITHHELD_LINE : line);
  }
}
