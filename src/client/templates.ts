// Each archive's templates, decoded and parsed once per digest and shared by the modules using it.
import type { Parsed } from '../shared/keys.ts';
import { prepareTemplates, type TemplateSet } from './fill.ts';

/** Loads an archive's files by ref and digest (the archive module, handed in). */
export type LoadFiles = (ref: string, digest: string) => Promise<Parsed<Map<string, Uint8Array>>>;

/** Templates by digest; a failed load is not kept, so the next fill tries again. */
export class TemplateCache {
  readonly #byDigest = new Map<string, Promise<Parsed<TemplateSet>>>();

  constructor(private readonly load: LoadFiles) {}

  /** The templates of the archive `digest`, loaded once however many modules ask together. */
  get(ref: string, digest: string): Promise<Parsed<TemplateSet>> {
    const known = this.#byDigest.get(digest);
    if (known) return known;
    const loading = this.load(ref, digest).then((files) => (files.ok ? prepareTemplates(files.value) : files));
    this.#byDigest.set(digest, loading);
    void loading.then((result) => {
      if (!result.ok && this.#byDigest.get(digest) === loading) this.#byDigest.delete(digest);
    });
    return loading;
  }

  /** Drops every archive no plan names any more. */
  retain(digests: Set<string>): void {
    for (const digest of this.#byDigest.keys()) if (!digests.has(digest)) this.#byDigest.delete(digest);
  }
}
