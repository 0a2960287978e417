// mesh-vault, the reference vault (DESIGN §13): flags, wiring and signals. Everything else lives in src/vault/.
import { connectBus, drainBus, watchConnection } from './shared/bus/bus.ts';
import { connectCommandOnce, connectWhenReachable } from './shared/bus/first-connect.ts';
import { whichLogin } from './shared/bus/login.ts';
import { printLine, runMain, untilSignalled } from './shared/cli/entry.ts';
import { createLogger, underSystemd } from './shared/cli/log.ts';
import { notifySystemd } from './shared/cli/notify.ts';
import { VAULT_CREDENTIAL } from './shared/contract/subjects.ts';
import { VERSION } from './shared/cli/version.ts';
import { parseVaultOptions } from './vault/options.ts';
import { readSecretFrom, rotate, rotationValue } from './vault/rotate.ts';
import { serveCredentials } from './vault/serve.ts';
import { VaultStore } from './vault/store.ts';
import { parseVaultName } from './shared/contract/vault-names.ts';

const out = (line: string) => printLine(process.stdout, line);
const err = (line: string) => printLine(process.stderr, `mesh-vault: ${line}`);

async function main(): Promise<number> {
  const parsed = parseVaultOptions(process.argv.slice(2), process.env);
  if (!parsed.ok) return (err(parsed.reason), 2);
  const opts = parsed.value;
  if (opts.command === 'help') return (void process.stdout.write(opts.text + '\n'), 0);
  if (opts.command === 'version') return (void process.stdout.write(`mesh-vault ${VERSION}\n`), 0);

  if (opts.command === 'rotate') {
    // A provision's credential is rotated in the running vault's store, never one made here (a wrong
    // --store rotated nothing the vault serves, and said it had), and only when that store holds it:
    // it is made at its first ask, so one it does not hold is a name mistyped. A module's secret may be
    // the store's first value (an operator gives the secrets before the vault first runs).
    const named = parseVaultName(opts.name);
    const pair = named.ok && named.value.kind === 'pair';
    const store = await VaultStore.open(opts.store, err, { make: named.ok && !pair });
    if (pair && !(await store.holds(opts.name)))
      return (
        err(
          `${opts.name} is not in the store ${opts.store}: a provision's credential is made at its first ask, so this name is mistyped or the store is not the running vault's; nothing rotated`,
        ),
        1
      );
    const nc = await connectCommandOnce(opts.bus, 'vault', err);
    try {
      const value = await rotationValue(opts.name, () => readSecretFrom(process.stdin));
      if (!value.ok) return (err(value.reason), 1);
      const rotated = await rotate(nc, store, opts.name, value.value);
      if (!rotated.ok) return (err(rotated.reason), 1);
      out(`rotated ${opts.name}; said on mesh-vault.changed`);
      return 0;
    } finally {
      await nc.close();
    }
  }

  const log = createLogger({ prefix: underSystemd(), least: opts.debug ? 'debug' : 'info' });
  const signalled = untilSignalled();
  log.info(`mesh-vault ${VERSION} connecting to ${opts.bus.servers.join(',')}, store ${opts.store}`);
  const store = await VaultStore.open(opts.store, (line) => log.warn(line));
  if (opts.lab)
    log.warn(
      `--lab: the bare ${VAULT_CREDENTIAL} is answered without knowing the asker: whoever may publish it gets any credential (a bus without isolation only)`,
    );
  const nc = await connectWhenReachable({ bus: opts.bus, log, signalled, login: whichLogin(opts.bus, 'vault') });
  if (!nc) return 0;
  watchConnection(nc, log);
  const served = serveCredentials({ nc, credentials: (name) => store.credential(name), log, lab: opts.lab });
  // Ready means subscribed: the server has the subscriptions once it answers the flush.
  await nc.flush();
  log.info(`vault ready: serving ${VAULT_CREDENTIAL}.<node>${opts.lab ? ` and ${VAULT_CREDENTIAL}` : ''} from ${store.dir}`);
  notifySystemd(log, signalled);
  await signalled;
  log.info('draining');
  await served.stop();
  await drainBus(nc, log);
  log.info('stopped');
  return 0;
}

runMain('mesh-vault', main);
