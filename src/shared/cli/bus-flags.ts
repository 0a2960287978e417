// The flags every program uses to reach the bus (DESIGN §10), shared by server and client.
import { existsSync } from 'node:fs';
import { regularFileProblem } from '../base/regular-file.ts';
import type { BusOptions } from '../bus/bus.ts';
import type { FlagTable, FlagValues } from './flags.ts';
import { MAX_LOGIN_FILE_BYTES } from '../contract/limits.ts';
import { checkSeedFile } from '../bus/login.ts';
import type { Parsed } from '../base/result.ts';

/** The bus URL used when none is given. */
export const DEFAULT_NATS_URL = 'nats://127.0.0.1:4222';

export { MAX_LOGIN_FILE_BYTES } from '../contract/limits.ts';

/** Flags for reaching and authenticating to the bus. */
export const BUS_FLAGS = [
  { name: 'nats', env: 'MESH_NATS_URL', type: 'list', arg: 'URL[,URL…]', help: `every server of the cluster (default ${DEFAULT_NATS_URL})` },
  { name: 'creds', env: 'MESH_NATS_CREDS', type: 'string', arg: 'FILE', help: 'NATS credentials file' },
  { name: 'nkey', env: 'MESH_NATS_NKEY', type: 'string', arg: 'FILE', help: 'file holding an nkey user seed (bus-config writes one per user)' },
  { name: 'user', env: 'MESH_NATS_USER', type: 'string', arg: 'NAME', help: 'user name (with --password)' },
  { name: 'password', env: 'MESH_NATS_PASSWORD', type: 'string', arg: 'TEXT', help: 'password' },
  { name: 'token', env: 'MESH_NATS_TOKEN', type: 'string', arg: 'TEXT', help: 'authentication token' },
  { name: 'tls-ca', env: 'MESH_NATS_CA', type: 'string', arg: 'FILE', help: 'CA file to verify the servers' },
] as const satisfies FlagTable;

/** Turns parsed flags into bus options, rejecting contradictions by flag name. */
export function busOptionsFrom(flags: FlagValues<typeof BUS_FLAGS>, name: string, inboxPrefix?: string): Parsed<BusOptions> {
  const servers = flags.nats ?? [DEFAULT_NATS_URL];
  for (const url of servers) {
    if (!/^(nats|tls|wss?):\/\/[^\s]+$|^[^\s:/]+:\d+$/.test(url)) return { ok: false, reason: `--nats: "${url}" is not a nats:// URL or host:port` };
  }
  const { creds, nkey, user, password: pass, token, 'tls-ca': tlsCa } = flags;
  const ways = [creds && '--creds', nkey && '--nkey', user && '--user', token && '--token'].filter(Boolean);
  if (ways.length > 1) return { ok: false, reason: `${ways.join(' and ')} contradict: give one way to authenticate` };
  if (pass && !user) return { ok: false, reason: '--password needs --user' };
  for (const [flag, file] of [
    ['--creds', creds],
    ['--nkey', nkey],
    ['--tls-ca', tlsCa],
  ] as const) {
    if (!file) continue;
    if (!existsSync(file)) return { ok: false, reason: `${flag}: no file at ${file}` };
    // A FIFO would hang the program's read, a device fill its memory: refused before anything reads it.
    const problem = regularFileProblem(file, MAX_LOGIN_FILE_BYTES);
    if (problem !== undefined) return { ok: false, reason: `${flag}: ${problem}` };
  }
  // Read here so that a file that is no seed is said as such (exit 2), not as a bus that cannot be reached.
  const seed = nkey ? checkSeedFile(nkey) : undefined;
  if (seed && !seed.ok) return seed;
  const warnings = seed?.value.warning ? [seed.value.warning] : [];
  return {
    ok: true,
    value: {
      servers,
      name,
      ...(creds ? { creds } : {}),
      ...(nkey ? { nkey } : {}),
      ...(user ? { user, pass: pass ?? '' } : {}),
      ...(token ? { token } : {}),
      ...(tlsCa ? { tlsCa } : {}),
      ...(inboxPrefix ? { inboxPrefix } : {}),
      ...(warnings.length > 0 ? { warnings } : {}),
    },
  };
}
