// One consumer brought in step (DESIGN §1, §3): checked, created or refused through the adapter
// and published in `<provider>_bound` with the request it answers (`for`), or withdrawn. Whatever the adapter hands back — a served
// value, a refusal's reason — is published only when it holds no consumer's credential in any form.
import { Buffer } from 'node:buffer';
import { randomBytes } from 'node:crypto';
import { CREDENTIAL_SET } from '../shared/contract/bound-entry.ts';
import * as v from 'valibot';
import type { AdapterCalls } from './adapter-calls.ts';
import type { BoundStore, StoredEntry } from './bound-store.ts';
import { labelOf, type Want } from './consumers-file.ts';
import { MIN_CREDENTIAL_BYTES, type CredentialMatcher } from './credential-forms.ts';
import { deriveLogin } from './logins.ts';
import type { Adapter, BoundValue, Served } from './types.ts';

/** The refusal published for a credential too short to be kept out of texts (it is never handed to the adapter). */
export const SHORT_CREDENTIAL_REFUSAL = `the credential is shorter than ${MIN_CREDENTIAL_BYTES} bytes: too short to keep out of logs and values, so it is not served`;
/** The refusal published in place of an adapter's reason that holds a credential. */
export const WITHHELD_REFUSAL = "the adapter refused this consumer; its reason is withheld: it holds a consumer's credential";
/** The refusal published in place of served values that hold a credential. */
export const WITHHELD_SERVED = "the adapter served a value holding a consumer's credential: not published";

/** A new marker for CREDENTIAL_SET: random, so two settings never look alike, and nothing of the credential. */
export function credentialSetMarker(): string {
  return randomBytes(12).toString('base64url');
}

/** What the helper holds for one bound key: the login it may have touched and what it served. */
export type Held = {
  /** The login handed to the adapter. */
  as: string;
  /** `<node>/<module>[/<local>]`, for logs. */
  label: string;
  /** What was served and published, when it was. */
  served?: Served;
  /** The fingerprint of the want last served or refused; absent after a restart or a failure. */
  fingerprint?: string;
  /** The request its published entry answers (`for`), as published or found at start. */
  answers?: string;
};

/** The `for` of an entry answering `want` (DESIGN §3): nothing when the consumers file did not give its request. */
function answering(want: Want): { for?: string } {
  return want.answers === undefined ? {} : { for: want.answers };
}

/** What a ConsumerSync works with; the store and the matcher are read at each use (both are replaced). */
export type SyncContext = {
  /** The provider's adapter. */
  adapter: Adapter;
  /** How every adapter call is made: with its timeout and signal, one at a time per consumer. */
  calls: AdapterCalls;
  /** The bound bucket, once open. */
  store(): BoundStore;
  /** The credentials of the consumers file, in every form. */
  matcher(): CredentialMatcher;
  /** The helper's log (every line screened for credentials). */
  say(level: 'info' | 'warn', line: string): void;
};

const ServedSchema = v.object({
  user: v.pipe(v.string(), v.minLength(1)),
  values: v.record(v.string(), v.union([v.string(), v.pipe(v.number(), v.finite())])),
});

/** The consumers one helper holds, and how each is served or withdrawn; see the file's comment. */
export class ConsumerSync {
  /** By bound key. */
  readonly held = new Map<string, Held>();
  readonly #c: SyncContext;

  constructor(context: SyncContext) {
    this.#c = context;
  }

  /** Holds what the store found at start: its login is derived again, never read from the bucket; its marker is the helper's, not the adapter's. */
  adopt(found: readonly StoredEntry[]): void {
    for (const { key, consumer, served, answers } of found) {
      const { [CREDENTIAL_SET]: _marker, ...values } = served?.values ?? {};
      const held = { ...(served ? { served: { ...served, values } } : {}), ...(answers !== undefined ? { answers } : {}) };
      this.held.set(key, { as: deriveLogin(consumer), label: labelOf(consumer.node, consumer.module, consumer.local), ...held });
    }
  }

  /** Serves `want` unless what was served for it holds (checked on a `full` pass); throws a failure to retry. */
  async serveIfNeeded(want: Want, full: boolean): Promise<void> {
    const held = this.held.get(want.key);
    const check = this.#c.adapter.check?.bind(this.#c.adapter);
    const fresh = held?.fingerprint === want.fingerprint;
    if (fresh && !(full && held?.served && check)) return;
    if (Buffer.byteLength(want.grant.credential) < MIN_CREDENTIAL_BYTES) return this.#refuse(want, this.#hold(want), SHORT_CREDENTIAL_REFUSAL);
    // Served before a restart (fingerprint unknown) or re-checked on a full pass: check, don't recreate.
    if (held?.served && check && (fresh || held.fingerprint === undefined)) {
      const served = held.served;
      if (await this.#c.calls.run(want.key, `the check of ${want.label}`, (signal) => check(want.grant, served, signal))) {
        held.fingerprint = want.fingerprint;
        // Found at start answering another request, or none (an earlier release's entry): what holds for this one says so.
        if (held.answers !== want.answers) await this.#c.store().reanswer(want.key, want.answers);
        held.answers = want.answers;
        return;
      }
      // An entry answering an earlier request (`for` differs) is a request made anew, not drift.
      if (held.answers !== undefined && want.answers !== undefined && held.answers !== want.answers)
        this.#c.say('info', `${want.label}: its bound entry answers an earlier request; serving the new one`);
      else this.#c.say('warn', `${want.label}: the check found ${want.grant.as} drifted; creating it again`);
    }
    await this.#serve(want);
  }

  /** Removes what was served to the key's login and deletes its entry; throws a failure to retry. */
  async withdraw(key: string): Promise<void> {
    const held = this.held.get(key);
    if (!held) return;
    await this.#c.calls.run(key, `the removal of ${held.label}`, (signal) => this.#c.adapter.remove(held.as, signal));
    await this.#c.store().delete(key);
    this.held.delete(key);
    this.#c.say('info', `${held.label}: withdrawn (${held.as} removed, its bound entry deleted)`);
  }

  /** Holds the want's login before any call, so a create that fails half-way still leaves a login to withdraw. */
  #hold(want: Want): Held {
    const held: Held = { as: want.grant.as, label: want.label };
    this.held.set(want.key, held);
    return held;
  }

  async #serve(want: Want): Promise<void> {
    const held = this.#hold(want);
    let served: Served;
    try {
      served = await this.#c.calls.run(want.key, `the create of ${want.label}`, (signal) => this.#c.adapter.create(want.grant, signal));
    } catch (err) {
      if (!(err instanceof Error && err.name === 'Refused')) throw err;
      return this.#refuse(want, held, this.#c.matcher().holds(err.message) ? WITHHELD_REFUSAL : err.message);
    }
    const checked = v.safeParse(ServedSchema, served);
    if (!checked.success) {
      const fields = checked.issues.map((i) => v.getDotPath(i) ?? 'value').join(', ');
      return this.#refuse(want, held, `the adapter served no valid {user, values} of strings and finite numbers (${fields})`);
    }
    const value: BoundValue = { as: want.grant.as, user: checked.output.user, values: checked.output.values };
    if (this.#c.matcher().holdsIn(value)) return this.#refuse(want, held, WITHHELD_SERVED);
    // Published only now that the adapter has set the credential: the consumer's file waits for it.
    await this.#c.store().put(want.key, { ...value, values: { ...value.values, [CREDENTIAL_SET]: credentialSetMarker() }, ...answering(want) });
    Object.assign(held, { served: checked.output, fingerprint: want.fingerprint, answers: want.answers });
    this.#c.say('info', `${want.label}: served as ${want.grant.as}`);
  }

  async #refuse(want: Want, held: Held, reason: string): Promise<void> {
    // The last guard: a reason built from the adapter's field names may hold one too.
    const text = this.#c.matcher().holds(reason) ? WITHHELD_REFUSAL : reason;
    await this.#c.store().put(want.key, { refused: text, ...answering(want) });
    Object.assign(held, { fingerprint: want.fingerprint, answers: want.answers });
    this.#c.say('warn', `${want.label}: refused: ${text}`);
  }
}
