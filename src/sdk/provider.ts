// The provider helper (DESIGN §1, §3): keeps what a provider serves in step with its consumers
// file — creating, rotating and withdrawing each consumer's resource through the adapter and
// publishing what was served in `<provider>_bound`. The loop is reconciler.ts; this is its handle.
import { Reconciler } from './reconciler.ts';
import { resolveOptions, type ProviderOptions } from './provider-options.ts';

export { DEFAULT_RETRY, DEFAULT_STOP_TIMEOUT_MS, type ProviderLog, type ProviderOptions } from './provider-options.ts';
export { DEFAULT_CALL_TIMEOUT_MS } from './adapter-calls.ts';
export { DEFAULT_CONCURRENCY } from './work-queue.ts';

/** A running helper. */
export type ProviderHandle = {
  /** Stops watching and retrying, aborts the adapter calls under way, and resolves once the work under way has ended or the stop timeout passed. */
  stop(): Promise<void>;
  /** Resolves once no consumer waits or is worked on (a retry waiting for its time is not waiting). */
  reconciled(): Promise<void>;
  /**
   * Resolves with why when the helper stops by itself, having served nothing: another helper serves
   * the same provider and provision on this bus, or the bus refuses the login its requests (another
   * provider's seed); the helper has said why at error, and a program should then exit 1. Never
   * resolves otherwise.
   */
  ended: Promise<string>;
};

/** Serves the consumers of one provision of a provider module until stopped; see ProviderOptions. */
export function runProvider(opts: ProviderOptions): ProviderHandle {
  const loop = new Reconciler(resolveOptions(opts));
  loop.begin();
  return { stop: () => loop.stop(), reconciled: () => loop.reconciled(), ended: loop.ended };
}
