// One line per event on stderr, with sd-daemon priority prefixes when run under systemd.
import { safeText } from './safe-text.ts';

/** sd-daemon priorities. */
export const LEVELS = { error: 3, warn: 4, notice: 5, info: 6, debug: 7 } as const;
/** A log level. */
export type Level = keyof typeof LEVELS;
/** Each level's name as a line says it outside systemd: the names of the README's table and of `journalctl -p`. */
const NAMES: Record<Level, string> = { error: 'error', warn: 'warning', notice: 'notice', info: 'info', debug: 'debug' };

/** A logger: one call, one line. */
export type Logger = Record<Level, (message: string) => void>;

/** Whether stderr goes to the journal (systemd sets JOURNAL_STREAM for a unit's stderr). */
export function underSystemd(env: NodeJS.ProcessEnv = process.env): boolean {
  return Boolean(env['JOURNAL_STREAM'] || env['INVOCATION_ID']);
}

/** Makes a logger writing to `write`, each message one line of safe text (DESIGN §3); below `least`, lines are dropped. */
export function createLogger(opts: { prefix: boolean; least?: Level; write?: (line: string) => void }): Logger {
  const write = opts.write ?? ((line: string) => process.stderr.write(line + '\n'));
  const least = LEVELS[opts.least ?? 'info'];
  const make = (level: Level) => (message: string) => {
    if (LEVELS[level] > least) return;
    // A message may quote bus text (a reason, a key, a provider's refusal): escaped here, whoever built it.
    const oneLine = safeText(message);
    write(opts.prefix ? `<${LEVELS[level]}>${oneLine}` : `${new Date().toISOString()} ${NAMES[level]} ${oneLine}`);
  };
  return { error: make('error'), warn: make('warn'), notice: make('notice'), info: make('info'), debug: make('debug') };
}

/** A logger that keeps its lines, for tests. */
export function memoryLogger(): Logger & { lines: string[] } {
  const lines: string[] = [];
  return Object.assign(createLogger({ prefix: false, least: 'debug', write: (line) => lines.push(line) }), { lines });
}
