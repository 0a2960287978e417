// An unclosed placeholder as `lint` (and so `publish`) says it (issue 20 item 13): the fill keeps
// `${kind:name` without its `}` as text, byte for byte (DESIGN §8), so only lint can point at it.
import type { UnclosedAt } from '../shared/contract/placeholders.ts';

/** One problem of an unclosed placeholder, in the shape of lint's problems (judge.ts). */
export type UnclosedProblem = { severity: 'error' | 'warning'; template: string; line: number; message: string };

/**
 * A `${kind:name` without its `}` is never what a template means (a text meant as text is written
 * `$${`): an error in a template that is used, so a module's CI stops where `publish` would; a
 * warning in a template nothing uses, since it fails nothing there.
 */
export function unclosedProblems(template: string, open: readonly UnclosedAt[], used: boolean): UnclosedProblem[] {
  return open.map((at) => {
    const shown = at.text.length <= 80 ? at.text : `${at.text.slice(0, 60)}…`;
    const message = `${shown} is not closed: the fill would write it as text (close it with }, or write ${'$' + shown} to keep it as text)`;
    return used
      ? { severity: 'error', template, line: at.line, message }
      : { severity: 'warning', template, line: at.line, message: `${message} (the plan does not use this template)` };
  });
}
