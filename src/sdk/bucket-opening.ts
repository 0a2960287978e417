// Opening the provider's bound bucket, before the helper reads or serves anything: the bus asked once
// that it lets this login read the bucket, this helper's claim on its provider and provision made, then
// the bucket opened. JetStream not answering meanwhile is a wait, said once, and its end too.
import { BoundStore, type StoredEntry } from './bound-store.ts';
import type { ProviderLog, ResolvedOptions } from './provider-options.ts';
import { SoleProvider } from './sole-provider.ts';
import { errorText } from '../shared/base/errors.ts';
import { isJetStreamUnavailable } from '../shared/bus/jetstream-errors.ts';
import { boundBucket } from '../shared/contract/keys.ts';
import { permissionRefusal } from '../shared/bus/login.ts';

/** Where the opening's lines go (the helper's screen of credentials). */
export type OpeningSay = (level: keyof ProviderLog, line: string) => void;

/** What an opening came to: the bucket and the entries found in it, or why the helper ends without serving. */
export type Opened = { store: BoundStore; found: StoredEntry[] } | { ended: string };

/** The bound bucket's opening, tried again by the helper's loop until it is open. */
export class BucketOpening {
  readonly #o: ResolvedOptions;
  readonly #say: OpeningSay;
  readonly #stopped: () => boolean;
  /** This helper's claim on its provider and provision: made before anything is read or served. */
  readonly #sole: SoleProvider;
  #claimed = false;
  /** Whether the bus was asked once that it lets this login read the bound bucket. */
  #loginChecked = false;
  /** When the bucket's opening first found JetStream not answering; undefined once open, or before. */
  #unavailableSince: number | undefined;

  /** An opening with the helper's options; `stopped` says when the helper stopped meanwhile. */
  constructor(opts: ResolvedOptions, say: OpeningSay, stopped: () => boolean) {
    this.#o = opts;
    this.#say = say;
    this.#stopped = stopped;
    this.#sole = new SoleProvider(opts.nc, opts.provider, opts.provision, say);
  }

  /** Checks the login, claims, opens: undefined when the helper stopped meanwhile; throws when the bus could not be asked. */
  async open(): Promise<Opened | undefined> {
    const { nc, provider, provision, replicas } = this.#o;
    if (!this.#loginChecked) {
      // Another provider's seed (a --provider that does not match it) is refused the helper's inbox and
      // its bucket: a configuration error said once, not a failure retried for ever.
      const refusal = await permissionRefusal(nc, `$JS.API.STREAM.INFO.KV_${boundBucket(provider)}`);
      if (this.#stopped()) return undefined;
      if (refusal) return { ended: `the bus refuses provider ${provider}'s requests on ${boundBucket(provider)} (${errorText(refusal)}) for ${this.#o.login}` };
      this.#loginChecked = true;
    }
    if (!this.#claimed) {
      const claim = await this.#sole.claim();
      if (this.#stopped()) return undefined;
      if (claim.state === 'taken')
        return {
          ended: `another helper serves ${provision} of ${provider} on this bus (${claim.by}): this one stops without serving anything; run one helper a provider and provision (two would withdraw each other's consumers)`,
        };
      if (claim.state === 'unchecked')
        this.#say(
          'warn',
          `cannot make sure no other helper serves ${provision} of ${provider}: ${claim.reason}; serving all the same (a configuration from this release's bus-config grants provider.${provider} what it needs)`,
        );
      this.#claimed = true;
    }
    return BoundStore.open(nc, provider, provision, replicas, this.#say);
  }

  /** The bucket is open: a wait for JetStream before it ends, said. */
  opened(): void {
    if (this.#unavailableSince !== undefined)
      this.#say(
        'notice',
        `the bus's JetStream answers again, after ${((Date.now() - this.#unavailableSince) / 1000).toFixed(1)} s: ${boundBucket(this.#o.provider)} is open`,
      );
    this.#unavailableSince = undefined;
  }

  /** Whether an opening failed for want of JetStream (a cluster without a meta leader): a wait, said once (issue 31). */
  waitsFor(err: unknown): boolean {
    if (!isJetStreamUnavailable(err)) return false;
    if (this.#unavailableSince === undefined) this.#say('warn', `the bus's JetStream does not answer (${errorText(err)}): waiting for it, trying again`);
    this.#unavailableSince ??= Date.now();
    return true;
  }

  /** Gives the claim up. */
  release(): void {
    this.#sole.release();
  }
}
