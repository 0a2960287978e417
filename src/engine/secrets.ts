// Filling a content's secret parts (DESIGN §9) from a local directory: name → vault name (from the
// request) → file under --secrets. A vault name is used only when it is the request's module's own
// and every segment is in its grammar; the file must be a regular file under the directory once
// every link is resolved.
import { realpath } from 'node:fs/promises';
import { resolve } from 'node:path';
import { secretNamesOf, type FillContent } from '../shared/contract/fill-protocol.ts';
import { readRegularFileIfThere } from '../shared/base/regular-file.ts';
import type { Parsed } from '../shared/base/result.ts';
import { vaultOwnerProblem } from '../shared/contract/vault-names.ts';
import { isInside } from './paths.ts';

/** The largest secret file read: a key or a certificate chain is far smaller; a larger file is no secret of the vault's. */
export const MAX_SECRET_FILE_BYTES = 1024 * 1024;

/** Reads a secret by its vault name; a missing one is a reason, never an exception. */
export type SecretSource = (vaultName: string) => Promise<Parsed<string>>;

/**
 * A source reading `<dir>/<vault name>` with one trailing newline trimmed; without a dir every
 * secret is missing. A name whose file, links resolved, is not a regular file inside the
 * directory is refused. `onRead` is told each file read and its vault name, so the engine can watch it for a rotation.
 */
export function directorySecrets(dir: string | undefined, onRead: (file: string, vaultName: string) => void = () => {}): SecretSource {
  return async (vaultName) => {
    if (dir === undefined) return { ok: false, reason: `secret "${vaultName}" asked but the engine has no --secrets directory` };
    const file = resolve(dir, vaultName);
    if (!isInside(resolve(dir), file)) return { ok: false, reason: `vault name "${vaultName}" leaves the secrets directory` };
    onRead(file, vaultName);
    try {
      // A link inside the directory may lead anywhere: where it lands is what is checked and read.
      const real = await realpath(file);
      if (!isInside(await realpath(dir), real)) return { ok: false, reason: `secret "${vaultName}" is a link leading out of the secrets directory` };
      // Without following a last link swapped in since, and never waiting on a FIFO: synchronous, as the writer is.
      const read = readRegularFileIfThere(real, MAX_SECRET_FILE_BYTES, { noFollow: true, name: `secret "${vaultName}"` });
      if (read.state === 'absent') return { ok: false, reason: `secret "${vaultName}" is missing` };
      if (read.state === 'refused')
        return { ok: false, reason: read.code && read.code !== 'ELOOP' ? `secret "${vaultName}" is unreadable (${read.code})` : read.reason };
      return {
        ok: true,
        value: Buffer.from(read.bytes)
          .toString('utf8')
          .replace(/\r?\n$/, ''),
      };
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      return { ok: false, reason: `secret "${vaultName}" ${code === 'ENOENT' ? 'is missing' : `is unreadable (${code})`}` };
    }
  };
}

/**
 * The bytes to write: string parts as they are and each secret part as the secret's value. Text is
 * never scanned, so a string content is returned untouched and no value can become a secret. A
 * part naming a secret the request does not map, one whose vault name is not `module`'s own (or
 * has an empty, `.` or `..` segment), or one the source does not hold, is the reason.
 */
export async function fillSecrets(
  content: FillContent,
  names: Readonly<Record<string, string>>,
  source: SecretSource,
  module: string,
): Promise<Parsed<string>> {
  if (typeof content === 'string') return { ok: true, value: content };
  const values = new Map<string, string>();
  for (const name of secretNamesOf(content)) {
    const vaultName = Object.hasOwn(names, name) ? names[name] : undefined;
    if (vaultName === undefined) return { ok: false, reason: `secret part "${name}" is not named in the request's secrets` };
    const problem = vaultOwnerProblem(vaultName, { module });
    if (problem !== undefined) return { ok: false, reason: `secret "${name}": vault name ${JSON.stringify(vaultName.slice(0, 300))} ${problem}` };
    const value = await source(vaultName);
    if (!value.ok) return value;
    values.set(name, value.value);
  }
  return { ok: true, value: content.map((part) => (typeof part === 'string' ? part : values.get(part.secret)!)).join('') };
}
