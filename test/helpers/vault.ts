// A stand-in for mesh-vault, for tests and the demo only: answers `mesh-vault.credential` from a
// local store and publishes `mesh-vault.changed` on a rotation. Each credential is also written where
// the reference engines read secrets (`<dir>/<vault name>`), so a consumer's `${secret:…}` holds the
// same credential its provider was handed.
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import { jsonBytes } from '../../src/shared/bus.ts';
import { VAULT_CHANGED, VAULT_CREDENTIAL } from '../../src/shared/subjects.ts';

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
  /** Stops answering. */
  stop(): void;
};

/** Starts the stand-in on `nc`, writing each credential under every dir of `secretDirs`. */
export function startVault(nc: NatsConnection, secretDirs: readonly string[]): Vault {
  const store = new Map<string, string>();
  const refused = new Map<string, string>();
  const asked: string[] = [];
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
  const sub = nc.subscribe(VAULT_CREDENTIAL, {
    callback: (err, msg) => {
      if (err) return;
      let name: unknown;
      try {
        name = (msg.json() as { name?: unknown }).name;
      } catch {
        name = undefined;
      }
      if (typeof name !== 'string') return void msg.respond(jsonBytes({ error: 'bad request: wants {name}' }));
      asked.push(name);
      const error = refused.get(name);
      const value = store.get(name);
      msg.respond(jsonBytes(error !== undefined ? { error } : value !== undefined ? { value } : { error: `no credential ${name}` }));
    },
  });
  return {
    asked,
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
      sub.unsubscribe();
    },
  };
}
