// The nkey seeds of a mesh's users (`bus-config`): one file per user, `<user>.nk`, mode 0600 in a
// directory of mode 0700; read when present, generated when absent, never printed unless asked.
import { chmodSync, existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { nkeys } from '@nats-io/transport-node';
import { MAX_LOGIN_FILE_BYTES } from '../../../shared/contract/limits.ts';
import { readRegularFile } from '../../../shared/base/regular-file.ts';
import { fail, ok, type Parsed } from '../../../shared/base/result.ts';

/** One user's login: its seed (secret) and public key (what the configuration names). */
export type Login = { user: string; seed: string; publicKey: string; file: string };

/** The logins of `users`, and which of them were generated now. */
export type Logins = { logins: Login[]; generated: string[] };

/** The file holding a user's seed. */
export function seedFile(dir: string, user: string): string {
  return join(dir, `${user}.nk`);
}

/**
 * Reads each user's seed from `dir`, generating the missing ones. A seed file others can read, or
 * one that is not a user seed, is refused naming the file: nothing is written then.
 */
export function loadOrCreateLogins(dir: string, users: readonly string[]): Parsed<Logins> {
  if (existsSync(dir)) {
    const mode = statSync(dir).mode & 0o777;
    if ((mode & 0o077) !== 0) return fail(`${dir}: the credentials directory is mode ${mode.toString(8)}; it must be 0700 (chmod 700 ${dir})`);
  }
  const found: Login[] = [];
  const missing: string[] = [];
  for (const user of users) {
    const file = seedFile(dir, user);
    if (!existsSync(file)) {
      missing.push(user);
      continue;
    }
    const mode = statSync(file).mode & 0o777;
    if ((mode & 0o077) !== 0) return fail(`${file}: mode ${mode.toString(8)} lets others read the seed; it must be 0600 (chmod 600 ${file})`);
    // A regular file within its limit: a FIFO in the directory must not hang bus-config, nor a device fill it.
    const read = readRegularFile(file, MAX_LOGIN_FILE_BYTES);
    if (!read.ok) return fail(`--credentials: ${read.reason}`);
    const seed = Buffer.from(read.value).toString('utf8').trim();
    const publicKey = publicKeyOf(seed);
    if (!publicKey) return fail(`${file}: not an nkey user seed (a line starting SU)`);
    found.push({ user, seed, publicKey, file });
  }
  if (missing.length > 0) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    chmodSync(dir, 0o700);
  }
  for (const user of missing) {
    const pair = nkeys.createUser();
    const seed = new TextDecoder().decode(pair.getSeed());
    const file = seedFile(dir, user);
    writeFileSync(file, seed + '\n', { mode: 0o600, flag: 'wx' });
    found.push({ user, seed, publicKey: pair.getPublicKey(), file });
  }
  const byUser = new Map(found.map((l) => [l.user, l]));
  return ok({ logins: users.map((u) => byUser.get(u)!), generated: missing });
}

/** The public key of a user seed, or undefined when `seed` is not one. */
export function publicKeyOf(seed: string): string | undefined {
  if (!seed.startsWith('SU')) return undefined;
  try {
    return nkeys.fromSeed(new TextEncoder().encode(seed)).getPublicKey();
  } catch {
    return undefined;
  }
}
