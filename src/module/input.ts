// What `lint` reads: an archive (tar or tar.gz, unpacked as the client unpacks it), a directory of
// templates (walked as `tar -C DIR .` would pack it, checked against the same limits), or one file.
import { lstat, readdir, realpath, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { fail, ok, type Parsed } from '../shared/base/result.ts';
import { readFileWithin } from './read-file.ts';
import { DEFAULT_ARCHIVE_LIMITS, type ArchiveLimits } from './archive-limits.ts';
import { checkEntries, unpackArchive, type EntryHeader } from './untar.ts';
import { errorText } from '../shared/base/errors.ts';

/** What `lint` was given, read. */
export type LintInput = {
  /** How the path was taken. */
  kind: 'archive' | 'directory' | 'template';
  /** The templates by name (empty when the archive or directory is refused). */
  files: Map<string, Uint8Array>;
  /** Why the client would refuse the archive (or the directory packed as one): fails every module. */
  refused?: string;
  /** An archive's bytes, for its digest. */
  bytes?: Uint8Array;
  /** Entries a packer leaves out (sockets), said as warnings. */
  skipped: string[];
};

/**
 * Reads `path`: a directory is walked; a file that is gzip, a ustar tar, or named `.tar`, `.tar.gz`
 * or `.tgz` is an archive; any other file is one template named by its base name. A path that
 * cannot be read is the reason (the command's usage error); a refused archive is `refused`.
 */
export async function readLintInput(path: string, limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS): Promise<Parsed<LintInput>> {
  let real: string;
  try {
    real = await realpath(path);
    if ((await stat(real)).isDirectory()) return ok(await readDirectory(real, limits));
    const bytes = await readFileWithin(real, limits.maxArchiveBytes);
    if (bytes.length > limits.maxArchiveBytes)
      return ok({ kind: 'archive', files: new Map(), refused: `larger than the archive limit of ${limits.maxArchiveBytes} bytes`, skipped: [] });
    if (!looksLikeArchive(path, bytes)) return ok({ kind: 'template', files: new Map([[basename(path), bytes]]), skipped: [] });
    const files = await unpackArchive(bytes, limits);
    return ok({ kind: 'archive', files: files.ok ? files.value : new Map(), ...(files.ok ? {} : { refused: files.reason }), bytes, skipped: [] });
  } catch (err) {
    return fail(`cannot read ${path}: ${errorText(err, { cause: true })}`);
  }
}

function looksLikeArchive(path: string, bytes: Uint8Array): boolean {
  if (/\.(tar|tar\.gz|tgz)$/i.test(path)) return true;
  if (bytes[0] === 0x1f && bytes[1] === 0x8b) return true;
  return Buffer.from(bytes.subarray(257, 262)).toString('latin1') === 'ustar';
}

/** Walks a directory as an archive of it would hold it, checks the entries as unpacking would, then reads the regular files. */
async function readDirectory(root: string, limits: ArchiveLimits): Promise<LintInput> {
  const headers: EntryHeader[] = [];
  const skipped: string[] = [];
  await walk(root, '', headers, skipped, limits.maxEntries + 1);
  const refused = checkEntries(headers, limits);
  if (refused) return { kind: 'directory', files: new Map(), refused, skipped };
  const files = new Map<string, Uint8Array>();
  for (const h of headers) if (h.type === 'file') files.set(h.name, await readFileWithin(join(root, h.name), limits.maxEntryBytes));
  return { kind: 'directory', files, skipped };
}

/** Collects the entries under `dir` in name order, depth first, stopping past `most` entries (the count limit says the rest). */
async function walk(root: string, dir: string, headers: EntryHeader[], skipped: string[], most: number): Promise<void> {
  const entries = (await readdir(join(root, dir), { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of entries) {
    if (headers.length >= most) return;
    const name = dir === '' ? entry.name : `${dir}/${entry.name}`;
    const type = typeOf(entry);
    if (type === undefined) {
      skipped.push(`${name}: a socket; an archive cannot hold it`);
      continue;
    }
    const size = type === 'file' ? (await lstat(join(root, name))).size : 0;
    headers.push({ name: type === 'directory' ? `${name}/` : name, size, type });
    if (type === 'directory') await walk(root, name, headers, skipped, most);
  }
}

function typeOf(entry: {
  isFile(): boolean;
  isDirectory(): boolean;
  isSymbolicLink(): boolean;
  isFIFO(): boolean;
  isCharacterDevice(): boolean;
  isBlockDevice(): boolean;
}): EntryHeader['type'] | undefined {
  if (entry.isFile()) return 'file';
  if (entry.isDirectory()) return 'directory';
  if (entry.isSymbolicLink()) return 'symlink';
  if (entry.isFIFO()) return 'fifo';
  if (entry.isCharacterDevice()) return 'character-device';
  if (entry.isBlockDevice()) return 'block-device';
  return undefined;
}
