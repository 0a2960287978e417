// The rollouts bucket as the seat reads and writes it (DESIGN §3, §12): every state read once at
// start, then each module's state written in order, the latest winning, a failed write tried again.
import type { NatsConnection } from '@nats-io/transport-node';
import type { KV } from '@nats-io/kv';
import { ROLLOUTS } from '../../../shared/contract/buckets.ts';
import { jsonBytes } from '../../../shared/base/bytes.ts';
import { errorText } from '../../../shared/base/errors.ts';
import type { Logger } from '../../../shared/cli/log.ts';
import { readAll } from '../../../shared/bus/watch/read-all.ts';
import { readRolloutState, type RolloutState } from '../../../shared/contract/rollout-state.ts';
import { sleepOn, unrefTimer, type Timer } from '../../../shared/base/timer.ts';

/** How long a failed write of a state waits before it is tried again. */
export const STATE_RETRY_MS = 1000;

/** Reads every stored state; one that does not validate is said with its key and left alone (the seat starts no rollout from it). */
export async function loadRolloutStates(nc: NatsConnection, log: Logger): Promise<Map<string, RolloutState>> {
  const states = new Map<string, RolloutState>();
  for (const [key, bytes] of await readAll(nc, ROLLOUTS)) {
    const read = readRolloutState(key, bytes);
    if (read.ok) states.set(key, read.value);
    else log.error(`${ROLLOUTS} ${key.slice(0, 300)}: ${read.reason}; ignored`);
  }
  return states;
}

/** Writes each module's latest state, one write in flight per module; resolves when that state (or a later one) is stored. */
export class StateWriter {
  readonly #latest = new Map<string, RolloutState>();
  readonly #running = new Map<string, Promise<void>>();
  /** Per module, the build and size last said too large for the bus, so it is said once, not every try. */
  readonly #saidTooLarge = new Map<string, string>();
  #closed = false;

  /** `timer` waits before a failed write is tried again (unrefTimer: it never holds a stopping seat open); tests hand in their own. */
  constructor(
    private readonly put: (module: string, bytes: Uint8Array) => Promise<unknown>,
    private readonly log: Logger,
    private readonly timer: Timer = unrefTimer,
  ) {}

  /** A writer putting into the rollouts bucket `kv`, waiting on `timer` before it tries again. */
  static of(kv: KV, log: Logger, timer?: Timer): StateWriter {
    return new StateWriter((module, bytes) => kv.put(module, bytes), log, timer);
  }

  /** Asks for `state` to be stored; what is asked while a write runs is folded into the next one. */
  write(state: RolloutState): Promise<void> {
    this.#latest.set(state.module, state);
    let running = this.#running.get(state.module);
    if (!running) {
      running = this.#drain(state.module).finally(() => this.#running.delete(state.module));
      this.#running.set(state.module, running);
    }
    return running;
  }

  /** Whether a write runs. */
  get writing(): boolean {
    return this.#running.size > 0;
  }

  /** Resolves once no write runs: every state asked so far is stored (a write the bus keeps refusing never is). */
  async idle(): Promise<void> {
    while (this.#running.size > 0) await Promise.all(this.#running.values());
  }

  /** Stops trying failed writes again. */
  close(): void {
    this.#closed = true;
  }

  /**
   * A state past the bus's max_payload is never stored, so its wave is never planned: said once per
   * build and size at error, with what to do, and tried again quietly (a reload may raise the limit).
   */
  #sayTooLarge(state: RolloutState, size: number, err: unknown): void {
    const said = `${state.build} ${size}`;
    if (this.#saidTooLarge.get(state.module) === said) return;
    this.#saidTooLarge.set(state.module, said);
    this.log.error(
      `${ROLLOUTS} ${state.module}: the rollout of build ${state.build} cannot be stored: its state is ${size} bytes, past the bus's max_payload ` +
        `(${errorText(err)}); no wave moves and its nodes keep their plans until it fits: raise max_payload in nats.conf, or publish without a rollout`,
    );
  }

  async #drain(module: string): Promise<void> {
    for (let state = this.#latest.get(module); state && !this.#closed; state = this.#latest.get(module)) {
      this.#latest.delete(module);
      const bytes = jsonBytes(state);
      try {
        await this.put(module, bytes);
        this.#saidTooLarge.delete(module);
      } catch (err) {
        if (isTooLarge(err)) this.#sayTooLarge(state, bytes.length, err);
        else this.log.warn(`${ROLLOUTS} ${module}: write failed: ${errorText(err, { name: true })}; trying again`);
        if (!this.#latest.has(module)) this.#latest.set(module, state);
        await sleepOn(this.timer, STATE_RETRY_MS);
      }
    }
  }
}

/** Whether the bus refused a write for its size (nats.js checks the server's max_payload before it sends). */
function isTooLarge(err: unknown): boolean {
  return /max_payload|payload size exceeded|MAX_PAYLOAD/i.test(errorText(err, { name: true }));
}
