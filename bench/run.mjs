// Runs the benchmarks named on the command line (`npm run bench -- fleet --nodes 100`), each with the
// arguments that follow its name, or without a name the ones `npm run bench` always runs. A
// benchmark is bench/<name>.ts, run with tsx in a process of its own; the first that fails stops the run.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const here = dirname(fileURLToPath(import.meta.url));
/** What `npm run bench` runs without a name: the fleet bench takes many minutes, so it runs only when named. */
const DEFAULT = ['latency', 'collections', 'asks', 'seat-scale', 'rollout', 'liveness', 'provenance', 'drift', 'bus-cost'];

/** The benchmarks and their arguments: a word that names bench/<word>.ts starts the next one. */
function plan(args) {
  const runs = [];
  for (const a of args) {
    if (!a.startsWith('-') && existsSync(join(here, `${a}.ts`))) runs.push({ name: a, args: [] });
    else if (runs.length > 0) runs.at(-1).args.push(a);
    else throw new Error(`bench: "${a}" names no benchmark of bench/ (and no benchmark came before it)`);
  }
  return runs.length > 0 ? runs : DEFAULT.map((name) => ({ name, args: [] }));
}

for (const { name, args } of plan(process.argv.slice(2))) {
  const run = spawnSync(process.execPath, ['--import', 'tsx', join(here, `${name}.ts`), ...args], { stdio: 'inherit' });
  if (run.status !== 0) process.exit(run.status ?? 1);
}
