// The --declare file: the paths the engine may write (for any module, or module by module), read
// again on every request and watched for knocks and for files to remove.
import { statSync, unwatchFile, watchFile, type BigIntStats } from 'node:fs';
import { resolve } from 'node:path';
import * as v from 'valibot';
import { readRegularFile } from '../shared/base/regular-file.ts';
import type { Parsed } from '../shared/base/result.ts';
import { NAME_PATTERN } from '../shared/contract/keys.ts';
import { decodeJson } from '../shared/contract/decode.ts';

/** How often the declaration file is stat'ed for a change. */
export const DEFAULT_DECLARE_POLL_MS = 100;

/** The largest declaration read: far past a node's every path, short of filling the engine's memory (a /dev/zero given). */
export const MAX_DECLARATION_BYTES = 16 * 1024 * 1024;

const PathsSchema = v.array(v.pipe(v.string(), v.minLength(1, 'is empty')));
/**
 * A list of paths any module may write, or each module's own declaration: module → its paths. The
 * second form is a node's modules declaring their files one by one (DESIGN §9 "its declaration"), so
 * that removing one module's declaration removes its files and cuts its block from a shared file alone.
 */
const DeclarationSchema = v.union([PathsSchema, v.record(v.pipe(v.string(), v.regex(NAME_PATTERN, 'is not a module name')), PathsSchema)]);

/** Which paths may be written by which module: every path when there is no declaration file, else those it names. */
export type Declaration = (path: string, module: string) => Parsed<true>;

/** What a declaration file names: whether it names `path` (resolved against the root) for `module`. */
export type Declared = { names(path: string, module: string): boolean };

/** Reads the declaration now; entries are resolved against the root as requested paths are. */
export async function readDeclaration(file: string | undefined, root: string): Promise<Declaration> {
  if (file === undefined) return () => ({ ok: true, value: true });
  const declared = await readDeclared(file, root);
  if (!declared.ok) {
    const reason = `not declared (${declared.reason})`;
    return () => ({ ok: false, reason });
  }
  return (path, module) => (declared.value.names(path, module) ? { ok: true, value: true } : { ok: false, reason: 'not declared' });
}

/**
 * What the declaration file names, each path resolved against the root; the reason when it cannot
 * be read or is out of shape (which declares nothing, and removes nothing either).
 */
export async function readDeclared(file: string, root: string): Promise<Parsed<Declared>> {
  // Read again only when the file may have changed: a node's thousand paths read, compared and
  // parsed for each of a cold start's thousand requests were most of its time (O(N²)).
  const stat = statSync(file, { bigint: true, throwIfNoEntry: false });
  const last = lastRead?.file === file && lastRead.root === root ? lastRead : undefined;
  if (stat && last?.settled && sameFile(stat, last.stat)) return last.declared;
  // Synchronous, as the writer is (writer.ts says why); a regular file within its limit only: a FIFO
  // put in its place must not hang the engine, nor a device fill it.
  const read = readRegularFile(file, MAX_DECLARATION_BYTES);
  if (!read.ok) return { ok: false, reason: `declaration unreadable: ${read.reason}` };
  const bytes = Buffer.from(read.value.buffer, read.value.byteOffset, read.value.byteLength);
  const declared = last?.bytes.equals(bytes) ? last.declared : parseDeclared(file, root, bytes.toString('utf8'));
  // As git does with its index: a file changed within RACY_NS of this read could change again
  // within the same tick of the file system's clock, same size, and look the same; it is read again.
  const settled = stat !== undefined && BigInt(Date.now()) * 1_000_000n - stat.ctimeNs > RACY_NS;
  lastRead = stat ? { file, root, stat, bytes, settled, declared } : undefined;
  return declared;
}

/** How long before a read a declaration must have last changed for its stat to stand for its bytes. */
const RACY_NS = 100_000_000n;

/** The declaration read last, its stat then, and what it declared. */
let lastRead: { file: string; root: string; stat: BigIntStats; bytes: Buffer; settled: boolean; declared: Parsed<Declared> } | undefined;

/** Whether two stats are of the same file with the same content as far as a stat can tell. */
function sameFile(a: BigIntStats, b: BigIntStats): boolean {
  return a.ino === b.ino && a.dev === b.dev && a.size === b.size && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs;
}

function parseDeclared(file: string, root: string, text: string): Parsed<Declared> {
  const parsed = decodeJson(DeclarationSchema, text, { maxBytes: MAX_DECLARATION_BYTES });
  if (!parsed.ok) return { ok: false, reason: `declaration ${file} out of shape: ${parsed.reason}` };
  const resolved = (paths: readonly string[]) => new Set(paths.map((p) => resolve(root, p)));
  const list = parsed.value;
  if (Array.isArray(list)) {
    const any = resolved(list);
    return { ok: true, value: { names: (path) => any.has(resolve(root, path)) } };
  }
  const byModule = new Map(Object.entries(list).map(([module, paths]) => [module, resolved(paths)]));
  return { ok: true, value: { names: (path, module) => byModule.get(module)?.has(resolve(root, path)) === true } };
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

/** The declaration's text, or undefined when it cannot be read (absent, no regular file, past the limit). */
function readOrEmpty(file: string): string | undefined {
  const read = readRegularFile(file, MAX_DECLARATION_BYTES);
  return read.ok ? Buffer.from(read.value).toString('utf8') : undefined;
}
