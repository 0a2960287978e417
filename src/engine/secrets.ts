// Filling a content's secret parts (DESIGN §9) from a local directory: name → vault name (from the request) → file under --secrets.
import { readFile } from 'node:fs/promises';
import { isAbsolute, relative, resolve } from 'node:path';
import { secretNamesOf, type FillContent } from '../shared/fill-protocol.ts';
import type { Parsed } from '../shared/result.ts';

/** Reads a secret by its vault name; a missing one is a reason, never an exception. */
export type SecretSource = (vaultName: string) => Promise<Parsed<string>>;

/**
 * A source reading `<dir>/<vault name>` with one trailing newline trimmed; without a dir every
 * secret is missing. `onRead` is told each file read, so the engine can watch it for a rotation.
 */
export function directorySecrets(dir: string | undefined, onRead: (file: string) => void = () => {}): SecretSource {
  return async (vaultName) => {
    if (dir === undefined) return { ok: false, reason: `secret "${vaultName}" asked but the engine has no --secrets directory` };
    const file = resolve(dir, vaultName);
    const rel = relative(resolve(dir), file);
    if (rel === '' || rel.startsWith('..') || isAbsolute(rel)) {
      return { ok: false, reason: `vault name "${vaultName}" leaves the secrets directory` };
    }
    onRead(file);
    try {
      const value = await readFile(file, 'utf8');
      return { ok: true, value: value.replace(/\r?\n$/, '') };
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      return { ok: false, reason: `secret "${vaultName}" ${code === 'ENOENT' ? 'is missing' : `is unreadable (${code})`}` };
    }
  };
}

/**
 * The bytes to write: string parts as they are and each secret part as the secret's value. Text is
 * never scanned, so a string content is returned untouched and no value can become a secret. A
 * part naming a secret the request does not map, or one the source does not hold, is the reason.
 */
export async function fillSecrets(content: FillContent, names: Readonly<Record<string, string>>, source: SecretSource): Promise<Parsed<string>> {
  if (typeof content === 'string') return { ok: true, value: content };
  const values = new Map<string, string>();
  for (const name of secretNamesOf(content)) {
    const vaultName = Object.hasOwn(names, name) ? names[name] : undefined;
    if (vaultName === undefined) return { ok: false, reason: `secret part "${name}" is not named in the request's secrets` };
    const value = await source(vaultName);
    if (!value.ok) return value;
    values.set(name, value.value);
  }
  return { ok: true, value: content.map((part) => (typeof part === 'string' ? part : values.get(part.secret)!)).join('') };
}
