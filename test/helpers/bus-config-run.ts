// Runs `node dist/server.js bus-config …` as an operator does (the leaf tests).
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { ensureBuilt, ROOT } from './bundle.ts';

/** `node dist/server.js bus-config <args>` run to its end. */
export function busConfigRun(args: string[]) {
  ensureBuilt('server');
  return spawnSync(process.execPath, [join(ROOT, 'dist', 'server.js'), 'bus-config', ...args], { encoding: 'utf8' });
}

/** `node dist/server.js bus-config <args>`'s stdout, or an error with its stderr. */
export function busConfigOut(args: string[]): string {
  const run = busConfigRun(args);
  if (run.status !== 0) throw new Error(`bus-config ${args.join(' ')} exited ${run.status}: ${run.stderr}`);
  return run.stdout;
}
