// The archive `publish` stores (DESIGN §4, §13): a directory packed the same way every time — its
// regular files in name order, fixed mode, time and owners, so the same DIR gives the same digest —
// or a tar or tar.gz taken as it is; gzipped, and unpacked again exactly as a node's client unpacks
// it, so nothing is stored that a node would refuse.
import { gzip } from 'node:zlib';
import { promisify } from 'node:util';
import { packTar } from 'modern-tar';
import { fail, ok, type Parsed } from '../../../shared/base/result.ts';
import { DEFAULT_ARCHIVE_LIMITS, type ArchiveLimits } from '../../../module/archive-limits.ts';
import { unpackArchive } from '../../../module/untar.ts';
import { readLintInput } from '../../../module/input.ts';

/** Every packed entry's time: the epoch, so a checkout's times never change the digest. */
export const PACKED_MTIME = new Date(0);
/** Every packed file's mode: a template's own bits mean nothing to a node (the composition's `fileMode` does). */
export const PACKED_MODE = 0o644;

/** The archive as it will be stored. */
export type ModuleArchive = {
  /** What it was made from. */
  from: 'directory' | 'archive';
  /** The bytes stored: gzip. */
  bytes: Uint8Array;
  /** The templates, as a node unpacks them. */
  files: Map<string, Uint8Array>;
  /** What a directory held that no archive can (sockets), left out. */
  skipped: string[];
};

/** The archive, or why there is none: `unreadable` when the path cannot be read at all (a usage error), else the archive is refused. */
export type ReadArchive = { ok: true; value: ModuleArchive } | { ok: false; reason: string; unreadable: boolean };

const gzipBytes = promisify(gzip);

/** Reads `path` — a directory or a tar/tar.gz — into the archive to store, or says why it cannot be one. */
export async function readModuleArchive(path: string, limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS): Promise<ReadArchive> {
  const read = await readLintInput(path, limits);
  if (!read.ok) return { ok: false, unreadable: true, reason: read.reason };
  const { kind, files, refused, skipped } = read.value;
  if (kind === 'template') return { ok: false, unreadable: false, reason: `${path} is neither a directory nor a tar or tar.gz archive` };
  if (refused !== undefined) return { ok: false, unreadable: false, reason: `${kind} ${path}: ${refused}` };
  const given = read.value.bytes;
  const tarOrGzip = kind === 'archive' && given !== undefined ? given : await packFiles(files);
  const bytes = isGzip(tarOrGzip) ? tarOrGzip : new Uint8Array(await gzipBytes(tarOrGzip, { level: 9 }));
  const checked = await checkAsANodeWould(bytes, files, limits);
  if (!checked.ok) return { ok: false, unreadable: false, reason: `${kind} ${path}: ${checked.reason}` };
  return { ok: true, value: { from: kind, bytes, files, skipped } };
}

/** A tar of `files`, the same bytes for the same files whatever their times, modes and owners on disk. */
export function packFiles(files: ReadonlyMap<string, Uint8Array>): Promise<Uint8Array> {
  const names = [...files.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return packTar(
    names.map((name) => {
      const body = files.get(name)!;
      const header = { name, size: body.length, type: 'file', mode: PACKED_MODE, mtime: PACKED_MTIME, uid: 0, gid: 0, uname: '', gname: '' } as const;
      return { header, body };
    }),
  );
}

/** Unpacks the stored bytes as a node's client does: refused, or past a limit, or not the files read, is no archive. */
async function checkAsANodeWould(bytes: Uint8Array, files: ReadonlyMap<string, Uint8Array>, limits: ArchiveLimits): Promise<Parsed<void>> {
  if (bytes.length > limits.maxArchiveBytes) return fail(`is ${bytes.length} bytes gzipped, past the archive limit of ${limits.maxArchiveBytes} bytes`);
  const unpacked = await unpackArchive(bytes, limits);
  if (!unpacked.ok) return unpacked;
  const same =
    unpacked.value.size === files.size &&
    [...files].every(([name, body]) => {
      const got = unpacked.value.get(name);
      return got !== undefined && Buffer.from(body).equals(got);
    });
  return same ? ok(undefined) : fail('unpacks to other files than were read (an internal error: nothing is stored)');
}

function isGzip(bytes: Uint8Array): boolean {
  return bytes[0] === 0x1f && bytes[1] === 0x8b;
}
