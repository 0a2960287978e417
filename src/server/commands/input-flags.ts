// What the input commands (DESIGN §13: `assign`, `unassign`, `config`) share on their command
// line: the bus's flags and --replicas of an input bucket they create, the note their --help ends
// on, and the reading of both into the base every one of them runs with.
import { BUS_FLAGS, busOptionsFrom } from '../../shared/cli/bus-flags.ts';
import type { FlagTable } from '../../shared/cli/flags.ts';
import { fail, ok, type Parsed } from '../../shared/base/result.ts';
import { DEFAULT_REPLICAS, type InputCommandBase } from '../options.ts';

/** The flags every input command takes. */
export const INPUT_FLAGS = [
  ...BUS_FLAGS,
  {
    name: 'replicas',
    env: 'MESH_REPLICAS',
    type: 'int',
    arg: 'N',
    help: `copies the input bucket keeps if this command creates it (a bus without isolation), 1–5 (default ${DEFAULT_REPLICAS})`,
  },
] as const satisfies FlagTable;

/** The lines every input command's --help says of the login it needs and what its names are checked against. */
export const INPUT_NOTE = [
  'Run with the admin login (its seed, admin.nk, as --nkey): no other login may write the inputs. Names are',
  'checked against their grammars only, never against the catalogue: what the seat cannot compose, `status` shows.',
];

/** The bus and the replicas an input command `command` was given; a reason names the flag. */
export function inputBase(values: Parameters<typeof busOptionsFrom>[0] & { replicas?: number }, command: string): Parsed<InputCommandBase> {
  const bus = busOptionsFrom(values, `mesh-provisioner ${command}`);
  if (!bus.ok) return bus;
  const replicas = values.replicas ?? DEFAULT_REPLICAS;
  if (replicas < 1 || replicas > 5) return fail(`--replicas must be 1 to 5, got ${replicas}`);
  return ok({ bus: bus.value, replicas });
}
