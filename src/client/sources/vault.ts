// Credentials asked of the vault (`mesh-vault.credential`, DESIGN §3, §7 point 8) in the client's
// own name, kept in memory only: never logged, reported or stored. One the vault will not hand is
// left out (said once, by name); one it could not be asked for keeps what was held — a value, or
// pending — and is asked again with a capped backoff.
import type { NatsConnection } from '@nats-io/transport-node';
import * as v from 'valibot';
import { Backoff, type BackoffLimits } from '../../shared/base/backoff.ts';
import { jsonBytes } from '../../shared/base/bytes.ts';
import type { Logger } from '../../shared/cli/log.ts';
import { decodeJson } from '../../shared/contract/decode.ts';
import { VAULT_CREDENTIAL } from '../../shared/contract/subjects.ts';
import { unrefTimer, type Timer } from '../../shared/base/timer.ts';
import { parseVaultName } from '../../shared/contract/vault-names.ts';
import { errorText } from '../../shared/base/errors.ts';

/** What the client holds of one credential. */
export type Credential = { state: 'pending' } | { state: 'value'; value: string } | { state: 'refused'; reason: string };

/** How long the vault has to answer one ask. */
export const VAULT_TIMEOUT_MS = 5000;
/** The first and the longest wait before asking again after the vault could not be reached. */
export const VAULT_RETRY_MS: BackoffLimits = { firstMs: 1000, maxMs: 30_000 };

/** The vault's `{error}` past its limit of asks at once. */
export const VAULT_BUSY = 'busy';

const ReplySchema = v.union([v.object({ value: v.string() }), v.object({ error: v.string() })]);

/** The credentials the client asked for, by vault name; `onSettled` is told when one comes or changes. */
export class VaultCredentials {
  readonly #known = new Map<string, Credential>();
  /** The next ask of each credential the vault could not be asked for. */
  readonly #retries = new Map<string, { cancel(): void }>();
  /** The credentials whose last ask went unanswered, said once until the vault answers one. */
  readonly #unanswered = new Set<string>();
  #stopped = false;

  constructor(
    private readonly nc: NatsConnection,
    private readonly log: Logger,
    private readonly onSettled: (vault: string) => void,
    private readonly timer: Timer = unrefTimer,
  ) {}

  /**
   * The credential as held now; an unknown one is asked for (pending until the vault answers). Only a
   * provision's credential (`pair/…`, every segment in its grammar) is ever asked: any other name is
   * refused here, so no plan can make the client ask the vault for a name that leaves its place.
   */
  get(vault: string): Credential {
    const known = this.#known.get(vault);
    if (known) return known;
    const parsed = parseVaultName(vault);
    if (!parsed.ok || parsed.value.kind !== 'pair') {
      const refused: Credential = { state: 'refused', reason: `not asked: ${parsed.ok ? "not a provision's credential" : parsed.reason}` };
      // Said here, not settled: a settle would ask the very fill that is looking it up to run again.
      this.#known.set(vault, refused);
      this.log.warn(`vault: ${JSON.stringify(vault.slice(0, 300))} left out: ${refused.reason}`);
      return refused;
    }
    this.#known.set(vault, { state: 'pending' });
    void this.#ask(vault, new Backoff(VAULT_RETRY_MS));
    return { state: 'pending' };
  }

  /** The vault says a credential changed: ask again (the old one is kept until the new one comes). */
  changed(vault: string): void {
    if (!this.#known.has(vault)) return;
    this.log.info(`vault: ${vault} changed; asking again`);
    void this.#ask(vault, new Backoff(VAULT_RETRY_MS));
  }

  /** Stops every retry. */
  stop(): void {
    this.#stopped = true;
    for (const retry of this.#retries.values()) retry.cancel();
    this.#retries.clear();
  }

  /** Asks for `vault`; `backoff` spaces the asks while the vault cannot be reached (a new one starts over). */
  async #ask(vault: string, backoff: Backoff): Promise<void> {
    this.#retries.get(vault)?.cancel();
    this.#retries.delete(vault);
    let answer: Credential;
    try {
      const msg = await this.nc.request(VAULT_CREDENTIAL, jsonBytes({ name: vault }), { timeout: VAULT_TIMEOUT_MS });
      const reply = decodeJson(ReplySchema, msg.data, { maxBytes: 64 * 1024 });
      // Past its limit of asks at once the vault sheds load (DESIGN §11): what is held stays, and it is asked again.
      if (reply.ok && 'error' in reply.value && reply.value.error === VAULT_BUSY) return this.#retry(vault, backoff);
      answer = !reply.ok
        ? { state: 'refused', reason: `reply out of shape: ${reply.reason}` }
        : 'value' in reply.value
          ? { state: 'value', value: reply.value.value }
          : { state: 'refused', reason: reply.value.error };
    } catch (err) {
      if (this.#stopped) return;
      // Not reached (no responders, a timeout; the vault restarting): what is held stays, a value or
      // pending (the file waits). Left out, the consumer would be withdrawn by its provider — its
      // role and database dropped — for as long as the vault is away.
      this.#sayUnanswered(vault, err);
      return this.#retry(vault, backoff);
    }
    this.#unanswered.delete(vault);
    if (!this.#stopped) this.#settle(vault, answer);
  }

  /** Says once, until the vault answers it, that `vault` went unanswered and what is kept meanwhile. */
  #sayUnanswered(vault: string, err: unknown): void {
    if (this.#unanswered.has(vault)) return;
    this.#unanswered.add(vault);
    const kept = this.#known.get(vault)?.state === 'value' ? 'the credential held is used' : 'the file naming it waits';
    this.log.warn(`vault: ${vault} not answered (${errorText(err)}); ${kept}, asking again`);
  }

  /** Asks for `vault` again after the backoff's next wait. */
  #retry(vault: string, backoff: Backoff): void {
    if (this.#stopped) return;
    this.#retries.set(
      vault,
      this.timer(() => void this.#ask(vault, backoff), backoff.failed()),
    );
  }

  #settle(vault: string, next: Credential): void {
    const before = this.#known.get(vault);
    this.#known.set(vault, next);
    if (next.state === 'refused' && (before?.state !== 'refused' || before.reason !== next.reason)) {
      this.log.warn(`vault: ${vault} left out: ${next.reason}`);
    }
    const same = before?.state === next.state && (next.state !== 'value' || (before as { value: string }).value === next.value);
    if (!same) this.onSettled(vault);
  }
}
