// Fills one module's templates from the values at hand (DESIGN §7 points 2, 4, 5 and §8, §9), file by file.
import { contentDigest, type FillContent, type FillFile } from '../shared/fill-protocol.ts';
import type { Parsed } from '../shared/result.ts';
import { tokenTooLong } from '../shared/limits.ts';
import type { Placeholder } from '../shared/placeholders.ts';
import { KNOWN_KINDS } from '../shared/registry.ts';
import type { Plan } from '../shared/schemas.ts';
import type { Lookup, Wanted } from './sources/source.ts';
import { renderTemplate, type Template, type TemplateSet } from './templates.ts';

export { prepareTemplates, type Template, type TemplateSet } from './templates.ts';

/** Finds the value of a placeholder for the plan's module (the value sources, handed in). */
export type LookupFn = (plan: Plan, wanted: Wanted) => Lookup;

/** One value the module waits for and the files that wait on it. */
export type Waiting = { kind: string; name: string; files: string[] };
/** One placeholder the module names, the files naming it, and whether its value is there. */
export type NeedEntry = { kind: string; name: string; files: string[]; met: boolean };

/** The outcome of filling a module. */
export type FillOutcome = { files: FillFile[]; waiting: Waiting[]; needs: NeedEntry[] };

/** At most this many refused placeholders are listed in one reason; the rest are counted. */
export const MAX_LISTED_REFUSALS = 20;

const CHANGE_WEIGHT = { none: 0, reload: 1, restart: 2 } as const;

/** Fills every file of `plan` whose values are all there; a failure anywhere fails the module with the reason. */
export function fillModule(plan: Plan, templates: TemplateSet, lookup: LookupFn): Parsed<FillOutcome> {
  const used: { path: string; name: string; template: Template; decl: Plan['files'][number] }[] = [];
  for (const file of plan.files) {
    const template = templates.get(file.template);
    if (!template) return { ok: false, reason: `template ${file.template} (for ${file.path}) is not in the archive` };
    used.push({ path: file.path, name: file.template, template, decl: file });
  }
  const refused = refusals(plan, used);
  if (refused) return { ok: false, reason: refused };

  const needs = new Map<string, NeedEntry>();
  const waiting = new Map<string, Waiting>();
  const files: FillFile[] = [];
  for (const { path, name, template, decl } of used) {
    const values: string[] = [];
    let waits = false;
    for (const [i, p] of template.placeholders.entries()) {
      const found: Lookup = p.kind === 'secret' ? { state: 'value', text: '' } : lookup(plan, p);
      if (found.state === 'failed') return { ok: false, reason: `template ${name} line ${p.line}: \${${p.kind}:${p.name}}: ${found.reason}` };
      const need = note(needs, `${p.kind}:${p.name}`, () => ({ kind: p.kind, name: p.name, files: [], met: true }), path);
      if (found.state === 'waiting') {
        need.met = false;
        note(waiting, `${p.kind}:${p.name}`, () => ({ kind: p.kind, name: p.name, files: [] }), path);
        waits = true;
      } else {
        values[i] = found.text;
      }
    }
    if (!waits) files.push(fillFile(path, renderTemplate(template, (i) => values[i]!), decl));
  }

  const change = strongestChange(plan);
  for (const secret of plan.secrets) {
    if (secret.path === undefined) continue;
    // A secret's own file is the one secret part: the engine fills it, the client never sees it.
    note(needs, `secret:${secret.name}`, () => ({ kind: 'secret', name: secret.name, files: [], met: true }), secret.path);
    files.push(fillFile(secret.path, [{ secret: secret.name }], { mode: 'owned', change, fileMode: '0600' }));
  }
  return { ok: true, value: { files, waiting: [...waiting.values()], needs: [...needs.values()] } };
}

/** Every value placeholder (not secrets) of the templates the plan's files use, each once. */
export function placeholdersOf(plan: Plan, templates: TemplateSet): Wanted[] {
  const seen = new Map<string, Wanted>();
  for (const file of plan.files) {
    for (const p of templates.get(file.template)?.placeholders ?? []) {
      if (p.kind !== 'secret' && !seen.has(`${p.kind}:${p.name}`)) seen.set(`${p.kind}:${p.name}`, { kind: p.kind, name: p.name });
    }
  }
  return [...seen.values()];
}

function note<T extends { files: string[] }>(map: Map<string, T>, key: string, make: () => T, path: string): T {
  const entry = map.get(key) ?? map.set(key, make()).get(key)!;
  if (!entry.files.includes(path)) entry.files.push(path);
  return entry;
}

/**
 * Every placeholder of the module's templates that no value can ever fill — an unknown kind, a
 * name too long for a key, a secret the plan does not name — listed at once, each with its
 * template and line, so a module author fixes them in one go. Undefined when there is none.
 */
function refusals(plan: Plan, used: { name: string; template: Template }[]): string | undefined {
  const secretNames = new Set(plan.secrets.map((s) => s.name));
  const lines: string[] = [];
  const seen = new Set<string>();
  for (const { name, template } of used) {
    for (const p of template.placeholders) {
      const why = refusal(p, secretNames);
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

function refusal(p: Placeholder, secretNames: Set<string>): string | undefined {
  const shown = `\${${short(p.kind)}:${short(p.name)}}`;
  const tooLong = tokenTooLong('its kind', p.kind) ?? tokenTooLong('its name', p.name);
  if (tooLong) return `${shown}: ${tooLong}`;
  if (!KNOWN_KINDS.includes(p.kind)) return `${shown}: unknown kind "${p.kind}" (write ${'$' + shown} to keep it as text)`;
  if (p.kind === 'secret' && !secretNames.has(p.name)) return `${shown}: secret "${p.name}" is not named by the plan`;
  return undefined;
}

/** A kind or name as a reason shows it: a hostile length is cut, saying so. */
function short(text: string): string {
  return text.length <= 80 ? text : `${text.slice(0, 60)}…(${Buffer.byteLength(text)} bytes)`;
}

function fillFile(path: string, content: FillContent, decl: Pick<FillFile, 'mode' | 'change'> & Partial<FillFile>): FillFile {
  const file: FillFile = { path, content, digest: contentDigest(content), mode: decl.mode, change: decl.change };
  if (decl.owner !== undefined) file.owner = decl.owner;
  if (decl.fileMode !== undefined) file.fileMode = decl.fileMode;
  if (decl.comment !== undefined) file.comment = decl.comment;
  return file;
}

/** The strongest way any of the module's files is taken: a secret's file changes the program as they do. */
function strongestChange(plan: Plan): FillFile['change'] {
  let best: FillFile['change'] = 'none';
  for (const f of plan.files) if (CHANGE_WEIGHT[f.change] > CHANGE_WEIGHT[best]) best = f.change;
  return best;
}
