// The consumers file watched for as long as the helper runs: a directory that cannot be watched (not
// made yet, or gone) is tried again with the backoff, and a change missed meanwhile is read anyway.
import { backoffWait, type BackoffLimits } from '../shared/base/backoff.ts';
import { errorText } from '../shared/base/errors.ts';
import { watchFile, type FileWatch } from './consumers-file.ts';
import type { ProviderLog } from './provider-options.ts';

/** What the kept watch is handed by the helper's loop. */
export type KeptWatchDeps = {
  /** The consumers file. */
  file: string;
  /** The backoff between tries of a watch that failed. */
  retry: BackoffLimits;
  /** The file may have changed. */
  onChange: () => void;
  say: (level: keyof ProviderLog, line: string) => void;
  /** Runs `fn` after `ms` unless the helper stopped (the loop's timers). */
  later: (ms: number, fn: () => void) => void;
};

/** A watch of the consumers file, made again whenever it fails. */
export class KeptWatch {
  readonly #d: KeptWatchDeps;
  #watch: FileWatch | undefined;

  /** A watch not started yet (arm starts it). */
  constructor(deps: KeptWatchDeps) {
    this.#d = deps;
  }

  /** Watches the file; a directory that cannot be watched is tried again with the backoff. */
  arm(failures = 0): void {
    const { file, retry, onChange, say, later } = this.#d;
    const again = (err: unknown, failed: number) => {
      this.#watch?.close();
      const wait = backoffWait(retry, failed);
      // A directory not made yet is how a provider starts before its module's first fill: said once, not as an error.
      if ((err as NodeJS.ErrnoException | undefined)?.code !== 'ENOENT') say('error', `cannot watch ${file}: ${errorText(err)}; trying again in ${wait} ms`);
      else if (failed <= 1) say('info', `cannot watch ${file} yet: ${errorText(err)}; trying again until its directory is there`);
      later(wait, () => this.arm(failed));
    };
    try {
      this.#watch = watchFile(file, onChange, (err) => again(err, 1));
      // The file may have changed while nothing watched it.
      if (failures > 0) onChange();
    } catch (err) {
      again(err, failures + 1);
    }
  }

  /** Stops watching. */
  close(): void {
    this.#watch?.close();
  }
}
