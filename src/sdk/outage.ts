// A service the adapter cannot reach (its Unavailable error, DESIGN §1): one outage for the whole
// helper, however many consumers' calls fail in it — said once at warning with the adapter's reason
// (which names the address), each try after it at debug, and its end at notice with how long it
// lasted, the way the daemons' bus waits are said (src/shared/bus/bind-wait.ts).

/** Where an outage is said: `debug` may be dropped (a log without it). */
export type OutageSay = (level: 'warn' | 'notice' | 'debug', line: string) => void;

/** Whether `err` is the adapter's Unavailable (by name: a provider may bundle its own copy of the class). */
export function isUnavailable(err: unknown): boolean {
  return err instanceof Error && err.name === 'Unavailable';
}

/** The helper's outage of its service, if one is under way; see the file's comment. */
export class Outage {
  readonly #say: OutageSay;
  readonly #now: () => number;
  /** When the first call of this outage failed; undefined while the service answers. */
  #since: number | undefined;

  /** `say` hears the lines; `now` is the clock (tests hand in their own). */
  constructor(say: OutageSay, now: () => number = Date.now) {
    this.#say = say;
    this.#now = now;
  }

  /** A consumer's call failed with Unavailable: the outage's first failure is said at warning, the others at debug. */
  failed(label: string, verb: string, reason: string, failures: number, waitMs: number): void {
    if (this.#since !== undefined) return this.#say('debug', `${label}: ${verb} failed (try ${failures}): ${reason}; trying again in ${waitMs} ms`);
    this.#since = this.#now();
    this.#say('warn', `${label}: ${verb} waits for the service: ${reason}; trying again until it answers (each try said at debug)`);
  }

  /** A call was answered by the service: an outage under way ends, said at notice with how long it lasted. */
  answered(): void {
    if (this.#since === undefined) return;
    const seconds = ((this.#now() - this.#since) / 1000).toFixed(1);
    this.#since = undefined;
    this.#say('notice', `the service answers again, after ${seconds} s: serving`);
  }
}
