// Templates as the fill uses them (DESIGN §7.2, §8, §9): each archive's templates prepared once per
// digest (module/templates.ts), and rendered into the content the engine is handed, secrets as parts of its structure.
import type { FillContent } from '../../shared/contract/fill-protocol.ts';
import type { Parsed } from '../../shared/base/result.ts';
import type { ValueOf } from '../../shared/contract/placeholders.ts';
import { prepareTemplates, type Template, type TemplateSet } from '../../module/templates.ts';

/**
 * Renders a template for the engine: text when it names no secret, else literal strings and
 * `{secret}` parts. `valueOf` gives each non-secret placeholder's value by its index; a value is
 * data and lands in a string part whatever its characters.
 */
export function renderTemplate(template: Template, valueOf: ValueOf): FillContent {
  if (template.secrets.length === 0) return template.runs[0]!.render(valueOf);
  const parts: Exclude<FillContent, string> = [];
  template.runs.forEach((run, i) => {
    const text = run.render(valueOf);
    if (text !== '') parts.push(text);
    const secret = template.secrets[i];
    if (secret !== undefined) parts.push({ secret });
  });
  return parts;
}

/** Loads an archive's files by ref and digest (the archive module, handed in). */
export type LoadFiles = (ref: string, digest: string) => Promise<Parsed<Map<string, Uint8Array>>>;

/** Templates by digest; a failed load is not kept, so the next fill tries again. */
export class TemplateCache {
  readonly #byDigest = new Map<string, { ref: string; loading: Promise<Parsed<TemplateSet>> }>();

  constructor(private readonly load: LoadFiles) {}

  /**
   * The templates of the archive `digest`, loaded once however many modules ask together. A load by
   * another ref that fails is not this ref's failure: it is loaded again by its own ref, so what a
   * module reports names the archive its plan names (two refs may hold the same bytes).
   */
  get(ref: string, digest: string): Promise<Parsed<TemplateSet>> {
    const known = this.#byDigest.get(digest);
    if (known?.ref === ref) return known.loading;
    if (known) return known.loading.then((shared) => (shared.ok ? shared : this.#start(ref, digest)));
    return this.#start(ref, digest);
  }

  /** Drops every archive no plan names any more. */
  retain(digests: Set<string>): void {
    for (const digest of this.#byDigest.keys()) if (!digests.has(digest)) this.#byDigest.delete(digest);
  }

  #start(ref: string, digest: string): Promise<Parsed<TemplateSet>> {
    const loading = this.load(ref, digest).then((files) => (files.ok ? prepareTemplates(files.value) : files));
    const entry = { ref, loading };
    this.#byDigest.set(digest, entry);
    void loading.then((result) => {
      if (!result.ok && this.#byDigest.get(digest) === entry) this.#byDigest.delete(digest);
    });
    return loading;
  }
}
