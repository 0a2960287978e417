// Calls into the adapter (DESIGN §1): each with a timeout and an AbortSignal, so one call that
// never settles costs its own consumer a retry and nobody else anything, and at most one call per
// consumer at a time — a call given up on still holds its consumer until it really settles, so a
// retry never runs beside it (two `ALTER ROLE`s racing, a remove overtaking a create).

/** How long one adapter call may run before the helper gives up on it and aborts its signal. */
export const DEFAULT_CALL_TIMEOUT_MS = 30_000;

/** The reason of a call the helper gave up on: it ran past its timeout. */
export class CallTimedOut extends Error {
  override name = 'CallTimedOut';
}

/** The reason of a call abandoned because the helper is stopping. */
export class CallStopped extends Error {
  override name = 'CallStopped';
}

/** The adapter calls of one helper; see the file's comment. */
export class AdapterCalls {
  readonly #timeoutMs: number;
  readonly #onSettled: (key: string) => void;
  readonly #onAnswered: () => void;
  /** The consumers whose call has not settled yet, given up on or not. */
  readonly #running = new Set<string>();
  readonly #stopping = new AbortController();

  /**
   * `onSettled` hears each call of a consumer settle, the ones given up on included; `onAnswered`
   * each call the service answered: one that returned, or refused the consumer (Refused).
   */
  constructor(timeoutMs: number, onSettled: (key: string) => void, onAnswered: () => void = () => {}) {
    this.#timeoutMs = timeoutMs;
    this.#onSettled = onSettled;
    this.#onAnswered = onAnswered;
  }

  /** Whether a call for the consumer `key` has not settled yet (one given up on included). */
  busy(key: string): boolean {
    return this.#running.has(key);
  }

  /**
   * Runs `call` for the consumer `key`, handing it a signal; rejects with CallTimedOut once the
   * timeout passes and with CallStopped once the helper stops (aborting the signal either way),
   * whether or not the call heeds it. Throws at once when the consumer's last call has not settled.
   */
  async run<T>(key: string, what: string, call: (signal: AbortSignal) => Promise<T>): Promise<T> {
    if (this.#running.has(key)) throw new Error(`${what}: the last call for this consumer has not settled`);
    if (this.#stopping.signal.aborted) throw new CallStopped('the helper is stopping');
    const controller = new AbortController();
    const stop = () => controller.abort(new CallStopped('the helper is stopping'));
    this.#stopping.signal.addEventListener('abort', stop, { once: true });
    this.#running.add(key);
    // Settled only after the consumer is free again, so the caller's next call for it is allowed.
    const settled = Promise.resolve()
      .then(() => call(controller.signal))
      .then(
        (value) => (this.#onAnswered(), value),
        (err: unknown) => {
          if (err instanceof Error && err.name === 'Refused') this.#onAnswered();
          throw err;
        },
      )
      .finally(() => {
        this.#stopping.signal.removeEventListener('abort', stop);
        this.#running.delete(key);
        this.#onSettled(key);
      });
    let timer: NodeJS.Timeout | undefined;
    const givenUp = new Promise<never>((_, reject) => {
      controller.signal.addEventListener('abort', () => reject(controller.signal.reason), { once: true });
      timer = setTimeout(() => controller.abort(new CallTimedOut(`${what} did not settle within ${this.#timeoutMs} ms`)), this.#timeoutMs);
    });
    try {
      return await Promise.race([settled, givenUp]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Aborts every call still running; later calls are refused. */
  stop(): void {
    this.#stopping.abort();
  }
}
