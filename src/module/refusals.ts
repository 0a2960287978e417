// What no value can ever fill (DESIGN §8): an unknown kind, a name too long for a key, a secret the
// plan does not name, a secret in an item — listed at once, each with its template and line. The
// fill and `lint` (module/judge.ts) both judge placeholders here, so they refuse with the same words.
import { tokenTooLong } from '../shared/contract/limits.ts';
import { didYouMean } from '../shared/base/nearest.ts';
import type { Placeholder } from '../shared/contract/placeholders.ts';
import { KNOWN_KINDS } from '../shared/contract/registry.ts';
import type { Plan } from '../shared/contract/plan.ts';
import type { Template } from './templates.ts';

/** At most this many refused placeholders are listed in one reason; the rest are counted. */
export const MAX_LISTED_REFUSALS = 20;

/** A template as a module uses it: its archive name, and whether it fills an item (kept in a bucket). */
export type UsedTemplate = { name: string; template: Template; item: boolean };

/** One placeholder no value can fill: where it is, and why (the placeholder shown first). */
export type Refusal = { template: string; line: number; kind: string; name: string; reason: string };

/**
 * Every placeholder of the module's templates that no value can ever fill, so a module author
 * fixes them in one go; undefined when there is none.
 */
export function refusals(plan: Plan, used: readonly UsedTemplate[]): string | undefined {
  const lines = refusalList(used, new Set(plan.secrets.map((s) => s.name))).map((r) => `template ${r.template} line ${r.line}: ${r.reason}`);
  if (lines.length === 0) return undefined;
  const more = lines.length > MAX_LISTED_REFUSALS ? `; and ${lines.length - MAX_LISTED_REFUSALS} more` : '';
  return lines.slice(0, MAX_LISTED_REFUSALS).join('; ') + more;
}

/**
 * Every refused placeholder of `used`, each once per template and line. `secretNames`: the plan's
 * secrets; absent (no plan at hand), a secret's name is not judged.
 */
export function refusalList(used: readonly UsedTemplate[], secretNames?: ReadonlySet<string>): Refusal[] {
  const list: Refusal[] = [];
  const seen = new Set<string>();
  for (const { name, template, item } of used) {
    for (const p of template.placeholders) {
      const why = refusal(p, secretNames, item);
      const key = `${name}\n${p.line}\n${p.kind}:${p.name}`;
      if (why === undefined || seen.has(key)) continue;
      seen.add(key);
      list.push({ template: name, line: p.line, kind: p.kind, name: p.name, reason: why });
    }
  }
  return list;
}

/** Why a plan's file or item cannot be filled: its template is not in the archive. */
export function missingTemplate(template: string, target: string): string {
  return `template ${template} (for ${target}) is not in the archive`;
}

/** What a plan's item is called in a missing template's reason. */
export function itemTarget(collection: string): string {
  return `an item of ${collection}`;
}

/** Why a plan fails that gives one collection two items. */
export function twoItems(collection: string): string {
  return `two items for collection "${collection}": a module contributes one item to a collection`;
}

/** A placeholder as a reason shows it: `${kind:name}`, a hostile length cut. */
export function shownPlaceholder(p: Pick<Placeholder, 'kind' | 'name'>): string {
  return `\${${short(p.kind)}:${short(p.name)}}`;
}

function refusal(p: Placeholder, secretNames: ReadonlySet<string> | undefined, item: boolean): string | undefined {
  const shown = shownPlaceholder(p);
  const tooLong = tokenTooLong('its kind', p.kind) ?? tokenTooLong('its name', p.name);
  if (tooLong) return `${shown}: ${tooLong}`;
  if (!KNOWN_KINDS.includes(p.kind)) return `${shown}: ${unknownKind(p.kind)} (write ${'$' + shown} to keep it as text)`;
  if (p.kind === 'secret' && item) return `${shown}: an item names a secret, but an item is kept in a bucket and no secret is`;
  if (p.kind === 'consumers' && item) return `${shown}: an item names consumers' credentials, but an item is kept in a bucket and no credential is`;
  if (p.kind === 'secret' && secretNames && !secretNames.has(p.name)) return `${shown}: secret "${p.name}" is not named by the plan`;
  return undefined;
}

/** What is said of a kind no client fills: the nearest known kind first, when one is near (`confg` → `config`). */
function unknownKind(kind: string): string {
  const hint = didYouMean(kind, KNOWN_KINDS);
  return `unknown kind "${kind}"${hint === undefined ? '' : `: ${hint}`}`;
}

/** A kind or name as a reason shows it: a hostile length is cut, saying so. */
function short(text: string): string {
  return text.length <= 80 ? text : `${text.slice(0, 60)}…(${Buffer.byteLength(text)} bytes)`;
}
