// Filling `${secret:<name>}` from a local directory: name → vault name (from the request) → file under --secrets.
import { readFile } from 'node:fs/promises';
import { isAbsolute, relative, resolve } from 'node:path';
import type { Parsed } from '../shared/keys.ts';

// `$${secret:` is the escape for a literal `${secret:`, as `$${` is for any `${` in a template (DESIGN §8).
const SECRET = /\$(\$?)\{secret:([^}]*)\}/g;

/** Reads a secret by its vault name; a missing one is a reason, never an exception. */
export type SecretSource = (vaultName: string) => Promise<Parsed<string>>;

/** A source reading `<dir>/<vault name>` with one trailing newline trimmed; without a dir every secret is missing. */
export function directorySecrets(dir: string | undefined): SecretSource {
  return async (vaultName) => {
    if (dir === undefined) return { ok: false, reason: `secret "${vaultName}" asked but the engine has no --secrets directory` };
    const file = resolve(dir, vaultName);
    const rel = relative(resolve(dir), file);
    if (rel === '' || rel.startsWith('..') || isAbsolute(rel)) {
      return { ok: false, reason: `vault name "${vaultName}" leaves the secrets directory` };
    }
    try {
      const value = await readFile(file, 'utf8');
      return { ok: true, value: value.replace(/\r?\n$/, '') };
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      return { ok: false, reason: `secret "${vaultName}" ${code === 'ENOENT' ? 'is missing' : `is unreadable (${code})`}` };
    }
  };
}

/** Fills every `${secret:<name>}` of `content`; a name the request does not map, or a secret not held, is the reason. */
export async function fillSecrets(content: string, names: Readonly<Record<string, string>>, source: SecretSource): Promise<Parsed<string>> {
  const values = new Map<string, string>();
  for (const match of content.matchAll(SECRET)) {
    const [, escaped, name = ''] = match;
    if (escaped || values.has(name)) continue;
    const vaultName = Object.hasOwn(names, name) ? names[name] : undefined;
    if (vaultName === undefined) return { ok: false, reason: `\${secret:${name}} is not named in the request's secrets` };
    const value = await source(vaultName);
    if (!value.ok) return value;
    values.set(name, value.value);
  }
  return {
    ok: true,
    value: content.replace(SECRET, (whole, escaped: string, name: string) => (escaped ? whole.slice(1) : values.get(name)!)),
  };
}
