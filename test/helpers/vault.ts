// A stand-in for mesh-vault, for tests and the demo only: answers `mesh-vault.credential` from a
// local store and publishes `mesh-vault.changed` on a rotation. Each credential is also written where
// the reference engines read secrets (`<dir>/<vault name>`), so a consumer's `${secret:…}` holds the
// same credential its provider was handed. Like the reference vault, it learns the asking node from
// the subject its account's import maps the ask to (`mesh-vault.credential.<node>`, DESIGN §11),
// hands a credential only to a node the plans allow, and answers only inbox replies.
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import { openKv } from '../../src/shared/bus.ts';
import { jsonBytes } from '../../src/shared/bytes.ts';
import { PLANS } from '../../src/shared/buckets.ts';
import { isInboxSubject } from '../../src/shared/inbox.ts';
import { VAULT_CHANGED, VAULT_CREDENTIAL } from '../../src/shared/subjects.ts';
import { askerOf, askerRefusal, decodeCredentialRequest, planOf } from '../../src/vault/asker.ts';

/** The running stand-in. */
export type Vault = {
  /** Holds a credential (no notice: a first minting). */
  set(name: string, value: string): void;
  /** Replaces a credential and says so on `mesh-vault.changed`. */
  rotate(name: string, value: string): Promise<void>;
  /** Makes the vault refuse a name with this error. */
  refuse(name: string, error: string): void;
  /** Every name asked, in order. */
  asked: string[];
  /** Every ask answered or refused: the name, the node the subject named (null: the bare subject), and the error when refused. */
  asks: { name: string; asker: string | null; error?: string }[];
  /** Requests ignored (a reply subject that is not an inbox, a subject naming no node). */
  ignored: string[];
  /** Stops answering. */
  stop(): void;
};

/** How the stand-in answers. */
export type VaultOptions = {
  /**
   * Answers the bare `mesh-vault.credential` without knowing the asker: a bus without isolation,
   * where nothing maps a node's ask to its own subject (default false: refused).
   */
  lab?: boolean;
};

/** Starts the stand-in on `nc`, writing each credential under every dir of `secretDirs`. */
export function startVault(nc: NatsConnection, secretDirs: readonly string[], opts: VaultOptions = {}): Vault {
  const store = new Map<string, string>();
  const refused = new Map<string, string>();
  const asked: string[] = [];
  const asks: Vault['asks'] = [];
  const ignored: string[] = [];
  const plans = openKv(nc, PLANS);
  const plan = async (key: string) =>
    planOf(
      await (await plans).get(key).then(
        (e) => (e?.operation === 'PUT' ? e.value : null),
        () => null,
      ),
    );
  const write = (name: string, value: string | undefined) => {
    for (const dir of secretDirs) {
      const path = join(dir, name);
      if (value === undefined) {
        rmSync(path, { force: true });
        continue;
      }
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(`${path}.tmp`, value);
      renameSync(`${path}.tmp`, path);
    }
  };
  const answer = async (name: string, asker: string | null): Promise<{ value: string } | { error: string }> => {
    asked.push(name);
    const why =
      asker === null
        ? opts.lab
          ? undefined
          : 'the asker is unknown: ask through a node account (mesh-vault.credential.<node>)'
        : await askerRefusal(name, asker, plan);
    const error = why ?? refused.get(name);
    const value = store.get(name);
    const reply = error !== undefined ? { error } : value !== undefined ? { value } : { error: `no credential ${name}` };
    asks.push({ name, asker, ...('error' in reply ? { error: reply.error } : {}) });
    return reply;
  };
  const serve = (subject: string) =>
    nc.subscribe(subject, {
      callback: (err, msg) => {
        if (err) return;
        const asker = askerOf(msg.subject);
        if (!msg.reply || !isInboxSubject(msg.reply) || asker === undefined) return void ignored.push(`${msg.subject} reply ${msg.reply ?? '(none)'}`);
        const request = decodeCredentialRequest(msg.data);
        if (!request.ok) return void msg.respond(jsonBytes({ error: `bad request: ${request.reason}` }));
        void answer(request.name, asker).then((reply) => msg.respond(jsonBytes(reply)));
      },
    });
  const subs = [serve(`${VAULT_CREDENTIAL}.*`), ...(opts.lab ? [serve(VAULT_CREDENTIAL)] : [])];
  return {
    asked,
    asks,
    ignored,
    set(name, value) {
      store.set(name, value);
      write(name, value);
    },
    async rotate(name, value) {
      store.set(name, value);
      write(name, value);
      nc.publish(VAULT_CHANGED, jsonBytes({ name }));
      await nc.flush();
    },
    refuse(name, error) {
      refused.set(name, error);
    },
    stop() {
      for (const sub of subs) sub.unsubscribe();
    },
  };
}
