// The seat's --help: its usage, its flags, and a paragraph of each command with that command's own
// flags (`<command> --help` says one in full, from the same description in the command's folder).
import { describeFlags } from '../shared/cli/flags.ts';
import { ASSIGN_OWN_FLAGS } from './commands/assign/command-line.ts';
import { BACKUP_USAGE, RESTORE_OWN_FLAGS } from './commands/backup/command-line.ts';
import { BUS_CONFIG_HELP } from './commands/bus-config/command-line.ts';
import type { CommandHelp } from './commands/command-help.ts';
import { INIT_HELP } from './commands/init/command-line.ts';
import { PUBLISH_HELP } from './commands/publish/command-line.ts';
import { QUERY_HELP } from './commands/query/command-line.ts';
import { ROLLOUT_OWN_FLAGS, ROLLOUT_USAGE } from './commands/rollout/command-line.ts';
import { STATUS_HELP } from './commands/status/command-line.ts';
import { TRACE_HELP } from './commands/trace/command-line.ts';
import { WHY_HELP } from './commands/why/command-line.ts';
import { SERVE_FLAGS } from './seat/command-line.ts';

/** A command's paragraph in the seat's --help: what it does, `<name> flags:` closing its last line, its flags. */
function section(help: CommandHelp): string[] {
  return ['', ...help.about.map((l, i, all) => (i === all.length - 1 ? `${l} ${help.name} flags:` : l)), describeFlags(help.flags)];
}

/** The text of --help: the seat's, and a paragraph of each command (`<command> --help` says one). */
export function serverHelp(): string {
  return [
    'mesh-provisioner — the seat: keeps the registry, composes plans, answers mesh-provisioner.provisioning.',
    '',
    'usage: node server.js [flags]',
    ...[QUERY_HELP, STATUS_HELP, WHY_HELP, TRACE_HELP, BUS_CONFIG_HELP, INIT_HELP].map((c) => `       ${c.usage}`),
    '       node server.js assign NODE MODULE [--dir NAME=PATH …] [--port NAME=N …] [--access|--seat|--machine NAME=VALUE …]',
    '       node server.js unassign NODE MODULE',
    '       node server.js config set NODE MODULE KEY VALUE | get NODE MODULE [KEY] | rm NODE MODULE KEY | import FILE',
    `       ${PUBLISH_HELP.usage}`,
    ROLLOUT_USAGE,
    ...BACKUP_USAGE,
    '',
    'flags:',
    describeFlags(SERVE_FLAGS),
    ...[QUERY_HELP, STATUS_HELP, WHY_HELP, TRACE_HELP, BUS_CONFIG_HELP, PUBLISH_HELP, INIT_HELP].flatMap(section),
    '',
    "assign, unassign and config write the inputs (the controller's assignments, mesh-config's values), with the admin",
    'login; `assign --help` and `config --help` say each in full. assign flags:',
    describeFlags(ASSIGN_OWN_FLAGS),
    '',
    "rollout shows each module's rollout (DESIGN §12); resume lifts a halt, abort plans every node back to the last",
    'good build; both are asked of the seat and refused on a rollout that is done. rollout flags:',
    describeFlags(ROLLOUT_OWN_FLAGS),
    '',
    'backup snapshots every stream of the mesh into a directory, a bus serving or not; restore loads one into a bus',
    'without those streams, each entry with its revision (`backup --help` says both). restore flags:',
    describeFlags(RESTORE_OWN_FLAGS),
    '',
    'SIGTERM drains and exits 0. Logs go to stderr, with sd-daemon prefixes under systemd.',
  ].join('\n');
}
