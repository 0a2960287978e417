// The reference vault (src/vault/, shipped as dist/vault.js) run in this process for the suites and
// the demo: its verb on the test's connection, its store in a directory of its own or the first of
// `secretDirs`. Every other dir of `secretDirs` (a node's engine --secrets, empty) is made a link to
// the store, as on one machine where the engine reads the vault's store. The test's hand on it —
// `set`, `rotate` with a chosen value, `refuse`, and what was asked — goes through the store and the
// verb's event hooks; nothing here answers in the vault's place.
import { readdirSync, rmdirSync, rmSync, symlinkSync } from 'node:fs';
import type { NatsConnection } from '@nats-io/transport-node';
import { memoryLogger } from '../../src/shared/cli/log.ts';
import { rotate as rotateInStore } from '../../src/vault/rotate.ts';
import { serveCredentials, type Ask, type CredentialSource } from '../../src/vault/serve.ts';
import { VaultStore } from '../../src/vault/store.ts';
import { tempDir } from './temp.ts';

/** The running vault. */
export type Vault = {
  /** Puts a credential in the store (no notice: a first minting). */
  set(name: string, value: string): Promise<void>;
  /** Replaces a credential in the store and says so on `mesh-vault.changed`, as `vault.js rotate` does. */
  rotate(name: string, value: string): Promise<void>;
  /** Makes the vault refuse a name with this error. */
  refuse(name: string, error: string): void;
  /** The store's directory. */
  store: string;
  /** What the vault logged (every level: a test greps it for values). */
  log: ReturnType<typeof memoryLogger>;
  /** Every name asked, in order. */
  asked: string[];
  /** Every ask answered or refused: the name, the node the subject named (null: the bare subject), and the error when refused. */
  asks: Ask[];
  /** Requests ignored (a reply subject that is not an inbox). */
  ignored: string[];
  /** Stops answering and waits for the asks under way. */
  stop(): Promise<void>;
};

/** How the vault answers. */
export type VaultOptions = {
  /**
   * Answers the bare `mesh-vault.credential` without knowing the asker: a bus without isolation,
   * where nothing maps a node's ask to its own subject (default false: refused).
   */
  lab?: boolean;
  /** Asks answered at once at most (default the vault's own). */
  maxAsks?: number;
};

/** Starts the reference vault on `nc`; its store is `secretDirs[0]` (or a temp dir), and every other dir of `secretDirs` a link to it. */
export async function startVault(nc: NatsConnection, secretDirs: readonly string[], opts: VaultOptions = {}): Promise<Vault> {
  const own = secretDirs.length === 0 ? tempDir('mesh-vault-') : undefined;
  const store = await VaultStore.open(own ?? secretDirs[0]!);
  for (const dir of secretDirs.slice(1)) shareStore(dir, store.dir);
  const refused = new Map<string, string>();
  const asked: string[] = [];
  const asks: Ask[] = [];
  const ignored: string[] = [];
  const log = memoryLogger();
  const credentials: CredentialSource = async (name) => {
    const error = refused.get(name);
    return error === undefined ? store.credential(name) : { ok: false, reason: error };
  };
  const served = serveCredentials({
    nc,
    credentials,
    log,
    lab: opts.lab === true,
    ...(opts.maxAsks === undefined ? {} : { maxAsks: opts.maxAsks }),
    events: {
      received: (name) => void asked.push(name),
      answered: (ask) => void asks.push(ask),
      ignored: (subject, reply) => void ignored.push(`${subject} reply ${reply ?? '(none)'}`),
    },
  });
  const must = async (done: Promise<{ ok: true } | { ok: false; reason: string }>) => {
    const result = await done;
    if (!result.ok) throw new Error(result.reason);
  };
  return {
    store: store.dir,
    log,
    asked,
    asks,
    ignored,
    set: (name, value) => must(store.put(name, value)),
    rotate: (name, value) => must(rotateInStore(nc, store, name, value)),
    refuse(name, error) {
      refused.set(name, error);
    },
    async stop() {
      await served.stop();
      if (own) rmSync(own, { recursive: true, force: true });
    },
  };
}

/** Makes the empty dir `dir` a link to the store, so the engine reading it reads the vault's files. */
function shareStore(dir: string, store: string): void {
  if (readdirSync(dir).length > 0) throw new Error(`${dir} is not empty: the vault's store would hide its files`);
  rmdirSync(dir);
  symlinkSync(store, dir);
}
