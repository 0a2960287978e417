// What runProvider is handed, its defaults, and the options with every default filled in.
import type { NatsConnection } from '@nats-io/transport-node';
import { isName, segmentNameProblem } from '../shared/contract/keys.ts';
import { createLogger, underSystemd } from '../shared/cli/log.ts';
import { DEFAULT_CALL_TIMEOUT_MS } from './adapter-calls.ts';
import type { Adapter } from './types.ts';
import { DEFAULT_CONCURRENCY } from './work-queue.ts';

/** The backoff after a failure: 1 s, doubling, at most 30 s. */
export const DEFAULT_RETRY = { firstMs: 1000, maxMs: 30_000 } as const;

/** How long stop() waits for the work under way once every adapter call has been aborted. */
export const DEFAULT_STOP_TIMEOUT_MS = 5000;

/**
 * Where the helper says what it does; one call, one line, never a credential. A log without `notice`
 * hears those lines at `info`; one without `debug` does not hear those (an outage's tries).
 */
export type ProviderLog = {
  debug?(line: string): void;
  info(line: string): void;
  notice?(line: string): void;
  warn(line: string): void;
  error(line: string): void;
};

/** What runProvider is handed. */
export type ProviderOptions = {
  /** A connection to the bus; the helper never closes it. */
  nc: NatsConnection;
  /** The provider module's name (`postgres`): its bound entries go to `<provider>_bound`. */
  provider: string;
  /** The provision served (`database`), as in `${consumers:<provision>}`. */
  provision: string;
  /** The file the node's engine writes from the template holding `${consumers:<provision>}`. */
  consumersFile: string;
  /** The per-service half: creates, removes and checks one consumer's resource. */
  adapter: Adapter;
  /** A re-check of everything served every so many ms, for an adapter whose service drifts (default: none). */
  recheckMs?: number;
  /** The backoff after a failure, per consumer (default DEFAULT_RETRY). */
  retry?: { firstMs: number; maxMs: number };
  /** How long one adapter call may run before it is given up on and its signal aborted (default DEFAULT_CALL_TIMEOUT_MS). */
  callTimeoutMs?: number;
  /** How many consumers are worked on at once (default DEFAULT_CONCURRENCY). */
  concurrency?: number;
  /** How long stop() waits for the work under way (default DEFAULT_STOP_TIMEOUT_MS). */
  stopTimeoutMs?: number;
  /** Copies of `<provider>_bound` kept when the helper creates it (default 1). */
  replicas?: number;
  /** Where lines go (default: stderr, with sd-daemon prefixes under systemd). */
  log?: ProviderLog;
  /**
   * How a refusal names the login the helper was given, to follow "for …" (a program passes
   * `whichLogin`'s text: `this login (public key U…): is --nkey the seed of provider.<provider>?`);
   * default `this login: is it provider.<provider>'s?`.
   */
  login?: string;
};

/** The options with every default filled in. */
export type ResolvedOptions = Required<Omit<ProviderOptions, 'recheckMs'>> & Pick<ProviderOptions, 'recheckMs'>;

/** Fills in the defaults; throws a TypeError naming the option that is not usable and what to give. */
export function resolveOptions(opts: ProviderOptions): ResolvedOptions {
  if (!isName(opts.provider))
    throw new TypeError(`runProvider: provider "${opts.provider}" is not a module name (a-z, 0-9 and -, at most 63): give the provider module's name`);
  const problem = segmentNameProblem(opts.provision);
  if (problem) throw new TypeError(`runProvider: provision ${problem}: give the provision as the module's \${consumers:<provision>} names it`);
  const resolved: ResolvedOptions = {
    ...opts,
    retry: opts.retry ?? DEFAULT_RETRY,
    callTimeoutMs: opts.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS,
    concurrency: opts.concurrency ?? DEFAULT_CONCURRENCY,
    stopTimeoutMs: opts.stopTimeoutMs ?? DEFAULT_STOP_TIMEOUT_MS,
    replicas: opts.replicas ?? 1,
    log: opts.log ?? createLogger({ prefix: underSystemd() }),
    login: opts.login ?? `this login: is it provider.${opts.provider}'s?`,
  };
  for (const name of ['callTimeoutMs', 'concurrency', 'stopTimeoutMs'] as const) {
    if (!Number.isInteger(resolved[name]) || resolved[name] < 1)
      throw new TypeError(`runProvider: ${name} ${resolved[name]} is not a whole number of at least 1: give one, or leave it out for the default`);
  }
  return resolved;
}
