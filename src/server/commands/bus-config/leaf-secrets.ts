// The password each node's leaf connection logs in to the hub with (`bus-config`, leaf nodes): one
// file per node, `leaf.<node>.pw`, mode 0600 beside the nkey seeds; read when present, generated
// when absent. nats-server 2.9 authenticates an inbound leaf connection by user and password only
// (a remote sends no nkey, and a credentials file's JWT is checked only in operator mode), so the
// hub's file holds each password's bcrypt hash and the site's leaf file the password itself.
import { randomBytes, createHash } from 'node:crypto';
import { existsSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import bcrypt from 'bcryptjs';
import { MAX_LOGIN_FILE_BYTES } from '../../../shared/contract/limits.ts';
import { readRegularFile } from '../../../shared/base/regular-file.ts';
import { fail, ok, type Parsed } from '../../../shared/base/result.ts';

/** A node's leaf login: the user the hub's `leafnodes` block names, its password (secret) and the hash the hub keeps. */
export type LeafLogin = { node: string; user: string; password: string; hash: string; file: string; generated: boolean };

/**
 * bcrypt's cost: the lowest nats-server accepts. A password is 24 random bytes, so guessing it is out
 * of reach at any cost; the hash only keeps it out of the hub's file, and a mesh of thousands of nodes
 * renders in seconds, not hours.
 */
const BCRYPT_COST = '04';

/** The user a node's leaf connection logs in as on the hub. */
export function leafUser(node: string): string {
  return `leaf.${node}`;
}

/** The file holding a node's leaf password. */
export function leafPasswordFile(dir: string, node: string): string {
  return join(dir, `${leafUser(node)}.pw`);
}

/**
 * The password's bcrypt hash (`$2a$`, the prefix nats-server 2.9 recognises), salted from the password
 * itself so that the same mesh renders the same bytes; passwords are random, so salts never repeat.
 */
export function leafHash(password: string): string {
  const salt = bcryptBase64(createHash('sha256').update(`mesh-leaf-salt\0${password}`).digest().subarray(0, 16));
  return bcrypt.hashSync(password, `$2a$${BCRYPT_COST}$${salt}`);
}

/**
 * Reads each node's leaf password from `dir` (the credentials directory, already checked to be
 * 0700), generating the missing ones; a password file others can read is refused naming it.
 */
export function loadOrCreateLeafLogins(dir: string, nodes: readonly string[]): Parsed<LeafLogin[]> {
  const logins: LeafLogin[] = [];
  for (const node of nodes) {
    const file = leafPasswordFile(dir, node);
    let password: string;
    const generated = !existsSync(file);
    if (!generated) {
      const mode = statSync(file).mode & 0o777;
      if ((mode & 0o077) !== 0) return fail(`${file}: mode ${mode.toString(8)} lets others read the password; it must be 0600 (chmod 600 ${file})`);
      const read = readRegularFile(file, MAX_LOGIN_FILE_BYTES);
      if (!read.ok) return fail(`--credentials: ${read.reason}`);
      password = Buffer.from(read.value).toString('utf8').trim();
      if (!/^[A-Za-z0-9_-]{16,}$/.test(password)) return fail(`${file}: not a leaf password (16 or more of A-Z a-z 0-9 _ -)`);
    } else {
      password = randomBytes(24).toString('base64url');
      writeFileSync(file, password + '\n', { mode: 0o600, flag: 'wx' });
    }
    logins.push({ node, user: leafUser(node), password, hash: leafHash(password), file, generated });
  }
  return ok(logins);
}

/** bcrypt's own base64 (`./A-Za-z0-9`, no padding) of 16 bytes: the 22 characters of a salt. */
function bcryptBase64(bytes: Uint8Array): string {
  const alphabet = './ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
  let out = '';
  for (let i = 0; i < bytes.length; i += 3) {
    const [a = 0, b = 0, c = 0] = [bytes[i], bytes[i + 1], bytes[i + 2]];
    const n = (a << 16) | (b << 8) | c;
    const chars = [(n >> 18) & 63, (n >> 12) & 63, (n >> 6) & 63, n & 63].map((x) => alphabet[x]!);
    out += chars.slice(0, i + 1 >= bytes.length ? 2 : i + 2 >= bytes.length ? 3 : 4).join('');
  }
  return out.slice(0, 22);
}
