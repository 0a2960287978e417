// Where a requested path really lands: inside the root after resolving `..` and links, or refused.
// Synchronous, as the writer is (writer.ts says why).
import { lstatSync, realpathSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve } from 'node:path';
import type { Parsed } from '../shared/base/result.ts';

/** Whether `path` lies strictly inside `dir` (both absolute and normalized). */
export function isInside(dir: string, path: string): boolean {
  const rel = relative(dir, path);
  return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel);
}

/**
 * Resolves a requested path (absolute, or relative to the root) through every link that exists
 * so far; the result is where the write lands, refused when that is not inside the real root.
 */
export async function resolveInsideRoot(realRoot: string, requested: string): Promise<Parsed<string>> {
  const target = realpathSoFar(resolve(realRoot, requested));
  if (!isInside(realRoot, target)) return { ok: false, reason: `outside the root ${realRoot}` };
  return { ok: true, value: target };
}

// realpath of the deepest existing ancestor, with the components that do not exist yet put back. A
// missing component is not an exception: a cold start asks for thousands of files that are not there yet.
function realpathSoFar(path: string): string {
  const missing: string[] = [];
  for (let at = path; ; at = dirname(at)) {
    try {
      if (lstatSync(at, { throwIfNoEntry: false }) !== undefined) return join(realpathSync.native(at), ...missing.reverse());
    } catch (err) {
      // A dangling link (lstat found it, realpath did not): the rest of the path is still to be created.
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    if (dirname(at) === at) return path;
    missing.push(basename(at));
  }
}
