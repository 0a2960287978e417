// Fills one module's templates from the values at hand (DESIGN §7 points 2, 4, 5 and §8, §9), file by file.
import { contentDigest, type FillContent, type FillFile } from '../../shared/contract/fill-protocol.ts';
import type { Parsed } from '../../shared/base/result.ts';
import type { Plan } from '../../shared/contract/plan.ts';
import type { FillLookup, Lookup, ValueFrom } from '../sources/source.ts';
import type { From } from '../../shared/contract/report.ts';
import { archiveInput, secretFrom } from './from.ts';
import { FillMemo, type FilledItem } from './memo.ts';
import { itemTarget, missingTemplate, refusals, twoItems, type UsedTemplate } from '../../module/refusals.ts';
import { renderTemplate } from './templates.ts';
import type { TemplateSet } from '../../module/templates.ts';

export { prepareTemplates, type Template, type TemplateSet } from '../../module/templates.ts';
export { FillMemo, type FilledItem } from './memo.ts';

/** One value the module waits for and the files that wait on it. */
export type Waiting = { kind: string; name: string; files: string[] };
/** One placeholder the module names, the files naming it, and whether its value is there. */
export type NeedEntry = { kind: string; name: string; files: string[]; met: boolean };

/**
 * The outcome of filling a module: the files whose values are all there, its items (only when
 * nothing of the module waits), what waits, what it needs, and notes on values a source left out.
 * `marks`: for each file naming a provision's credential, its providers' marks of having set it
 * (sources/credentials.ts) — a file whose mark changed is handed again though its content is the same.
 * `from`: for each file, the inputs its content was filled from (DESIGN §14, fill/from.ts).
 */
export type FillOutcome = {
  files: FillFile[];
  items: FilledItem[];
  waiting: Waiting[];
  needs: NeedEntry[];
  notes: string[];
  marks: Map<string, string>;
  from: Map<string, From>;
  /** A value it waits for is not read yet (sources/source.ts `unread`): its report is held until it is. */
  unread: boolean;
};

/**
 * A fill's outcome (or why the module fails) and the dependency keys of every value it read, each
 * once: a failed fill's too, so a change of the value that failed it fills the module again.
 */
export type Filled = Parsed<FillOutcome> & { dependencies: string[] };

const CHANGE_WEIGHT = { none: 0, reload: 1, restart: 2 } as const;

// A module's own secret is no value of the client's: the engine fills it, and no change of the client's refills it.
const SECRET_PART: Lookup = { state: 'value', text: '' };

/** What one template fills: a file at `label` (its path), or an item (`label` is `item <collection>`). */
type Target = UsedTemplate & { label: string; decl: object; file?: Plan['files'][number]; collection?: string };

/** The label an item's placeholders carry in needs and waits, where a file's carry its path. */
export function itemLabel(collection: string): string {
  return `item ${collection}`;
}

/**
 * Fills every file of `plan` whose values are all there, and its items, each value looked up once in
 * `sources`; a failure anywhere fails the module with the reason.
 */
export function fillModule(plan: Plan, templates: TemplateSet, sources: FillLookup, memo = new FillMemo()): Filled {
  const dependencies = new Set<string>();
  const targets = memo.prepared(plan, templates, () => checkedTargets(plan, templates));
  if (!targets.ok) return { ...targets, dependencies: [] };

  const needs = new Map<string, NeedEntry>();
  const waiting = new Map<string, Waiting>();
  const notes: string[] = [];
  const files: FillFile[] = [];
  const items: FilledItem[] = [];
  const marks = new Map<string, string>();
  const from = new Map<string, From>();
  const gathered = { unread: false };
  for (const target of targets.value) {
    const values: string[] = [];
    // The inputs each value was read from, in the order the template names them (DESIGN §14).
    const reads: ValueFrom[] = [];
    let waits = false;
    for (const [i, p] of target.template.placeholders.entries()) {
      let found: Lookup = SECRET_PART;
      if (p.kind === 'secret') reads.push(secretFrom(plan, p.name));
      // A provision's credential reads its provider's mark: the value rendered never holds it, but the memo sees it change.
      const read = p.kind === 'secret' ? sources.credentialMark?.(plan, p.name) : sources.lookup(plan, p);
      if (read) {
        dependencies.add(read.dependency);
        if (read.alsoRead !== undefined) dependencies.add(read.alsoRead);
        found = read;
      }
      if (found.state === 'failed')
        return { ok: false, reason: `template ${target.name} line ${p.line}: \${${p.kind}:${p.name}}: ${found.reason}`, dependencies: [...dependencies] };
      const need = note(needs, `${p.kind}:${p.name}`, () => ({ kind: p.kind, name: p.name, files: [], met: true }), target.label);
      if (found.state === 'waiting') {
        if (found.unread) gathered.unread = true;
        need.met = false;
        note(waiting, `${p.kind}:${p.name}`, () => ({ kind: p.kind, name: p.name, files: [] }), target.label);
        for (const n of found.notes ?? []) if (!notes.includes(n)) notes.push(n);
        waits = true;
      } else {
        values[i] = found.text;
        if (found.from) reads.push(found.from);
        for (const n of found.notes ?? []) if (!notes.includes(n)) notes.push(n);
      }
    }
    if (waits) continue;
    const { decl } = target;
    let out = memo.reuse(target.label, target.template, decl, values);
    if (!out) {
      const content = renderTemplate(target.template, (i) => values[i]!);
      // A file holding consumers' credentials is only ever handed 0600 (DESIGN §7 point 8).
      const holdsCredentials = target.template.placeholders.some((p) => p.kind === 'consumers');
      out = target.file
        ? fillFile(target.label, content, holdsCredentials ? { ...target.file, fileMode: '0600' } : target.file)
        : { collection: target.collection!, content: content as string };
      memo.keep(target.label, target.template, decl, values, out);
    }
    if ('path' in out) {
      files.push(out);
      from.set(out.path, memo.from(target.label, archiveInput(plan), reads));
      const mark = target.template.placeholders.flatMap((p, i) => (p.kind === 'secret' ? [values[i]] : [])).join(' ');
      if (mark.trim() !== '') marks.set(out.path, mark);
    } else items.push(out);
  }

  const into = { files, needs, waiting, marks, from, dependencies, notes, unread: gathered.unread };
  const failed = fillSecretFiles(plan, sources, memo, into);
  if (failed !== undefined) return { ok: false, reason: failed, dependencies: [...dependencies] };
  // An item is recorded only when nothing of the module waits (DESIGN §7 point 6).
  const complete = waiting.size === 0;
  return {
    ok: true,
    value: { files, items: complete ? items : [], waiting: [...waiting.values()], needs: [...needs.values()], notes, marks, from, unread: into.unread },
    dependencies: [...dependencies],
  };
}

/** What a module's fill gathers besides its templates' files: secrets' own files join in. */
type Gathered = {
  files: FillFile[];
  needs: Map<string, NeedEntry>;
  waiting: Map<string, Waiting>;
  marks: Map<string, string>;
  from: Map<string, From>;
  dependencies: Set<string>;
  notes: string[];
  unread: boolean;
};

/**
 * Adds each secret's own file (a secret with a `path`): the one secret part, which the engine fills
 * and the client never sees; a provision's credential waits for its provider's mark (sources/credentials.ts).
 * Says why the module fails, if it does.
 */
function fillSecretFiles(plan: Plan, sources: FillLookup, memo: FillMemo, into: Gathered): string | undefined {
  const change = strongestChange(plan);
  for (const secret of plan.secrets) {
    if (secret.path === undefined) continue;
    const mark = sources.credentialMark?.(plan, secret.name);
    if (mark) into.dependencies.add(mark.dependency);
    if (mark?.state === 'failed') return `secret ${secret.name} (${secret.path}): ${mark.reason}`;
    const need = note(into.needs, `secret:${secret.name}`, () => ({ kind: 'secret', name: secret.name, files: [], met: true }), secret.path);
    if (mark?.state === 'waiting') {
      if (mark.unread) into.unread = true;
      for (const n of mark.notes ?? []) if (!into.notes.includes(n)) into.notes.push(n);
      need.met = false;
      note(into.waiting, `secret:${secret.name}`, () => ({ kind: 'secret', name: secret.name, files: [] }), secret.path);
      continue;
    }
    into.files.push(fillFile(secret.path, [{ secret: secret.name }], { mode: 'owned', change, fileMode: '0600' }));
    if (mark?.state === 'value' && mark.text !== '') into.marks.set(secret.path, mark.text);
    // Its content is the secret alone, from no template: its vault name, and the provider's entry its mark was read from.
    const markFrom = mark?.state === 'value' ? mark.from : undefined;
    into.from.set(secret.path, memo.from(secret.path, undefined, markFrom ? [secretFrom(plan, secret.name), markFrom] : [secretFrom(plan, secret.name)]));
  }
  return undefined;
}

/** The plan's targets (targetsOf), or why the plan's templates cannot be filled at all (a refusal). */
function checkedTargets(plan: Plan, templates: TemplateSet): Parsed<Target[]> {
  const targets = targetsOf(plan, templates);
  if (!targets.ok) return targets;
  const refused = refusals(plan, targets.value);
  return refused ? { ok: false, reason: refused } : targets;
}

/** The templates the plan's files and items use, in plan order; a missing one or an item collection named twice fails. */
function targetsOf(plan: Plan, templates: TemplateSet): Parsed<Target[]> {
  const targets: Target[] = [];
  for (const file of plan.files) {
    const template = templates.get(file.template);
    if (!template) return { ok: false, reason: missingTemplate(file.template, file.path) };
    targets.push({ name: file.template, template, item: false, label: file.path, decl: file, file });
  }
  const collections = new Set<string>();
  for (const item of plan.items) {
    const template = templates.get(item.template);
    if (!template) return { ok: false, reason: missingTemplate(item.template, itemTarget(item.collection)) };
    if (collections.has(item.collection)) return { ok: false, reason: twoItems(item.collection) };
    collections.add(item.collection);
    targets.push({ name: item.template, template, item: true, label: itemLabel(item.collection), decl: item, collection: item.collection });
  }
  return { ok: true, value: targets };
}

function note<T extends { files: string[] }>(map: Map<string, T>, key: string, make: () => T, path: string): T {
  const entry = map.get(key) ?? map.set(key, make()).get(key)!;
  if (!entry.files.includes(path)) entry.files.push(path);
  return entry;
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
