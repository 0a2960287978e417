// `node dist/client.js lint ARCHIVE|DIR [--plan FILE] [--json]`: reads the templates (and the plan or composition),
// judges them (module/judge.ts) and prints every placeholder, then the problems; exit 1 on an error.
import { createHash } from 'node:crypto';
import { safeJson, safeText } from '../../../shared/cli/safe-text.ts';
import { lintTemplates, type LintProblem, type LintReport } from '../../../module/judge.ts';
import { readLintInput, type LintInput } from '../../../module/input.ts';
import type { LintOptions } from '../../options.ts';
import { readLintTarget, type LintTarget } from '../../../module/target.ts';

/** The JSON `lint --json` prints. */
export type LintJson = LintReport & {
  input: string;
  kind: LintInput['kind'];
  plan?: string;
  /** What `--plan` was read as. */
  against?: LintTarget['kind'];
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
  let target: LintTarget | undefined;
  if (opts.plan !== undefined) {
    const read = await readLintTarget(opts.plan);
    if ('usage' in read) return (err(read.usage), 2);
    if (read.ok) target = read.value;
    else problems.push({ severity: 'error', message: `${read.kind} ${opts.plan}: ${read.reason}` });
  }
  for (const message of target?.problems ?? []) problems.push({ severity: 'error', message: `composition ${opts.plan}: ${message}` });
  const { refused, bytes, skipped } = input.value;
  if (refused) problems.push({ severity: 'error', message: `${input.value.kind} ${opts.input}: ${refused}` });
  for (const s of skipped) problems.push({ severity: 'warning', message: `${s} (left out)` });
  if (target?.digest !== undefined && bytes) {
    const digest = 'sha256:' + createHash('sha256').update(bytes).digest('hex');
    if (digest !== target.digest)
      problems.push({
        severity: 'warning',
        message: `the ${target.kind}'s archive digest ${target.digest} is not this archive's (${digest}): a node would refuse it`,
      });
  }
  const report = lintTemplates(input.value.files, target?.plan, { placed: target?.placed ?? true });
  const all = [...problems, ...report.problems];
  const errors = all.filter((p) => p.severity === 'error').length;
  const warnings = all.filter((p) => p.severity === 'warning').length;
  if (opts.json) {
    const json: LintJson = {
      input: opts.input,
      kind: input.value.kind,
      ...(opts.plan !== undefined ? { plan: opts.plan } : {}),
      ...(target !== undefined ? { against: target.kind } : {}),
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
