// mesh-provisioner, the seat and its commands: flags in, the command run, its exit code out.
// Each command lives in its folder under src/server/commands/, the seat's start in src/server/seat/run.ts.
// First, so the heap is set before the rest of the bundle allocates (server/v8-flags.ts says why).
import './server/v8-flags.ts';
import { printLine, runMain } from './shared/cli/entry.ts';
import { parseServerOptions } from './server/command-line.ts';
import { runCommand } from './server/command-table.ts';

async function main(): Promise<number> {
  const parsed = parseServerOptions(process.argv.slice(2), process.env);
  if (!parsed.ok) return (printLine(process.stderr, `mesh-provisioner: ${parsed.reason}`), 2);
  return runCommand(parsed.value);
}

runMain('mesh-provisioner', main);
