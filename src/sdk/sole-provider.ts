// One helper a provider and provision on a bus (issue 31 item 19): two would share `<provider>_bound`
// and each withdraw the other's consumers. A helper subscribes `mesh-provider.<provider>.<provision>`
// before it touches anything, then asks there who else serves: one that already serves (`held`) wins;
// two starting together are told apart by their random ids, which both see (each subscribed before
// it asked, so each hears the other's ask or answer). No clock is compared: hosts' clocks differ.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import * as v from 'valibot';
import { jsonBytes } from '../shared/base/bytes.ts';
import { decodeJson } from '../shared/contract/decode.ts';
import { errorText, isPermissionViolation } from '../shared/base/errors.ts';
import { providerServesSubject } from '../shared/contract/subjects.ts';

/** How long after the last answer a helper waits for another before it serves. */
export const CLAIM_STALL_MS = 300;
/** How long the asking lasts at most. */
const CLAIM_MAX_MS = 3000;
/** The largest ask or answer read: a few short fields. */
const MAX_CLAIM_BYTES = 4096;

/** Who a helper is, as it says on the subject: enough for an operator to find it. */
const HelperSchema = v.object({
  id: v.pipe(v.string(), v.maxLength(64)),
  host: v.pipe(v.string(), v.maxLength(255)),
  pid: v.number(),
  since: v.pipe(v.string(), v.maxLength(64)),
  held: v.boolean(),
});
type Helper = v.InferOutput<typeof HelperSchema>;

/** What the claim came to: this helper serves, another does (this one must not), or the bus would not let it ask. */
export type Claim = { state: 'held' } | { state: 'taken'; by: string } | { state: 'unchecked'; reason: string };

/** What a claim says to the helper's log. */
export type ClaimSay = (level: 'warn', line: string) => void;

/** A helper's claim on its provider and provision: kept (answering later helpers) until released. */
export class SoleProvider {
  readonly #nc: NatsConnection;
  readonly #subject: string;
  readonly #say: ClaimSay;
  readonly #me: Helper = { id: randomBytes(9).toString('base64url'), host: hostname(), pid: process.pid, since: new Date().toISOString(), held: false };
  #sub: Subscription | undefined;
  /** The first other helper that wins against this one, found by its ask or its answer. */
  #winner: Helper | undefined;
  #refused: string | undefined;
  readonly #told = new Set<string>();

  /** A claim of `provision` of `provider` on `nc`; `say` hears of each second helper told to stop. */
  constructor(nc: NatsConnection, provider: string, provision: string, say: ClaimSay) {
    this.#nc = nc;
    this.#subject = providerServesSubject(provider, provision);
    this.#say = say;
  }

  /** Subscribes, asks who else serves, and says whether this helper may serve; throws when the bus could not be asked (tried again by the caller). */
  async claim(): Promise<Claim> {
    this.#sub ??= this.#nc.subscribe(this.#subject, {
      callback: (err, msg) => {
        if (err) return void (this.#refused = isPermissionViolation(err) ? errorText(err) : this.#refused);
        const other = decodeJson(HelperSchema, msg.data, { maxBytes: MAX_CLAIM_BYTES, maxDepth: 2 });
        if (other.ok && other.value.id !== this.#me.id) this.#met(other.value);
        if (msg.reply) msg.respond(jsonBytes(this.#me));
      },
    });
    await this.#nc.flush();
    if (this.#refused) return this.#unchecked(this.#refused);
    try {
      const answers = await this.#nc.requestMany(this.#subject, jsonBytes(this.#me), { strategy: 'stall', stall: CLAIM_STALL_MS, maxWait: CLAIM_MAX_MS });
      for await (const msg of answers) {
        const other = decodeJson(HelperSchema, msg.data, { maxBytes: MAX_CLAIM_BYTES, maxDepth: 2 });
        if (other.ok && other.value.id !== this.#me.id) this.#met(other.value);
      }
    } catch (err) {
      if (isPermissionViolation(err) || this.#refused) return this.#unchecked(this.#refused ?? errorText(err));
      throw err;
    }
    if (this.#winner) return { state: 'taken', by: describe(this.#winner) };
    this.#me.held = true;
    return { state: 'held' };
  }

  /** Stops answering: a helper that stops leaves the provision to the next. */
  release(): void {
    this.#sub?.unsubscribe();
    this.#sub = undefined;
  }

  /** Another helper heard: one that serves wins; two that do not yet are told apart by id, as the other does. */
  #met(other: Helper): void {
    if (this.#me.held) {
      if (this.#told.has(other.id)) return;
      this.#told.add(other.id);
      return this.#say('warn', `a second helper of this provider and provision started (${describe(other)}): it was told this one serves, and stops`);
    }
    if (other.held || other.id < this.#me.id) this.#winner ??= other;
  }

  #unchecked(reason: string): Claim {
    this.release();
    return { state: 'unchecked', reason };
  }
}

/** `host h1, pid 4321, up since <time>`. */
function describe(h: Helper): string {
  return `host ${h.host}, pid ${h.pid}, up since ${h.since}`;
}
