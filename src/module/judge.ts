// `lint` (issue 14): a module's templates judged as a node's client would judge them, without a bus
// or an engine — the same decoding, scanner and refusals (module/templates.ts, module/refusals.ts), and with a
// plan the checks its sources make of the plan alone (placement, collections, bindings, provides).
import { scanPlaceholders, type Placeholder, type UnclosedAt } from '../shared/contract/placeholders.ts';
import { unclosedProblems } from './unclosed.ts';
import { isPlacementKind } from '../shared/contract/registry.ts';
import type { Plan } from '../shared/contract/plan.ts';
import { itemTarget, missingTemplate, refusalList, shownPlaceholder, twoItems, type UsedTemplate } from './refusals.ts';
import { COLLECTION_KINDS, declaredCollection, placementValue, resolveBound } from './plan-names.ts';
import { prepareTemplates, type Template } from './templates.ts';
import { firstInvalidUtf8 } from './utf8.ts';

/**
 * How much a problem weighs: an error fails the module — or is a mistake `publish` refuses though
 * the fill would write it as text (an unclosed `${kind:name`) — and only errors fail `lint`.
 */
export const SEVERITIES = ['error', 'warning', 'info'] as const;
/** How much a problem weighs. */
export type Severity = (typeof SEVERITIES)[number];

/** One thing `lint` says: where (template and line, when it has one) and what. */
export type LintProblem = { severity: Severity; template?: string; line?: number; message: string };

/** One template as `lint` read it: its placeholders, and how the plan uses it (without a plan: `file`). */
export type LintedTemplate = {
  name: string;
  use: 'file' | 'item' | 'unused';
  placeholders: { line: number; column: number; kind: string; name: string }[];
};

/** What `lint` found. */
export type LintReport = { templates: LintedTemplate[]; problems: LintProblem[] };

/** What the plan alone says of a placeholder the sources would not fill: it would wait, or it fails the module. */
type PlanAnswer = { state: 'waiting' } | { state: 'failed'; reason: string };

const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const COLLECTION_KIND_LIST: readonly string[] = COLLECTION_KINDS;

/** How the plan was made. */
export type LintPlanKind = {
  /** False for a composition made into a plan (composition-plan.ts): no assignment yet, so no placement to judge. */
  placed?: boolean;
};

/** Judges an archive's files (name → bytes) as templates, against `plan` when there is one. */
export function lintTemplates(files: ReadonlyMap<string, Uint8Array>, plan?: Plan, { placed = true }: LintPlanKind = {}): LintReport {
  const problems: LintProblem[] = [];
  const compiled = new Map<string, Template>();
  const unclosed = new Map<string, UnclosedAt[]>();
  const templates: LintedTemplate[] = [];
  for (const name of [...files.keys()].sort()) {
    const bytes = files.get(name)!;
    // The client prepares a whole archive at once: any template it refuses fails every module using it.
    const prepared = prepareTemplates(new Map([[name, bytes]]));
    if (!prepared.ok) {
      const offset = firstInvalidUtf8(bytes);
      problems.push({
        severity: 'error',
        template: name,
        message: offset === undefined ? prepared.reason : `${prepared.reason} (first invalid byte at offset ${offset})`,
      });
      continue;
    }
    const template = prepared.value.get(name)!;
    compiled.set(name, template);
    const open: UnclosedAt[] = [];
    scanPlaceholders(UTF8.decode(bytes), {
      escape: (at) => problems.push({ severity: 'info', template: name, line: at.line, message: '$${ is an escape: it comes out as the text ${' }),
      unclosed: (at) => open.push(at),
    });
    if (open.length > 0) unclosed.set(name, open);
    templates.push({
      name,
      use: useOf(name, plan),
      placeholders: template.placeholders.map(({ line, column, kind, name: n }) => ({ line, column, kind, name: n })),
    });
  }
  const used = plan ? usedByPlan(plan, compiled, problems) : [...compiled].map(([name, template]) => ({ name, template, item: false }));
  for (const [name, open] of unclosed) problems.push(...unclosedProblems(name, open, useOf(name, plan) !== 'unused'));
  const secretNames = plan ? new Set(plan.secrets.map((s) => s.name)) : undefined;
  for (const r of refusalList(used, secretNames)) problems.push({ severity: 'error', template: r.template, line: r.line, message: r.reason });
  if (plan) {
    const unused = [...compiled].filter(([name]) => useOf(name, plan) === 'unused').map(([name, template]) => ({ name, template, item: false }));
    for (const { name } of unused) problems.push({ severity: 'info', template: name, message: 'not named by the plan: no file or item uses it' });
    for (const r of refusalList(unused, secretNames))
      problems.push({ severity: 'warning', template: r.template, line: r.line, message: `${r.reason} (fails nothing while the plan does not use it)` });
    problems.push(...planLookups(plan, used, placed));
  } else {
    for (const { name, template } of used) {
      for (const p of template.placeholders) {
        if (p.kind === 'secret')
          problems.push({
            severity: 'info',
            template: name,
            line: p.line,
            message: `${shownPlaceholder(p)}: the plan must name secret "${p.name}" (give --plan to check)`,
          });
      }
    }
  }
  return { templates, problems: sortProblems(problems) };
}

/** How the plan uses a template: a file's, an item's (an item wins: it is checked the stricter way), or none. */
function useOf(name: string, plan: Plan | undefined): LintedTemplate['use'] {
  if (!plan) return 'file';
  if (plan.items.some((i) => i.template === name)) return 'item';
  return plan.files.some((f) => f.template === name) ? 'file' : 'unused';
}

/** The plan's files and items as the fill takes them; a missing template or a collection given two items is an error. */
function usedByPlan(plan: Plan, compiled: ReadonlyMap<string, Template>, problems: LintProblem[]): UsedTemplate[] {
  const used: UsedTemplate[] = [];
  const targets = [
    ...plan.files.map((f) => ({ template: f.template, target: f.path, item: false })),
    ...plan.items.map((i) => ({ template: i.template, target: itemTarget(i.collection), item: true })),
  ];
  for (const { template: name, target, item } of targets) {
    const template = compiled.get(name);
    if (template) used.push({ name, template, item });
    // A template that did not prepare has its own error already.
    else if (!problemOf(problems, name)) problems.push({ severity: 'error', template: name, message: missingTemplate(name, target) });
  }
  const seen = new Set<string>();
  for (const { collection } of plan.items) {
    if (seen.has(collection)) problems.push({ severity: 'error', message: twoItems(collection) });
    seen.add(collection);
  }
  return used;
}

function problemOf(problems: readonly LintProblem[], template: string): boolean {
  return problems.some((p) => p.template === template && p.severity === 'error');
}

/**
 * What the plan alone says of each placeholder, as the sources would: a placement the plan lacks
 * waits (a warning: the assignment may gain it), a collection it does not declare, a binding it
 * does not have or a provision it does not provide fail the module.
 */
function planLookups(plan: Plan, used: readonly UsedTemplate[], placed: boolean): LintProblem[] {
  const problems: LintProblem[] = [];
  const seen = new Set<string>();
  for (const { name, template } of used) {
    for (const p of template.placeholders) {
      const key = `${name}\n${p.line}\n${p.kind}:${p.name}`;
      if (seen.has(key)) continue;
      seen.add(key);
      // A composition's placement is each node's assignment: nothing to judge before it is assigned.
      const found = !placed && isPlacementKind(p.kind) ? undefined : staticLookup(plan, p);
      const shown = shownPlaceholder(p);
      if (found?.state === 'failed') problems.push({ severity: 'error', template: name, line: p.line, message: `${shown}: ${found.reason}` });
      if (found?.state === 'waiting')
        problems.push({
          severity: 'warning',
          template: name,
          line: p.line,
          message: `${shown}: the plan's placement has no ${p.kind} "${p.name}": the file would wait for it`,
        });
    }
  }
  return problems;
}

/** A source's answer from the plan alone, when it waits or fails; undefined where only the bus can say (config, bound values, credentials). */
function staticLookup(plan: Plan, wanted: Placeholder): PlanAnswer | undefined {
  if (isPlacementKind(wanted.kind)) return placementValue(plan, wanted.kind, wanted.name) === undefined ? { state: 'waiting' } : undefined;
  if (COLLECTION_KIND_LIST.includes(wanted.kind)) {
    const declared = declaredCollection(plan, wanted);
    return 'reason' in declared ? { state: 'failed', reason: declared.reason } : undefined;
  }
  if (wanted.kind === 'bound') {
    const ref = resolveBound(plan, wanted.name);
    return 'reason' in ref ? { state: 'failed', reason: ref.reason } : undefined;
  }
  // As the consumers source says it (sources/consumers.ts).
  if (wanted.kind === 'consumers' && !plan.provides.some((p) => p.provision === wanted.name))
    return { state: 'failed', reason: `the plan does not provide "${wanted.name}"` };
  return undefined;
}

/** Errors first, then warnings, then notes; within each by template and line. */
function sortProblems(problems: LintProblem[]): LintProblem[] {
  const weight = (s: Severity) => SEVERITIES.indexOf(s);
  return problems
    .map((p, i) => ({ p, i }))
    .sort(
      (a, b) =>
        weight(a.p.severity) - weight(b.p.severity) || compareText(a.p.template ?? '', b.p.template ?? '') || (a.p.line ?? 0) - (b.p.line ?? 0) || a.i - b.i,
    )
    .map(({ p }) => p);
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
