// The import graph of src/, read from the source text as it is: what test/layout.test.ts checks the
// house's rules on. Every relative import counts: `import`/`export … from`, a bare `import '…'` and
// a dynamic `import('…')`, type imports too (a circle of types still ties two files together).
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { ROOT } from './bundle.ts';

/** The source tree the rules are about. */
export const SRC = join(ROOT, 'src');

/** One import of a file of src/ by another. */
export type Import = {
  /** The importing file (absolute). */
  from: string;
  /** The imported file (absolute). */
  to: string;
  /** Whether only types are imported (`import type`, or every name marked `type`): nothing of `to` runs. */
  typeOnly: boolean;
};

/** Every .ts file under `dir`. */
export function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : name.endsWith('.ts') ? [path] : [];
  });
}

// `import x from '…'`, `import { a, type B } from '…'`, `export * from '…'`, `import '…'` at a line's start.
const STATIC = /^(import|export)(\s+type)?\b(?:([^;'"]*?)\s+from\s*)?\s*'(\.[^']+)'/gms;
const DYNAMIC = /\bimport\(\s*'(\.[^']+)'\s*\)/g;

/** Whether a list of names (`{ type A, type B }`) brings in types alone. */
function typesAlone(names: string | undefined): boolean {
  const list = names?.trim().match(/^\{([^}]*)\}$/)?.[1];
  if (list === undefined) return false;
  const items = list
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  return items.length > 0 && items.every((s) => /^type\s/.test(s));
}

/** The relative imports of one file of src/. */
export function importsOf(file: string): Import[] {
  const text = readFileSync(file, 'utf8');
  const at = (spec: string) => resolve(dirname(file), spec);
  return [
    ...[...text.matchAll(STATIC)].map((m) => ({ from: file, to: at(m[4]!), typeOnly: m[2] !== undefined || typesAlone(m[3]) })),
    ...[...text.matchAll(DYNAMIC)].map((m) => ({ from: file, to: at(m[1]!), typeOnly: false })),
  ];
}

/** A file's path from the repository's root, as a failure names it. */
export function shown(file: string): string {
  return relative(ROOT, file);
}

/** The part of src/ a file belongs to: `server` for src/server.ts and src/server/…, `shared`, `sdk`… */
export function partOf(file: string): string {
  return relative(SRC, file).split('/')[0]!.replace(/\.ts$/, '');
}

/** The lines of a file as `wc -l` counts them. */
export function lineCount(file: string): number {
  return readFileSync(file, 'utf8').split('\n').length - 1;
}
