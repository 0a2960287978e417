// The --help of a command of server.js that has its own: its usage line, what it does, its own
// flags and, when it reaches the bus, the connection's. The seat's --help (server/help.ts) shows
// the same parts of each, so both read from one description.
import { BUS_FLAGS } from '../../shared/cli/bus-flags.ts';
import { describeFlags, type FlagTable } from '../../shared/cli/flags.ts';

/** A command of server.js whose --help is its own: its name, usage line, what it does, its own flags, and whether it reaches the bus. */
export type CommandHelp = { name: string; usage: string; about: readonly string[]; flags: FlagTable; bus: boolean };

/** The --help of one command: its usage, what it does, its flags and, when it reaches the bus, the connection's. */
export function commandHelpText(help: CommandHelp): () => string {
  return () =>
    [
      `usage: ${help.usage}`,
      '',
      ...help.about,
      '',
      `${help.name} flags:`,
      describeFlags(help.flags),
      ...(help.bus ? ['', 'flags:', describeFlags(BUS_FLAGS)] : []),
    ].join('\n');
}
