// A report always goes out (DESIGN §3): one too large for the bus is cut to fit, saying what was cut.
import type { Report } from '../../shared/contract/report.ts';

/** The longest text kept of one field of a cut report. */
export const MAX_CUT_FIELD_CHARS = 1024;

/**
 * Returns the report as it is when its JSON fits in `maxBytes`, else a copy with long texts
 * shortened, then trailing waits dropped, then trailing files' `from` (DESIGN §14), then trailing
 * files, until it fits; `reason` says what was cut.
 */
export function fitReport(report: Report, maxBytes: number): Report {
  if (sizeOf(report) <= maxBytes) return report;
  const cuts: string[] = [];
  let shortened = 0;
  const cut = (text: string): string => {
    if (text.length <= MAX_CUT_FIELD_CHARS) return text;
    shortened++;
    return `${text.slice(0, MAX_CUT_FIELD_CHARS)}…(${Buffer.byteLength(text)} bytes)`;
  };
  const fitted: Report = {
    ...report,
    build: cut(report.build),
    files: report.files.map((f) => ({ ...f, path: cut(f.path), digest: cut(f.digest), ...(f.reason !== undefined ? { reason: cut(f.reason) } : {}) })),
    waiting: report.waiting.map((w) => ({ kind: cut(w.kind), name: cut(w.name), files: w.files.map(cut) })),
    ...(report.reason !== undefined ? { reason: cut(report.reason) } : {}),
  };
  if (shortened > 0) cuts.push(`${shortened} text(s) shortened to ${MAX_CUT_FIELD_CHARS} characters`);
  const note = () => ` [report cut to fit ${maxBytes} bytes: ${cuts.join(', ')}]`;
  const withNote = (r: Report): Report => ({ ...r, reason: (r.reason ?? '') + note() });
  const files = fitted.files.length;
  const waiting = fitted.waiting.length;
  // The next file whose `from` may go, from the end; files before it keep theirs.
  let withFrom = fitted.files.length - 1;
  let fromCut = 0;
  // Drop from the end, waits first, then inputs, then files: a wait left out is still in the needs,
  // and a file listed without its inputs still says what the engine did with it.
  while (sizeOf(withNote(fitted)) > maxBytes && (fitted.waiting.length > 0 || fitted.files.length > 0)) {
    while (withFrom >= 0 && fitted.files[withFrom]!.from === undefined) withFrom--;
    if (fitted.waiting.length > 0) fitted.waiting.pop();
    else if (withFrom >= 0) {
      const { from: _cut, ...file } = fitted.files[withFrom]!;
      fitted.files[withFrom] = file;
      fromCut++;
    } else fitted.files.pop();
    cuts.length = shortened > 0 ? 1 : 0;
    if (fitted.waiting.length < waiting) cuts.push(`${fitted.waiting.length} of ${waiting} waits listed`);
    if (fromCut > 0) cuts.push(`the inputs (from) of ${fromCut} file(s) left out`);
    if (fitted.files.length < files) cuts.push(`${fitted.files.length} of ${files} files listed`);
  }
  return withNote(fitted);
}

function sizeOf(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value));
}
