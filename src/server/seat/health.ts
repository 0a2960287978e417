// What the composer says on `provisioner_health` and in its log (DESIGN §4): a bad input once per
// distinct value, and a module held for more than HELD_PASSES_BEFORE_HEALTH passes in a row, with
// its build, once when the hold begins and again when it changes; never once per pass.
import { parseNodeModuleKey } from '../../shared/contract/keys.ts';
import type { Logger } from '../../shared/cli/log.ts';
import type { Health } from '../../shared/contract/verb.ts';
import type { KnownComposition } from './inputs.ts';
import { errorText } from '../../shared/base/errors.ts';

/** A module held for more passes in a row than this is said on `provisioner_health`. */
export const HELD_PASSES_BEFORE_HEALTH = 2;

/** Says health lines through `publish`; a bus that refuses one is logged, never allowed to stop a pass. */
export class ComposerHealth {
  /** What was said of each input (`assignments <key>`, `modules <key>`): the digest of the value it was said of. */
  readonly #said = new Map<string, string>();
  readonly #heldPasses = new Map<string, number>();
  /** What was said of each module held past the threshold: its reason and build, so a pass that changes neither says nothing. */
  readonly #heldSaid = new Map<string, string>();

  constructor(
    private readonly publish: (line: Health) => void,
    private readonly log: Logger,
  ) {}

  /** Says a bad input once per distinct value (`digest`): passes re-run on every change, the line need not. */
  sayOnce(id: string, digest: string, line: Health): void {
    if (this.#said.get(id) === digest) return;
    this.#said.set(id, digest);
    this.log.error(line.reason);
    this.say(line);
  }

  /** Forgets what was said of an input that is good again or gone. */
  forget(id: string): void {
    this.#said.delete(id);
  }

  /**
   * Counts one more pass for each module held now (its composition missing or unpublished; one out
   * of shape is failed, said when it is read) and resets the others. A module held for more than
   * HELD_PASSES_BEFORE_HEALTH passes in a row is said once, and again only when its reason or build
   * changes; its end is logged. Passes go on without a line: the verb's `health` keeps the count.
   */
  countHeld(heldNow: ReadonlyMap<string, KnownComposition | undefined>): void {
    for (const module of this.#heldPasses.keys()) if (!heldNow.has(module) || isFailed(heldNow.get(module))) this.#end(module);
    for (const [module, c] of heldNow) {
      if (isFailed(c)) continue;
      const passes = (this.#heldPasses.get(module) ?? 0) + 1;
      this.#heldPasses.set(module, passes);
      if (passes <= HELD_PASSES_BEFORE_HEALTH) continue;
      const reason = heldReason(c);
      const build = c?.parsed.ok ? c.parsed.value.build : '';
      const said = `${reason}\n${build}`;
      if (this.#heldSaid.get(module) === said) continue;
      this.#heldSaid.set(module, said);
      this.log.warn(`module ${module} held for ${passes} passes: ${reason} (build ${build || 'unknown'})`);
      this.say({ module, build, reason: `held: ${reason}`, passes });
    }
  }

  /** Forgets a module no longer held, logging the end of a hold that was said. */
  #end(module: string): void {
    const passes = this.#heldPasses.get(module);
    this.#heldPasses.delete(module);
    if (!this.#heldSaid.delete(module)) return;
    this.log.notice(`module ${module} no longer held, after ${passes} passes`);
  }

  /** Publishes a health line; a bus that refuses it is logged, never allowed to stop the pass. */
  say(line: Health): void {
    try {
      this.publish(line);
    } catch (err) {
      this.log.error(`provisioner_health: could not say "${line.reason}": ${errorText(err, { name: true })}`);
    }
  }
}

/** Why a module's plans are not composed from its composition (as known, or none), as health lines and the verb's `health` say it: missing or unpublished (held), or refused (failed). */
export function heldReason(c: KnownComposition | undefined): string {
  return !c ? 'composition missing' : !c.parsed.ok ? `composition does not validate: ${c.parsed.reason}` : 'composition not published';
}

/** Whether a composition is known and out of shape: its plans fail (DESIGN §6), they are not held. */
function isFailed(c: KnownComposition | undefined): boolean {
  return c !== undefined && !c.parsed.ok;
}

/** The module and node a health line of an assignment key names: the key's own parts when it has them. */
export function subjectOf(key: string): { module: string; node?: string } {
  const id = parseNodeModuleKey(key);
  return id.ok ? { module: id.value.module, node: id.value.node } : { module: clip(key) };
}

/** A key as a line quotes it: a hostile key of a kilobyte need not be repeated whole. */
export function clip(key: string): string {
  return key.length <= 300 ? key : `${key.slice(0, 300)}…`;
}
