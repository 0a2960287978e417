// The command line of `backup DIR` and `restore DIR [--replicas N]` (deploy/README.md, "Backup and
// restore"): every stream of the mesh's account snapshotted by nats-server into a directory, and
// loaded into a bus that has none of them, both with the admin login.
import { BUS_FLAGS, busOptionsFrom } from '../../../shared/cli/bus-flags.ts';
import { describeFlags, openCommand, unexpectedArgument, valueSource, type Asked, type FlagTable } from '../../../shared/cli/flags.ts';
import { fail, ok, type Parsed } from '../../../shared/base/result.ts';
import type { BackupOptions, RestoreOptions } from '../../options.ts';

/** The flags `restore` takes besides the bus's. */
export const RESTORE_OWN_FLAGS = [
  {
    name: 'replicas',
    env: 'MESH_REPLICAS',
    type: 'int',
    arg: 'N',
    help: 'copies each restored stream keeps, 1–5 (default: as many as it had when backed up)',
  },
] as const satisfies FlagTable;

/** The usage lines of `backup` and `restore` in the seat's --help. */
export const BACKUP_USAGE = [
  '       node server.js backup DIR [flags]                 (with the admin login)',
  '       node server.js restore DIR [--replicas N] [flags] (with the admin login, into a bus without the mesh’s streams)',
];

/** The text of `backup --help` and `restore --help`: both commands, not the whole seat's. */
export function backupHelp(): string {
  return [
    'mesh-provisioner backup and restore — every stream of the mesh, as nats-server snapshots it, with the admin login.',
    '',
    'usage: node server.js backup DIR                 snapshot every stream of the account (each bucket and the',
    '                                                 archives store) into DIR, which must be new or empty',
    '       node server.js restore DIR [--replicas N] load a backup into a bus that has none of its streams,',
    '                                                 each with its messages and sequence numbers as they were',
    '',
    'A bus that is serving may be backed up: each stream is snapshotted whole at one moment. DIR holds, per',
    'stream, backup.json (its configuration and state) and stream.tar.s2 (its data), and manifest.json, written',
    'last: a DIR without it is a backup that did not finish, and restore refuses it. Run init after restore.',
    '',
    'restore flags:',
    describeFlags(RESTORE_OWN_FLAGS),
    '',
    'flags:',
    describeFlags(BUS_FLAGS),
  ].join('\n');
}

/** Parses `backup …` or `restore …` (argv after the command's word); a reason names what is wrong. */
export function parseBackupCommand(
  command: 'backup' | 'restore',
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
): Parsed<BackupOptions | RestoreOptions | Asked> {
  const table = command === 'restore' ? [...BUS_FLAGS, ...RESTORE_OWN_FLAGS] : BUS_FLAGS;
  const opened = openCommand(argv, env, table, backupHelp);
  if ('answered' in opened) return opened.answered;
  const {
    values,
    positional: [dir, extra],
  } = opened;
  if (dir === undefined || dir === '') return fail(`${command} needs a DIR`);
  if (extra !== undefined) return unexpectedArgument(extra);
  const bus = busOptionsFrom(values, `mesh-provisioner ${command}`);
  if (!bus.ok) return bus;
  if (command === 'backup') return ok({ command, bus: bus.value, dir });
  const replicas = (values as { replicas?: number }).replicas;
  const replicasFrom = valueSource(table, 'replicas', opened.onCommandLine, env);
  if (replicas !== undefined && (replicas < 1 || replicas > 5)) return fail(`${replicasFrom} must be 1 to 5, got ${replicas}`);
  return ok({ command, bus: bus.value, dir, replicasFrom, ...(replicas === undefined ? {} : { replicas }) });
}
