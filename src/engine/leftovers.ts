// What a killed engine left behind: the temp files of writes it did not finish, swept from each
// directory the first time a run of the engine is asked to write there.
import type { Logger } from '../shared/cli/log.ts';
import { removeTempFiles } from './writer.ts';
import { errorText } from '../shared/base/errors.ts';

/** Sweeps a directory of the temp files a cut-short write left there, at most once per engine run. */
export type TempSweeper = (dir: string) => Promise<void>;

/**
 * Makes the sweeper of one engine run. Once per directory is enough: a running engine removes the
 * temp file of a write that fails, so only a run that was killed leaves one, and the client sends
 * every file again when the engine starts (its socket is a knock), so each directory it writes is
 * swept right after a restart. A sweep that fails is said and does not stop the write.
 */
export function createTempSweeper(log: Logger): TempSweeper {
  const swept = new Set<string>();
  return async (dir) => {
    if (swept.has(dir)) return;
    swept.add(dir);
    try {
      const removed = await removeTempFiles(dir);
      if (removed.length > 0) log.notice(`${dir}: removed ${removed.length} temp file(s) a write cut short left: ${removed.join(', ')}`);
    } catch (err) {
      log.warn(`${dir}: could not sweep temp files a write cut short may have left: ${errorText(err)}`);
    }
  };
}
