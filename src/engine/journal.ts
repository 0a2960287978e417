// The journal of what the engine did to programs: one line per restart or reload, `<ISO time> <action> <module>`.
import { appendFile, mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Logger } from '../shared/log.ts';

/** What a request does to its module's program. */
export const PROGRAM_ACTIONS = { restart: 'restart', reload: 'reload' } as const;
/** What a request does to its module's program. */
export type ProgramAction = (typeof PROGRAM_ACTIONS)[keyof typeof PROGRAM_ACTIONS];

/** Records a restart or reload of a module's program. */
export type Journal = (action: ProgramAction, module: string) => Promise<void>;

/** A journal appending to `file` (and always saying it in the log); without a file only the log. */
export function createJournal(file: string | undefined, log: Logger, now: () => Date = () => new Date()): Journal {
  return async (action, module) => {
    log.notice(`${action} ${module}`);
    if (file === undefined) return;
    await mkdir(dirname(file), { recursive: true });
    await appendFile(file, `${now().toISOString()} ${action} ${module}\n`);
  };
}
