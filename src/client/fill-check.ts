// What no value can ever fill (DESIGN §8): an unknown kind, a name too long for a key, a secret the
// plan does not name, a secret in an item — listed at once, each with its template and line.
import { tokenTooLong } from '../shared/limits.ts';
import type { Placeholder } from '../shared/placeholders.ts';
import { KNOWN_KINDS } from '../shared/registry.ts';
import type { Plan } from '../shared/schemas.ts';
import type { Template } from './templates.ts';

/** At most this many refused placeholders are listed in one reason; the rest are counted. */
export const MAX_LISTED_REFUSALS = 20;

/** A template as a module uses it: its archive name, and whether it fills an item (kept in a bucket). */
export type UsedTemplate = { name: string; template: Template; item: boolean };

/**
 * Every placeholder of the module's templates that no value can ever fill, so a module author
 * fixes them in one go; undefined when there is none.
 */
export function refusals(plan: Plan, used: readonly UsedTemplate[]): string | undefined {
  const secretNames = new Set(plan.secrets.map((s) => s.name));
  const lines: string[] = [];
  const seen = new Set<string>();
  for (const { name, template, item } of used) {
    for (const p of template.placeholders) {
      const why = refusal(p, secretNames, item);
      const key = `${name}\n${p.line}\n${p.kind}:${p.name}`;
      if (why === undefined || seen.has(key)) continue;
      seen.add(key);
      lines.push(`template ${name} line ${p.line}: ${why}`);
    }
  }
  if (lines.length === 0) return undefined;
  const more = lines.length > MAX_LISTED_REFUSALS ? `; and ${lines.length - MAX_LISTED_REFUSALS} more` : '';
  return lines.slice(0, MAX_LISTED_REFUSALS).join('; ') + more;
}

function refusal(p: Placeholder, secretNames: Set<string>, item: boolean): string | undefined {
  const shown = `\${${short(p.kind)}:${short(p.name)}}`;
  const tooLong = tokenTooLong('its kind', p.kind) ?? tokenTooLong('its name', p.name);
  if (tooLong) return `${shown}: ${tooLong}`;
  if (!KNOWN_KINDS.includes(p.kind)) return `${shown}: unknown kind "${p.kind}" (write ${'$' + shown} to keep it as text)`;
  if (p.kind === 'secret' && item) return `${shown}: an item names a secret, but an item is kept in a bucket and no secret is`;
  if (p.kind === 'consumers' && item) return `${shown}: an item names consumers' credentials, but an item is kept in a bucket and no credential is`;
  if (p.kind === 'secret' && !secretNames.has(p.name)) return `${shown}: secret "${p.name}" is not named by the plan`;
  return undefined;
}

/** A kind or name as a reason shows it: a hostile length is cut, saying so. */
function short(text: string): string {
  return text.length <= 80 ? text : `${text.slice(0, 60)}…(${Buffer.byteLength(text)} bytes)`;
}
