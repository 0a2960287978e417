// What the rollout director's parts share (DESIGN §12): its memory of every module's rollout, what
// it reads of the composer, and its ways to act: store and say a step, judge a module soon.
import type { Composition } from '../../../shared/contract/composition.ts';
import type { Health } from '../../../shared/contract/verb.ts';
import type { Logger } from '../../../shared/cli/log.ts';
import type { Timer } from '../../../shared/base/timer.ts';
import type { Live } from './live.ts';
import type { StateWriter } from './store.ts';

/** What the director reads of the composer, and the pass it asks over a module's keys (the seat routes it). */
export type RolloutHost = {
  /** The keys with a good assignment of `module`. */
  keysOf(module: string): Iterable<string>;
  /** Whether `key` has a stored plan. */
  hasStoredPlan(key: string): boolean;
  /** Whether `key` has a good assignment. */
  isAssigned(key: string): boolean;
  /** Why the seat cannot compose `key`'s plan of `build` (the reason its health entry says), when it cannot. */
  composeFailure(key: string, build: string): string | undefined;
  /** Composes the keys of `module` again at the next pass: every one, or those of `nodes`. */
  recompose(module: string, nodes?: Iterable<string>): void;
};

/** The director's memory and ways, handed to the parts that start, judge, answer and show rollouts. */
export type RolloutContext = {
  /** Each module's rollout, as this seat follows it. */
  readonly lives: Map<string, Live>;
  /** The composition each module's nodes are on while no rollout holds them back. */
  readonly settled: Map<string, Composition>;
  readonly writer: StateWriter;
  readonly log: Logger;
  /** Says a line on `provisioner_health`. */
  say(line: Health): void;
  /** The clock, in ms. */
  now(): number;
  /** The timer of the `wait` deadlines and of the stored counts. */
  readonly timer: Timer;
  /** The composer the director reads, once the seat attached it. */
  host(): RolloutHost | undefined;
  /** The highest revision of a report seen. */
  reportsSeen(): number;
  /** Whether the director was closed: nothing is judged any more. */
  closed(): boolean;
  /** Whether waves are judged yet: after the first pass, with the reports read. */
  judging(): boolean;
  /** Judges a module at the next turn, once however often asked meanwhile. */
  judgeSoon(module: string): void;
};

/** The nodes of a module's good assignments. */
export function* nodesOf(ctx: RolloutContext, module: string): Generator<string> {
  for (const key of ctx.host()?.keysOf(module) ?? []) yield key.slice(0, key.length - module.length - 1);
}
