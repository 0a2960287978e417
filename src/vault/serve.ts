// The reference vault's verb (DESIGN §3, §11, §13): answers `mesh-vault.credential.<node>`, the
// asker taken from the subject its account's import maps the ask to, never from the payload; a
// credential is handed only as asker.ts allows. Answered only to an inbox, each request within the
// limits of §3, at most MAX_CONCURRENT_ASKS at once (`{error: "busy"}` past that). No value is ever
// logged: a line names the vault name, the node and the outcome.
import type { Msg, NatsConnection, Subscription } from '@nats-io/transport-node';
import { jsonBytes } from '../shared/base/bytes.ts';
import { errorText, isPermissionViolation } from '../shared/base/errors.ts';
import { isInboxSubject } from '../shared/bus/inbox.ts';
import type { Logger } from '../shared/cli/log.ts';
import type { Parsed } from '../shared/base/result.ts';
import { VAULT_CREDENTIAL } from '../shared/contract/subjects.ts';
import { askerOf, askerRefusal, decodeCredentialRequest } from './asker.ts';
import { PlansUnreadableError, planReader } from './plans.ts';
import type { Handed } from './store.ts';

/** Asks answered at once at most; one past that is answered BUSY at once (DESIGN §11). */
export const MAX_CONCURRENT_ASKS = 64;
/** The `{error}` of an ask past MAX_CONCURRENT_ASKS. */
export const BUSY = 'busy';
/** The `{error}` of an ask on the bare subject without --lab. */
export const UNKNOWN_ASKER = `the asker is unknown: a node asks through its own account, which maps ${VAULT_CREDENTIAL} to ${VAULT_CREDENTIAL}.<node> (DESIGN §11); on a bus without isolation run the vault with --lab`;

/** Where the credentials come from: the store, or a test's wrapper of it. */
export type CredentialSource = (name: string) => Promise<Parsed<Handed>>;

/** One ask as answered: the name, the node the subject named (null: the bare subject), and the error when refused. */
export type Ask = { name: string; asker: string | null; error?: string };

/** What a test learns of the asks (nothing is logged of a value either way). */
export type AskEvents = {
  /** A request decoded, before it is answered. */
  received?(name: string): void;
  /** A request answered. */
  answered?(ask: Ask): void;
  /** A request ignored: its reply subject is not an inbox. */
  ignored?(subject: string, reply: string | undefined): void;
};

/** What the verb is served with. */
export type ServeOptions = {
  /** The vault's connection (its login's inbox prefix set). */
  nc: NatsConnection;
  /** Where a credential is read or made. */
  credentials: CredentialSource;
  /** Where the vault says what it does. */
  log: Logger;
  /** Answers the bare subject without knowing the asker: only for a bus without isolation. */
  lab: boolean;
  /** Asks answered at once at most (default MAX_CONCURRENT_ASKS). */
  maxAsks?: number;
  /** A test's window on the asks. */
  events?: AskEvents;
};

/** Serves the credential verb until stopped; `stop` waits for the asks under way. */
export function serveCredentials(opts: ServeOptions): { stop(): Promise<void> } {
  const { nc, log, events = {} } = opts;
  const plan = planReader(nc, log);
  const limit = new AskLimit(opts.maxAsks ?? MAX_CONCURRENT_ASKS, log);
  let ignored = 0;
  const answer = async (name: string, asker: string | null): Promise<{ value: string } | { error: string }> => {
    let refusal: string | undefined;
    try {
      refusal = asker === null ? (opts.lab ? undefined : UNKNOWN_ASKER) : await askerRefusal(name, asker, plan);
    } catch (err) {
      // The plans not read is no answer: busy, which a client asks again (plans.ts said why, once).
      if (err instanceof PlansUnreadableError) return { error: BUSY };
      throw err;
    }
    const handed = refusal === undefined ? await opts.credentials(name) : { ok: false as const, reason: refusal };
    const who = asker === null ? 'an unknown asker (the bare subject)' : `node ${asker}`;
    if (!handed.ok) {
      log.warn(`refused ${name.slice(0, 500)} to ${who}: ${handed.reason}`);
      events.answered?.({ name, asker, error: handed.reason });
      return { error: handed.reason };
    }
    if (handed.value.made) log.info(`made ${name} on its first ask, by ${who}`);
    log.debug(`handed ${name} to ${who}`);
    events.answered?.({ name, asker });
    return { value: handed.value.value };
  };
  const receive = (msg: Msg): void => {
    const asker = askerOf(msg.subject);
    // A reply published with the vault's rights to a subject the asker chose would be a write the asker is not granted.
    if (!msg.reply || !isInboxSubject(msg.reply) || asker === undefined) {
      events.ignored?.(msg.subject, msg.reply);
      const line = `ignored a request on ${msg.subject} with reply subject ${JSON.stringify((msg.reply ?? '').slice(0, 200))}`;
      if (ignored++ === 0) log.warn(`${line} (not an inbox; any more are said at debug)`);
      else log.debug(`${line}; ${ignored} so far`);
      return;
    }
    const request = decodeCredentialRequest(msg.data);
    if (!request.ok) return respond(msg, { error: `bad request: ${request.reason}` }, log);
    events.received?.(request.name);
    const admitted = limit.admit(() =>
      answer(request.name, asker)
        .catch((err: unknown) => ({ error: `internal: ${errorText(err)}` }))
        .then((reply) => respond(msg, reply, log)),
    );
    if (!admitted) respond(msg, { error: BUSY }, log);
  };
  const subscribe = (subject: string): Subscription =>
    nc.subscribe(subject, {
      callback: (err, msg) => {
        if (err) return void log.warn(`${subject}: ${isPermissionViolation(err) ? 'not granted to this login; not served' : errorText(err)}`);
        try {
          receive(msg);
        } catch (e) {
          log.error(`${subject}: ${errorText(e)}`);
        }
      },
    });
  // The bare subject is served too: with --lab answered unchecked, else refused with the reason.
  const subs = [subscribe(`${VAULT_CREDENTIAL}.*`), subscribe(VAULT_CREDENTIAL)];
  return {
    async stop() {
      for (const sub of subs) if (!sub.isClosed()) sub.unsubscribe();
      await limit.settled();
    },
  };
}

/** The asks being answered, at most `max`, and how many were shed meanwhile. */
class AskLimit {
  readonly #running = new Set<Promise<void>>();
  #shed = 0;

  constructor(
    private readonly max: number,
    private readonly log: Logger,
  ) {}

  /** Starts `work` and says true when a slot is free; says false (the ask is shed) when none is. */
  admit(work: () => Promise<void>): boolean {
    if (this.#running.size >= this.max) {
      if (this.#shed++ === 0) this.log.warn(`${this.#running.size} asks in flight; answering ${BUSY} until one ends`);
      return false;
    }
    const running: Promise<void> = work().finally(() => {
      this.#running.delete(running);
      if (this.#running.size > 0 || this.#shed === 0) return;
      this.log.notice(`answered ${this.#shed} asks ${BUSY}`);
      this.#shed = 0;
    });
    this.#running.add(running);
    return true;
  }

  /** Resolves once every ask started has been answered. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.#running]);
  }
}

function respond(msg: Msg, reply: { value: string } | { error: string }, log: Logger): void {
  try {
    msg.respond(jsonBytes(reply));
  } catch (err) {
    log.warn(`could not answer on ${msg.reply}: ${errorText(err)}`);
  }
}
