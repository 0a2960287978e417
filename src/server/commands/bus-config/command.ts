// `node dist/server.js bus-config …`: renders the mesh's nats-server configuration from its nodes and
// providers, with the users' seeds read from (or generated into) the credentials directory.
import { renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { renderBusConfig, usersOf } from './config.ts';
import { loadOrCreateLogins } from './credentials.ts';
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
  const text = renderBusConfig({ ...opts, publicKeys: new Map(logins.value.logins.map((l) => [l.user, l.publicKey])) });
  if (!opts.out) {
    out(text);
    return 0;
  }
  // Whole or not at all: a server reloading the file never reads half of it.
  const temp = join(dirname(opts.out), `.${process.pid}.bus-config.tmp`);
  writeFileSync(temp, text, { mode: 0o644 });
  renameSync(temp, opts.out);
  say(`wrote ${opts.out}`);
  return 0;
}
