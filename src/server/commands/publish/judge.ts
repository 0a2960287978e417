// Whether a module may be published (DESIGN §13): its templates linted against its composition with
// the scanner and refusals the client fills and lints with (module/judge.ts), and what would fail every plan
// composed from it, so a bad build is refused before anything is written.
import { planOfComposition } from '../../../module/composition-plan.ts';
import { lintTemplates, type LintProblem } from '../../../module/judge.ts';
import type { ModuleArchive } from './archive.ts';
import type { CheckedComposition } from './composition-file.ts';

/** What publishing would meet: errors refuse it, warnings are said beside it. */
export type Verdict = {
  /** Each refuses the publish. */
  errors: string[];
  /** Each is said, and refuses nothing. */
  warnings: string[];
};

/**
 * Judges the archive's templates against the composition; without one (it did not validate, and
 * its own problems are said already) each template alone, so every problem is said in one go.
 */
export function judgePublish(archive: ModuleArchive, composition: CheckedComposition | undefined): Verdict {
  const errors: string[] = [];
  const warnings: string[] = archive.skipped.map((s) => `${s} (left out)`);
  let report;
  if (composition) {
    const { plan, problems } = planOfComposition(composition.parsed);
    errors.push(...problems);
    report = lintTemplates(archive.files, plan, { placed: false });
  } else {
    report = lintTemplates(archive.files);
  }
  for (const p of report.problems) {
    if (p.severity === 'error') errors.push(shown(p));
    if (p.severity === 'warning') warnings.push(shown(p));
  }
  return { errors, warnings };
}

/** A lint problem as one line: `template:line: message`. */
function shown(p: LintProblem): string {
  if (p.template === undefined) return p.message;
  return p.line === undefined ? `${p.template}: ${p.message}` : `${p.template}:${p.line}: ${p.message}`;
}
