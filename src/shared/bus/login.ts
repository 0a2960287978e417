// Naming the login a program was given (issue 22): when the bus refuses it something, the operator
// is told which key it was and which flag to check, never only the server's words.
import { statSync } from 'node:fs';
import { readRegularFile } from '../base/regular-file.ts';
import { nkeys, type NatsConnection } from '@nats-io/transport-node';
import type { BusOptions } from './connect.ts';
import { errorText, isPermissionViolation } from '../base/errors.ts';
import { fail, ok, type Parsed } from '../base/result.ts';

/** A user seed as a creds file or a seed file holds it: `SU` and 56 base32 characters. */
const USER_SEED = /\bSU[A-Z2-7]{56}\b/;

/** The public key (`U…`) of the user seed in `text`, or undefined when it holds none. */
export function publicKeyOfSeedText(text: string): string | undefined {
  const seed = USER_SEED.exec(text)?.[0];
  if (seed === undefined) return undefined;
  try {
    return nkeys.fromSeed(new TextEncoder().encode(seed)).getPublicKey();
  } catch {
    return undefined;
  }
}

/** The largest seed file read: a seed is 58 bytes; a file far larger is no seed. */
const MAX_SEED_FILE_BYTES = 64 * 1024;

/** A seed file that will do: its public key, and a warning when others than its owner may read it. */
export type SeedFile = {
  /** The seed's public key (`U…`), as the bus configuration names the user. */
  publicKey: string;
  /** What to say once at warning: the file's mode lets others read the seed. */
  warning?: string;
};

/**
 * Reads the seed file `--nkey FILE` names, as nats.js will (the file, trimmed, is the seed): refused
 * when unreadable or not one user seed (`SU…`), which the bus would otherwise be blamed for. A seed
 * others may read is not refused (the program would stop over what is not its to fix); it is warned of.
 */
export function checkSeedFile(file: string): Parsed<SeedFile> {
  let mode: number;
  // Read bounded, a regular file only: a FIFO or /dev/zero given as --nkey must not hang or fill the program.
  const read = readRegularFile(file, MAX_SEED_FILE_BYTES);
  if (!read.ok) return fail(`--nkey ${file}: cannot read it (${read.reason})`);
  const text = Buffer.from(read.value).toString('utf8').trim();
  try {
    mode = statSync(file).mode & 0o777;
  } catch (err) {
    return fail(`--nkey ${file}: cannot read it (${errorText(err)})`);
  }
  const publicKey = USER_SEED.test(text) && text.length === 58 ? publicKeyOfSeedText(text) : undefined;
  if (publicKey === undefined) return fail(`--nkey ${file}: not an nkey user seed (one line starting SU, as bus-config writes it)`);
  if ((mode & 0o077) === 0) return ok({ publicKey });
  return ok({ publicKey, warning: `--nkey ${file}: mode ${mode.toString(8)} lets others read the seed; chmod 600 ${file}` });
}

/**
 * The login of `bus` as a person checks it, to follow "for …": `this login (public key U…): is
 * --nkey the seed of <expected>?`, or the flag to check when there is no key to name.
 */
export function whichLogin(bus: Pick<BusOptions, 'nkey' | 'creds' | 'user' | 'token'>, expected: string): string {
  const file = bus.nkey ?? bus.creds;
  const key = file === undefined ? undefined : publicKeyIn(file);
  const named = key ? `this login (public key ${key})` : 'this login';
  if (bus.nkey) return `${named}: is --nkey the seed of ${expected}?`;
  if (bus.creds) return `${named}: are --creds those of ${expected}?`;
  if (bus.user) return `${named} (--user ${bus.user}): is it ${expected}?`;
  if (bus.token) return `${named} (a --token): is it ${expected}'s?`;
  return `this login (none given): give the seed of ${expected} with --nkey`;
}

function publicKeyIn(file: string): string | undefined {
  const read = readRegularFile(file, MAX_SEED_FILE_BYTES);
  return read.ok ? publicKeyOfSeedText(Buffer.from(read.value).toString('utf8')) : undefined;
}

/** The user `bus-config` makes for a node's client (USERS.client there), whose seed the client is given. */
export function nodeClientUser(node: string): string {
  return `provisioner.${node}`;
}

/** How long a login check waits for its answer; an unanswered check is no refusal, and the start goes on. */
export const LOGIN_CHECK_TIMEOUT_MS = 5000;

/**
 * Whether the bus refuses this login a request a program makes first thing (through its own inbox):
 * the server's permission refusal, or undefined for an answer, no answer or any other error, which
 * the program's own waits say. Another login's seed is refused the program's inbox, and its waits
 * would otherwise sit at notice for ever while systemd waits for a ready that never comes.
 */
export async function permissionRefusal(nc: NatsConnection, subject: string): Promise<Error | undefined> {
  try {
    await nc.request(subject, undefined, { timeout: LOGIN_CHECK_TIMEOUT_MS });
    return undefined;
  } catch (err) {
    return isPermissionViolation(err) ? (err as Error) : undefined;
  }
}
