// The --declare file: a JSON list of the paths the engine may write, read again on every request and watched for knocks.
import { readFileSync, unwatchFile, watchFile } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import * as v from 'valibot';
import type { Parsed } from '../shared/result.ts';
import { decodeJson } from '../shared/schemas.ts';

/** How often the declaration file is stat'ed for a change. */
export const DEFAULT_DECLARE_POLL_MS = 100;

const DeclarationSchema = v.array(v.pipe(v.string(), v.minLength(1, 'is empty')));

/** Which paths may be written: every path when there is no declaration file, else those it lists. */
export type Declaration = (path: string) => Parsed<true>;

/** Reads the declaration now; entries are resolved against the root as requested paths are. */
export async function readDeclaration(file: string | undefined, root: string): Promise<Declaration> {
  if (file === undefined) return () => ({ ok: true, value: true });
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const reason = `not declared (declaration ${file} unreadable: ${(err as NodeJS.ErrnoException).code})`;
    return () => ({ ok: false, reason });
  }
  const list = decodeJson(DeclarationSchema, text);
  if (!list.ok) {
    const reason = `not declared (declaration ${file} out of shape: ${list.reason})`;
    return () => ({ ok: false, reason });
  }
  const allowed = new Set(list.value.map((p) => resolve(root, p)));
  return (path) => (allowed.has(resolve(root, path)) ? { ok: true, value: true } : { ok: false, reason: 'not declared' });
}

/** Calls `onChange` whenever the file's content changes (created, rewritten, removed). Returns the stop. */
export function watchDeclaration(file: string, onChange: () => void, pollMs = DEFAULT_DECLARE_POLL_MS): () => void {
  let last = readOrEmpty(file);
  const onStat = () => {
    const now = readOrEmpty(file);
    if (now === last) return;
    last = now;
    onChange();
  };
  watchFile(file, { interval: pollMs, persistent: false }, onStat);
  return () => unwatchFile(file, onStat);
}

function readOrEmpty(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}
