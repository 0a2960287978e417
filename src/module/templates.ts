// Templates (DESIGN §7.2, §8, §9) as a module's archive holds them: each decoded, scanned and compiled
// once, its runs of text between secret placeholders ready to render. The fill renders and caches them
// (client/fill/templates.ts); `lint` and `publish` judge them (module/judge.ts).
import type { Parsed } from '../shared/base/result.ts';
import { MAX_TEMPLATE_BYTES } from '../shared/contract/limits.ts';
import { CompiledRun, scanPlaceholders, type Placeholder } from '../shared/contract/placeholders.ts';

/**
 * A template compiled once: its placeholders, and the runs of text between its secret
 * placeholders, each a compiled renderer of the other placeholders.
 */
export type Template = {
  /** Every placeholder, in order. */
  placeholders: Placeholder[];
  /** The text before the first secret, between secrets, and after the last. */
  runs: CompiledRun[];
  /** The secret names between the runs: `secrets[i]` comes after `runs[i]`. */
  secrets: string[];
};
/** A module's templates by archive name. */
export type TemplateSet = Map<string, Template>;

// Every byte is kept, a leading byte-order mark too (TextDecoder drops it unless told not to).
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Decodes, scans and compiles every template of an archive; one that is too large or not UTF-8 fails with its name. */
export function prepareTemplates(files: Map<string, Uint8Array>): Parsed<TemplateSet> {
  const set: TemplateSet = new Map();
  for (const [name, bytes] of files) {
    if (bytes.length > MAX_TEMPLATE_BYTES) {
      return { ok: false, reason: `template ${name} is ${bytes.length} bytes, past the limit of ${MAX_TEMPLATE_BYTES} bytes` };
    }
    let text: string;
    try {
      text = UTF8.decode(bytes);
    } catch {
      return { ok: false, reason: `template ${name} is not UTF-8` };
    }
    set.set(name, compileTemplate(text));
  }
  return { ok: true, value: set };
}

/** Compiles one template: a run of text for each stretch between `${secret:…}` placeholders. */
export function compileTemplate(text: string): Template {
  const { literals, placeholders } = scanPlaceholders(text);
  const runs: CompiledRun[] = [];
  const secrets: string[] = [];
  let first = 0;
  placeholders.forEach((p, i) => {
    if (p.kind !== 'secret') return;
    runs.push(new CompiledRun(literals.slice(first, i + 1), first));
    secrets.push(p.name);
    first = i + 1;
  });
  runs.push(new CompiledRun(literals.slice(first), first));
  return { placeholders, runs, secrets };
}
