// Fills one module's templates from the values at hand (DESIGN §7 points 2, 4, 5 and §8), file by file.
import { contentDigest, type FillFile } from '../shared/fill-protocol.ts';
import { parsePlaceholders, renderPlaceholders, type Placeholder } from '../shared/placeholders.ts';
import { isPlacementKind, KNOWN_KINDS } from '../shared/registry.ts';
import type { Parsed } from '../shared/keys.ts';
import type { Plan } from '../shared/schemas.ts';

/** A template decoded and parsed once per archive. */
export type Template = { text: string; placeholders: Placeholder[] };
/** A module's templates by archive name. */
export type TemplateSet = Map<string, Template>;

/** What a lookup knows of one value: its text, that it is not there yet, or that it fails the module. */
export type Lookup = { state: 'value'; text: string } | { state: 'waiting' } | { state: 'failed'; reason: string };
/** Finds the value of `${kind:name}` for the module being filled (config, collections, bound…). */
export type Resolver = (kind: string, name: string) => Lookup;

/** One value the module waits for and the files that wait on it. */
export type Waiting = { kind: string; name: string; files: string[] };
/** One placeholder the module names, the files naming it, and whether its value is there. */
export type NeedEntry = { kind: string; name: string; files: string[]; met: boolean };

/** The outcome of filling a module. */
export type FillOutcome = { files: FillFile[]; waiting: Waiting[]; needs: NeedEntry[] };

const CHANGE_WEIGHT = { none: 0, reload: 1, restart: 2 } as const;
// Stands for a secret placeholder while a template renders: no UTF-8 text holds a lone surrogate.
const SECRET_MARK = '\uD800';
const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** Decodes and parses every template of an archive; a template that is not UTF-8 fails with its name. */
export function prepareTemplates(files: Map<string, Uint8Array>): Parsed<TemplateSet> {
  const set: TemplateSet = new Map();
  for (const [name, bytes] of files) {
    let text: string;
    try {
      text = UTF8.decode(bytes);
    } catch {
      return { ok: false, reason: `template ${name} is not UTF-8` };
    }
    set.set(name, { text, placeholders: parsePlaceholders(text) });
  }
  return { ok: true, value: set };
}

/** Fills every file of `plan` whose values are all there; a failure anywhere fails the module with the reason. */
export function fillModule(plan: Plan, templates: TemplateSet, resolve: Resolver): Parsed<FillOutcome> {
  const secretNames = new Set(plan.secrets.map((s) => s.name));
  const needs = new Map<string, NeedEntry>();
  const waiting = new Map<string, Waiting>();
  const files: FillFile[] = [];
  const note = (map: Map<string, { files: string[] }>, key: string, make: () => { files: string[] }, path: string) => {
    const entry = map.get(key) ?? map.set(key, make()).get(key)!;
    if (!entry.files.includes(path)) entry.files.push(path);
  };

  for (const file of plan.files) {
    const template = templates.get(file.template);
    if (!template) return { ok: false, reason: `template ${file.template} (for ${file.path}) is not in the archive` };
    const texts: string[] = [];
    let waits = false;
    for (const p of template.placeholders) {
      const where = `template ${file.template} line ${p.line}`;
      const found = lookup(p, plan, secretNames, resolve);
      if (found.state === 'failed') return { ok: false, reason: `${where}: \${${p.kind}:${p.name}}: ${found.reason}` };
      const key = `${p.kind}:${p.name}`;
      note(needs, key, () => ({ kind: p.kind, name: p.name, files: [], met: true }), file.path);
      if (found.state === 'waiting') {
        needs.get(key)!.met = false;
        note(waiting, key, () => ({ kind: p.kind, name: p.name, files: [] }), file.path);
        waits = true;
      } else {
        texts.push(found.text);
      }
    }
    if (waits) continue;
    files.push(fillFile(file.path, renderForEngine(template, texts), file));
  }

  const change = strongestChange(plan);
  for (const secret of plan.secrets) {
    if (secret.path === undefined) continue;
    // A secret's own file holds only the placeholder: the engine fills it, the client never sees it.
    note(needs, `secret:${secret.name}`, () => ({ kind: 'secret', name: secret.name, files: [], met: true }), secret.path);
    files.push(fillFile(secret.path, `\${secret:${secret.name}}`, { mode: 'owned', change, fileMode: '0600' }));
  }
  return { ok: true, value: { files, waiting: [...waiting.values()], needs: [...needs.values()] } };
}

function lookup(p: Placeholder, plan: Plan, secretNames: Set<string>, resolve: Resolver): Lookup {
  if (!KNOWN_KINDS.includes(p.kind)) return { state: 'failed', reason: `unknown kind "${p.kind}"` };
  if (p.kind === 'secret') {
    if (!secretNames.has(p.name)) return { state: 'failed', reason: `secret "${p.name}" is not named by the plan` };
    return { state: 'value', text: SECRET_MARK + p.name + SECRET_MARK };
  }
  if (isPlacementKind(p.kind)) {
    const value = plan.placement[p.kind]?.[p.name];
    return value === undefined ? { state: 'waiting' } : { state: 'value', text: String(value) };
  }
  return resolve(p.kind, p.name);
}

/**
 * Renders a template for the engine, which fills every `${secret:…}` it is handed and reads
 * `$${secret:` as a literal: so a literal `${secret:` of the template or of a value is escaped,
 * and only the placeholders the plan names reach the engine as secrets.
 */
function renderForEngine(template: Template, texts: string[]): string {
  // The renderer asks for the placeholders in the order parsing found them.
  let i = 0;
  const rendered = renderPlaceholders(template.text, () => texts[i++]!);
  const marks = new RegExp(`${SECRET_MARK}([^${SECRET_MARK}]*)${SECRET_MARK}`, 'g');
  // A function replacer: in a replacement string `$$` would mean one `$`.
  return rendered.replaceAll('${secret:', () => '$${secret:').replace(marks, (_m, name: string) => `\${secret:${name}}`);
}

function fillFile(path: string, content: string, decl: Pick<FillFile, 'mode' | 'change'> & Partial<FillFile>): FillFile {
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
