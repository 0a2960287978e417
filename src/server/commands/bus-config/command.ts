// `node dist/server.js bus-config …`: renders the mesh's nats-server configuration from its nodes and
// providers, with the users' seeds read from (or generated into) the credentials directory.
import { renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { renderBusConfig } from './config.ts';
import { usersOf } from './users.ts';
import { loadOrCreateLogins } from './credentials.ts';
import { renderLeafConfig } from './leaf.ts';
import { loadOrCreateLeafLogins } from './leaf-secrets.ts';
import { readRegularFile } from '../../../shared/base/regular-file.ts';
import { ok } from '../../../shared/base/result.ts';
import type { BusConfigOptions } from '../../options.ts';

/** Runs the command: the configuration (or the seeds) to stdout or --out; says on stderr what it generated. Returns the exit code. */
export function runBusConfig(opts: BusConfigOptions, out: (text: string) => void, say: (line: string) => void): number {
  const users = usersOf(opts);
  const logins = loadOrCreateLogins(opts.credentials, users);
  if (!logins.ok) {
    say(logins.reason);
    return 1;
  }
  for (const user of logins.value.generated) say(`generated the nkey seed of ${user} in ${join(opts.credentials, `${user}.nk`)}`);
  if (opts.showCredentials) {
    out(logins.value.logins.map((l) => `${l.user} ${l.seed}\n`).join(''));
    return 0;
  }
  const publicKeys = new Map(logins.value.logins.map((l) => [l.user, l.publicKey]));
  const leafLogins = opts.leaf || opts.leafListen ? loadOrCreateLeafLogins(opts.credentials, opts.nodes) : ok([]);
  if (!leafLogins.ok) {
    say(leafLogins.reason);
    return 1;
  }
  for (const l of leafLogins.value) if (l.generated) say(`generated the leaf password of ${l.user} in ${l.file}`);
  const { leaf, leafListen, leafAdvertise, leafTls, ...mesh } = opts;
  if (leaf) {
    const passwords = new Map(leafLogins.value.map((l) => [l.node, l.password]));
    const text = renderLeafConfig({ ...leaf, nodes: opts.nodes, listen: opts.listen, domain: opts.jsDomain, archives: opts.archives, passwords, publicKeys });
    // It holds the nodes' leaf passwords: readable by its owner alone.
    return writeOut(opts.out, text, 0o600, out, say);
  }
  // Allowed (a lab, a link already encrypted), but said: the sites log in with passwords.
  if (leafListen && !leafTls && !isLoopback(leafListen))
    say(`--leaf-listen ${leafListen} without --leaf-tls-cert: the sites' leaf passwords and the mesh's traffic cross the network in the clear`);
  const hashes = new Map(leafLogins.value.map((l) => [l.node, l.hash]));
  const text = renderBusConfig({
    ...mesh,
    publicKeys,
    ...(leafListen
      ? {
          leaf: {
            listen: leafListen,
            domain: opts.jsDomain,
            hashes,
            ...(leafAdvertise ? { advertise: leafAdvertise } : {}),
            ...(leafTls ? { tls: leafTls } : {}),
          },
        }
      : {}),
  });
  const previous = opts.out === undefined ? undefined : previousText(opts.out);
  const code = writeOut(opts.out, text, 0o644, out, say);
  const added = previous === undefined ? [] : accountsAdded(previous, text);
  if (added.length > 0) say(reloadTwice(added));
  // A node or provider left off this run is gone from the file: said, so a forgotten flag is not a silent lockout.
  const removed = previous === undefined ? [] : accountsAdded(text, previous);
  if (removed.length > 0) say(accountsGone(removed));
  if (previous !== undefined && hasLeafNodes(previous) && !hasLeafNodes(text)) say(LEAF_NODES_GONE);
  return code;
}

/** Whether a hub's file serves leaf nodes (a `leafnodes` block at its top level). */
function hasLeafNodes(text: string): boolean {
  return /^leafnodes \{$/m.test(text);
}

/** What to say when a run without the leaf flags overwrites a hub's file that served sites. */
export const LEAF_NODES_GONE =
  'the file served leaf nodes (sites) and this run gives no --leaf-listen: its leafnodes block, the leaf logins and the ' +
  'JetStream domain are gone from it, and nats-server refuses to reload leaf nodes away ("config reload not supported for LeafNode"); ' +
  'run bus-config again with the same --leaf-listen, --leaf-advertise, --leaf-tls-cert/--leaf-tls-key and --js-domain flags as before, ' +
  'or, to take the sites away, restart nats-server on this file';

/** Prints `text`, or writes it to `file` whole or not at all: a server reloading the file never reads half of it. */
function writeOut(file: string | undefined, text: string, mode: number, out: (text: string) => void, say: (line: string) => void): number {
  if (!file) {
    out(text);
    return 0;
  }
  const temp = join(dirname(file), `.${process.pid}.bus-config.tmp`);
  writeFileSync(temp, text, { mode });
  renameSync(temp, file);
  say(`wrote ${file}`);
  return 0;
}

/** The accounts (`"name": {` at the top of `accounts`) that `next` has and `previous` lacks, in order. */
export function accountsAdded(previous: string, next: string): string[] {
  const names = (text: string) => [...text.matchAll(/^ {2}"?([^"\s]+)"?: \{$/gm)].map((m) => m[1]!);
  const had = new Set(names(previous));
  return names(next).filter((n) => !had.has(n));
}

/**
 * What to do after a configuration that adds accounts: nats-server (2.9, and its code since) makes a
 * new account on a reload but subscribes its service imports only on a reload that finds it there
 * already, so a node added by one reload gets "no responders" until a second reload (or a restart).
 */
export function reloadTwice(accounts: readonly string[]): string {
  return (
    `new account${accounts.length > 1 ? 's' : ''} ${accounts.join(', ')}: reload nats-server twice ` +
    '(`nats-server --signal reload`, or `systemctl reload nats-server`), the second once its log says ' +
    '"Reloaded server configuration" — the first reload makes the account, only the second wires its imports; ' +
    'on a cluster, every server the same way, one after the other'
  );
}

/** Whether a `host:port` listens on the loopback only. */
function isLoopback(listen: string): boolean {
  const host = listen.slice(0, listen.lastIndexOf(':')).replace(/^\[|\]$/g, '');
  return host === 'localhost' || host === '::1' || host.startsWith('127.');
}

/** What to say of accounts the file held before this run and no longer does. */
export function accountsGone(accounts: readonly string[]): string {
  return (
    `account${accounts.length > 1 ? 's' : ''} ${accounts.join(', ')} no longer in the file (not named by this run's --node/--provider): ` +
    'once nats-server reloads it, their logins are refused; run bus-config again naming them if that was not meant'
  );
}

/** The largest earlier configuration compared with this run's: far past a mesh's (a FIFO or a device in its place is none). */
const MAX_PREVIOUS_BYTES = 64 * 1024 * 1024;

/** The file's text before this run, if there was one (a regular file within MAX_PREVIOUS_BYTES). */
function previousText(path: string): string | undefined {
  const read = readRegularFile(path, MAX_PREVIOUS_BYTES);
  return read.ok ? Buffer.from(read.value).toString('utf8') : undefined;
}
