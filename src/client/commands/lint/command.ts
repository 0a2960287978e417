// `node dist/client.js lint ARCHIVE|DIR [--plan FILE] [--json]`: reads the templates (and the plan),
// judges them (client/commands/lint/judge.ts) and prints every placeholder, then the problems; exit 1 on an error.
import { createHash } from 'node:crypto';
import { MAX_PLAN_BYTES } from '../../../shared/limits.ts';
import { safeJson, safeText } from '../../../shared/safe-text.ts';
import { decodeJson, PlanSchema, type Plan } from '../../../shared/schemas.ts';
import { readFileWithin } from '../../archive/fetch.ts';
import { lintTemplates, type LintProblem, type LintReport } from './judge.ts';
import { readLintInput, type LintInput } from './input.ts';
import type { LintOptions } from '../../options.ts';
import { errorText } from '../../../shared/errors.ts';

/** The JSON `lint --json` prints. */
export type LintJson = LintReport & {
  input: string;
  kind: LintInput['kind'];
  plan?: string;
  errors: number;
  warnings: number;
  ok: boolean;
};

/** Runs `lint`; `stdout` takes its lines, `stderr` a usage error's. Returns the exit code: 0, 1 on an error, 2 when the input cannot be read. */
export async function runLint(opts: LintOptions, stdout: (line: string) => void, stderr: (line: string) => void): Promise<number> {
  // Entry names, template names, placeholder text and plan values are the archive's: shown as safe text (DESIGN §3).
  const out = (line: string) => stdout(safeText(line));
  const err = (line: string) => stderr(safeText(line));
  const input = await readLintInput(opts.input);
  if (!input.ok) return (err(input.reason), 2);
  const problems: LintProblem[] = [];
  let plan: Plan | undefined;
  if (opts.plan !== undefined) {
    const read = await readPlan(opts.plan);
    if ('usage' in read) return (err(read.usage), 2);
    if (read.ok) plan = read.value;
    else problems.push({ severity: 'error', message: `plan ${opts.plan}: ${read.reason}` });
  }
  const { refused, bytes, skipped } = input.value;
  if (refused) problems.push({ severity: 'error', message: `${input.value.kind} ${opts.input}: ${refused}` });
  for (const s of skipped) problems.push({ severity: 'warning', message: `${s} (left out)` });
  if (plan && bytes) {
    const digest = 'sha256:' + createHash('sha256').update(bytes).digest('hex');
    if (digest !== plan.archive.digest)
      problems.push({
        severity: 'warning',
        message: `the plan's archive digest ${plan.archive.digest} is not this archive's (${digest}): a node would refuse it`,
      });
  }
  const report = lintTemplates(input.value.files, plan);
  const all = [...problems, ...report.problems];
  const errors = all.filter((p) => p.severity === 'error').length;
  const warnings = all.filter((p) => p.severity === 'warning').length;
  if (opts.json) {
    const json: LintJson = {
      input: opts.input,
      kind: input.value.kind,
      ...(opts.plan !== undefined ? { plan: opts.plan } : {}),
      templates: report.templates,
      problems: all,
      errors,
      warnings,
      ok: errors === 0,
    };
    out(safeJson(json));
  } else {
    for (const t of report.templates) for (const p of t.placeholders) out(`${t.name}:${p.line} \${${p.kind}:${p.name}}`);
    for (const p of all) out(`${p.severity}: ${where(p)}${p.message}`);
    const count = report.templates.reduce((n, t) => n + t.placeholders.length, 0);
    out(
      `${report.templates.length} template(s), ${count} placeholder(s): ${errors} error(s), ${warnings} warning(s), ${all.length - errors - warnings} note(s)`,
    );
  }
  return errors > 0 ? 1 : 0;
}

function where(p: LintProblem): string {
  if (p.template === undefined) return '';
  return p.line === undefined ? `${p.template}: ` : `${p.template}:${p.line}: `;
}

/** The plan, or why it does not validate; `usage` when the file cannot be read at all. */
async function readPlan(path: string): Promise<{ ok: true; value: Plan } | { ok: false; reason: string } | { usage: string }> {
  let bytes: Uint8Array;
  try {
    bytes = await readFileWithin(path, MAX_PLAN_BYTES);
  } catch (e) {
    return { usage: `--plan: cannot read ${path}: ${errorText(e, { cause: true })}` };
  }
  return decodeJson(PlanSchema, bytes);
}
