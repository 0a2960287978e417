// The reference vault's command line (DESIGN §10, §13): its flag tables, --help, and the parser that
// rejects what is wrong naming the flag.
import { BUS_FLAGS, busOptionsFrom } from '../shared/cli/bus-flags.ts';
import type { BusOptions } from '../shared/bus/bus.ts';
import { describeFlags, openCommand, openFlagsOnly, unexpectedArgument, type Asked, type FlagTable } from '../shared/cli/flags.ts';
import { INBOX_PREFIXES } from '../shared/bus/inbox.ts';
import { commandFirst } from '../shared/cli/command-first.ts';
import { fail, ok, type Parsed } from '../shared/base/result.ts';
import { VAULT_CHANGED, VAULT_CREDENTIAL } from '../shared/contract/subjects.ts';
import { parseVaultName } from '../shared/contract/vault-names.ts';

/** The connection name the vault gives the bus (seen in the server's monitoring and logs). */
export const VAULT_CONNECTION_NAME = 'mesh-vault';

const STORE_FLAG = {
  name: 'store',
  env: 'MESH_VAULT_STORE',
  type: 'string',
  arg: 'DIR',
  help: 'one file per vault name under DIR, 0600 in 0700 directories (required; may be the reference engine’s --secrets)',
} as const;

const SERVE_FLAGS = [
  ...BUS_FLAGS,
  STORE_FLAG,
  {
    name: 'lab',
    env: 'MESH_VAULT_LAB',
    type: 'bool',
    help: `answer the bare ${VAULT_CREDENTIAL} without knowing the asker (a bus without isolation only)`,
  },
  { name: 'debug', env: 'MESH_DEBUG', type: 'bool', help: 'log debug lines (never a value)' },
] as const satisfies FlagTable;

const ROTATE_FLAGS = [...BUS_FLAGS, STORE_FLAG] as const satisfies FlagTable;

/** What the vault is told to do: serve, rotate one name, or print help or its version. */
export type VaultCommand =
  | Asked
  | {
      command: 'serve';
      /** How to reach the bus, with the vault's inbox prefix. */
      bus: BusOptions;
      /** The store's directory. */
      store: string;
      /** Whether the bare subject is answered unchecked. */
      lab: boolean;
      /** Whether debug lines are logged. */
      debug: boolean;
    }
  | {
      command: 'rotate';
      /** How to reach the bus, with the vault's inbox prefix. */
      bus: BusOptions;
      /** The store's directory. */
      store: string;
      /** The vault name to rotate. */
      name: string;
    };

/** The text of --help. */
export function vaultHelp(): string {
  return [
    `mesh-vault — the reference vault: answers ${VAULT_CREDENTIAL}.<node> from a file store (DESIGN §11, §13).`,
    '',
    'usage: node vault.js --store DIR [--nats URL[,URL…]] [--nkey FILE] [--lab] [--debug]',
    '       node vault.js rotate NAME --store DIR [--nats URL[,URL…]] [--nkey FILE]',
    '',
    "A provision's credential (pair/<provider>/<provision>/<node>/<module>[/<local>]) is made on its first ask",
    "(32 random bytes, base64url) and handed only where the provider is planned for it (the node the consumer's",
    "plan binds it on has a plan of module <provider> providing <provision>), to the consumer's node or that one;",
    "a module's own secret (module/<module>/<name>) is never made, only read, and handed only to a node with a plan",
    'of that module. While the plans cannot be read (the bus without JetStream) every ask is answered busy. No',
    'value is ever logged.',
    '',
    'flags:',
    describeFlags(SERVE_FLAGS),
    '',
    `rotate writes a new value and says so on ${VAULT_CHANGED}: random for a pair/… credential; for a`,
    'module/… secret, the new value is read from stdin (one trailing newline dropped). rotate flags:',
    describeFlags(ROTATE_FLAGS),
    '',
    'SIGTERM drains and exits 0. Logs go to stderr, with sd-daemon prefixes under systemd.',
  ].join('\n');
}

/** Parses argv (without node and script) and env; a reason names the flag and what is wrong. */
export function parseVaultOptions(argv: readonly string[], env: NodeJS.ProcessEnv): Parsed<VaultCommand> {
  if (argv[0] === 'rotate') return parseRotate(argv.slice(1), env);
  const served = parseServe(argv, env);
  // `--store D rotate NAME`: the flags went first.
  return served.ok ? served : fail(commandFirst(argv, ['rotate'], 'vault.js') ?? served.reason);
}

function parseServe(argv: readonly string[], env: NodeJS.ProcessEnv): Parsed<VaultCommand> {
  const opened = openFlagsOnly(argv, env, SERVE_FLAGS, vaultHelp);
  if ('answered' in opened) return opened.answered;
  const { values } = opened;
  const bus = busOptionsFrom(values, VAULT_CONNECTION_NAME, INBOX_PREFIXES.vault);
  if (!bus.ok) return bus;
  if (!values.store) return fail('--store is required (see --help)');
  return ok({ command: 'serve', bus: bus.value, store: values.store, lab: values.lab === true, debug: values.debug === true });
}

function parseRotate(argv: readonly string[], env: NodeJS.ProcessEnv): Parsed<VaultCommand> {
  const opened = openCommand(argv, env, ROTATE_FLAGS, vaultHelp);
  if ('answered' in opened) return opened.answered;
  const {
    values,
    positional: [name, extra],
  } = opened;
  if (name === undefined) return fail('rotate needs a vault name (see --help)');
  if (extra !== undefined) return unexpectedArgument(extra);
  const parsed = parseVaultName(name);
  if (!parsed.ok) return fail(`rotate ${JSON.stringify(name.slice(0, 300))}: vault name ${parsed.reason}`);
  const bus = busOptionsFrom(values, `${VAULT_CONNECTION_NAME} rotate`, INBOX_PREFIXES.vault);
  if (!bus.ok) return bus;
  if (!values.store) return fail('--store is required (see --help)');
  return ok({ command: 'rotate', bus: bus.value, store: values.store, name });
}
