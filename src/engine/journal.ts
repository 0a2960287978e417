// The journal of what the engine did to programs and to files it removed: one line each,
// `<ISO time> <action> <module>` for a restart or reload, `<ISO time> <action> <module> <path>` for a file.
import { appendFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Logger } from '../shared/cli/log.ts';

/** What a request does to its module's program. */
export const PROGRAM_ACTIONS = { restart: 'restart', reload: 'reload' } as const;
/** What a request does to its module's program. */
export type ProgramAction = (typeof PROGRAM_ACTIONS)[keyof typeof PROGRAM_ACTIONS];

/** What the engine did with a file no declaration names any more (DESIGN §7.12). */
export const REMOVAL_ACTIONS = {
  /** An `owned` file deleted, or a `managed` file deleted when its block was all it held. */
  remove: 'remove',
  /** A `managed` block cut out of a file that keeps the rest. */
  cut: 'cut',
  /** A `seed` file left where it is: after its first write it is the program's, not the engine's. */
  leave: 'leave',
} as const;
/** What the engine did with a file no declaration names any more. */
export type RemovalAction = (typeof REMOVAL_ACTIONS)[keyof typeof REMOVAL_ACTIONS];

/** Records a restart or reload of a module's program, or what was done with a file of it (`path`) no longer declared. */
export type Journal = (action: ProgramAction | RemovalAction, module: string, path?: string) => Promise<void>;

/** A journal appending to `file` (and always saying it in the log); without a file only the log. */
export function createJournal(file: string | undefined, log: Logger, now: () => Date = () => new Date()): Journal {
  return async (action, module, path) => {
    // A path is one line (the fill protocol refuses a line break in it), so it ends the line as it is.
    const what = path === undefined ? `${action} ${module}` : `${action} ${module} ${path}`;
    log.notice(what);
    if (file === undefined) return;
    appendLine(file, `${now().toISOString()} ${what}\n`);
  };
}

// Synchronous, as the writer is (writer.ts says why); the directory is made when it is missing (at the first line, or removed since).
function appendLine(file: string, line: string): void {
  try {
    return appendFileSync(file, line);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  mkdirSync(dirname(file), { recursive: true });
  appendFileSync(file, line);
}
