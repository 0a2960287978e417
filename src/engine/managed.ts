// A `managed` file: only the module's block between `<comment> BEGIN <module>` and `<comment> END <module>` is the engine's.
import { NAME_PATTERN } from '../shared/contract/keys.ts';
import type { Parsed } from '../shared/base/result.ts';

/** The BEGIN and END lines of a module's block. */
export function blockMarkers(comment: string, module: string): { begin: string; end: string } {
  return { begin: `${comment} BEGIN ${module}`, end: `${comment} END ${module}` };
}

/**
 * Puts `content` as the module's block into `existing` (undefined when the file is absent):
 * replaces the first block in place, or appends one; every byte outside the block is kept.
 * A BEGIN line without its END line is refused rather than guessed at, and so is content holding
 * a marker line (markerInContent): the block's bounds are the engine's, never a value's.
 */
export function spliceBlock(existing: string | undefined, module: string, comment: string, content: string): Parsed<string> {
  const { begin, end } = blockMarkers(comment, module);
  const marker = markerInContent(content, comment);
  if (marker !== undefined) {
    const whose = marker === begin || marker === end ? 'its own block marker' : "another block's marker";
    return { ok: false, reason: `content holds the line "${marker}", ${whose}: a managed block's content may not hold a BEGIN or END line` };
  }
  const body = content === '' || content.endsWith('\n') ? content : content + '\n';
  const block = `${begin}\n${body}${end}\n`;
  if (existing === undefined || existing === '') return { ok: true, value: block };
  const found = findBlock(existing, begin, end);
  if (!found.ok) return found;
  if (found.value === undefined) {
    const separator = existing.endsWith('\n') ? '' : '\n';
    return { ok: true, value: existing + separator + block };
  }
  const { start, stop } = found.value;
  return { ok: true, value: existing.slice(0, start) + block + existing.slice(stop) };
}

/**
 * Cuts the module's block out of `existing`: from its BEGIN line to just past its END line, every
 * other byte kept as it is. Undefined when the file holds no such block; a BEGIN line without its
 * END line is refused, as spliceBlock refuses it.
 */
export function cutBlock(existing: string, module: string, comment: string): Parsed<string | undefined> {
  const { begin, end } = blockMarkers(comment, module);
  const found = findBlock(existing, begin, end);
  if (!found.ok || found.value === undefined) return found as Parsed<undefined>;
  return { ok: true, value: existing.slice(0, found.value.start) + existing.slice(found.value.stop) };
}

/**
 * The module's block in `text` as it stands, from its BEGIN line to just past its END line:
 * what the engine watches of a `managed` file (every other byte is someone else's). Undefined when
 * the file holds no whole block of that module.
 */
export function blockOf(text: string, module: string, comment: string): string | undefined {
  const { begin, end } = blockMarkers(comment, module);
  const found = findBlock(text, begin, end);
  return found.ok && found.value ? text.slice(found.value.start, found.value.stop) : undefined;
}

/**
 * The first line of `content` (its trailing CR aside, as findBlock reads lines) that a splice
 * would take for a block's BEGIN or END line: `<comment> BEGIN <name>` or `<comment> END <name>`
 * for any module name. Another module's marker is refused too: in a file several modules share,
 * it would move that module's block bounds into this one's.
 */
export function markerInContent(content: string, comment: string): string | undefined {
  const begin = `${comment} BEGIN `;
  const endLead = `${comment} END `;
  for (let start = 0; start < content.length;) {
    const newline = content.indexOf('\n', start);
    const stop = newline < 0 ? content.length : newline;
    // Only a line that starts like a marker is cut out; a content of many short lines allocates nothing.
    if (content.startsWith(begin, start) || content.startsWith(endLead, start)) {
      const raw = content.slice(start, stop);
      const text = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
      const lead = text.startsWith(begin) ? begin : endLead;
      if (NAME_PATTERN.test(text.slice(lead.length))) return text;
    }
    start = stop + 1;
  }
  return undefined;
}

/** Where the block lies: from the start of its BEGIN line to just past its END line's newline. */
function findBlock(text: string, begin: string, end: string): Parsed<{ start: number; stop: number } | undefined> {
  const lines = splitLines(text);
  const first = lines.findIndex((l) => l.text === begin);
  if (first < 0) return { ok: true, value: undefined };
  const last = lines.findIndex((l, i) => i > first && l.text === end);
  if (last < 0) return { ok: false, reason: `"${begin}" has no "${end}" line after it` };
  return { ok: true, value: { start: lines[first]!.start, stop: lines[last]!.stop } };
}

/** Each line's text (without its line break or a trailing CR) and its byte span including the break. */
function splitLines(text: string): { text: string; start: number; stop: number }[] {
  const lines: { text: string; start: number; stop: number }[] = [];
  let start = 0;
  while (start < text.length) {
    const newline = text.indexOf('\n', start);
    const stop = newline < 0 ? text.length : newline + 1;
    const raw = text.slice(start, newline < 0 ? text.length : newline);
    lines.push({ text: raw.endsWith('\r') ? raw.slice(0, -1) : raw, start, stop });
    start = stop;
  }
  return lines;
}
