// What the composer says on `provisioner_health` (DESIGN §4): a bad input once per distinct value,
// and a module held for more than HELD_PASSES_BEFORE_HEALTH passes in a row, with its build.
import { parseNodeModuleKey } from '../../shared/keys.ts';
import type { Logger } from '../../shared/log.ts';
import type { Health } from '../../shared/schemas.ts';
import type { KnownComposition } from './inputs.ts';
import { errorText } from '../../shared/errors.ts';

/** A module held for more passes in a row than this is said on `provisioner_health`. */
export const HELD_PASSES_BEFORE_HEALTH = 2;

/** Says health lines through `publish`; a bus that refuses one is logged, never allowed to stop a pass. */
export class ComposerHealth {
  /** What was said of each input (`assignments <key>`, `modules <key>`): the digest of the value it was said of. */
  readonly #said = new Map<string, string>();
  readonly #heldPasses = new Map<string, number>();

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
   * Counts one more pass for each module held now (its composition as known, or none) and resets
   * the others; a module held for more than HELD_PASSES_BEFORE_HEALTH passes in a row is said.
   */
  countHeld(heldNow: ReadonlyMap<string, KnownComposition | undefined>): void {
    for (const module of this.#heldPasses.keys()) if (!heldNow.has(module)) this.#heldPasses.delete(module);
    for (const [module, c] of heldNow) {
      const passes = (this.#heldPasses.get(module) ?? 0) + 1;
      this.#heldPasses.set(module, passes);
      if (passes <= HELD_PASSES_BEFORE_HEALTH) continue;
      const reason = heldReason(c);
      const build = c?.parsed.ok ? c.parsed.value.build : '';
      this.log.warn(`module ${module} held for ${passes} passes: ${reason} (build ${build || 'unknown'})`);
      this.say({ module, build, reason: `held: ${reason}`, passes });
    }
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

/** Why a module is held, as health lines and `status` say it: its composition (as known, or none) missing, refused or unpublished. */
export function heldReason(c: KnownComposition | undefined): string {
  return !c ? 'composition missing' : !c.parsed.ok ? `composition does not validate: ${c.parsed.reason}` : 'composition not published';
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
