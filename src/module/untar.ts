// Unpacking an archive's bytes into its files (DESIGN §7.1): gunzip when the bytes are gzip, then
// tar, refusing the whole archive for any hostile or oversized entry.
import { gunzip } from 'node:zlib';
import { unpackTar, type TarHeader } from 'modern-tar';
import { fail, type Parsed } from '../shared/base/result.ts';
import type { ArchiveLimits } from './archive-limits.ts';
import { errorText } from '../shared/base/errors.ts';

// The tar stream around the files' bytes: per entry a header, a pax header with a one-block body
// and padding; at the end the zero blocks and the record padding tar writes.
const TAR_BYTES_PER_ENTRY = 2048;
const TAR_END_BYTES = 10_240;

const REFUSED_TYPES: Partial<Record<NonNullable<TarHeader['type']>, string>> = {
  symlink: 'symlink',
  link: 'hard link',
  'character-device': 'character device',
  'block-device': 'block device',
  fifo: 'fifo',
};

/** Unpacks tar or tar.gz bytes: regular-file name (normalised, no leading `./`) → bytes. */
export async function unpackArchive(bytes: Uint8Array, limits: ArchiveLimits): Promise<Parsed<Map<string, Uint8Array>>> {
  const tar = isGzip(bytes) ? await gunzipWithin(bytes, maxTarBytes(limits)) : ({ ok: true, value: bytes } as const);
  return tar.ok ? untar(tar.value, limits) : tar;
}

/** Most bytes a tar within the limits can take, so a gzip bomb stops there. */
export function maxTarBytes(limits: ArchiveLimits): number {
  return limits.maxArchiveBytes + limits.maxEntries * TAR_BYTES_PER_ENTRY + TAR_END_BYTES;
}

function isGzip(bytes: Uint8Array): boolean {
  return bytes[0] === 0x1f && bytes[1] === 0x8b;
}

function gunzipWithin(bytes: Uint8Array, maxBytes: number): Promise<Parsed<Uint8Array>> {
  return new Promise((resolve) => {
    gunzip(bytes, { maxOutputLength: maxBytes }, (err, out) => {
      if (!err) resolve({ ok: true, value: out });
      else if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE')
        resolve(fail(`gzip decompresses past ${maxBytes} bytes (the archive limit with room for tar headers)`));
      else resolve(fail(`not a valid gzip: ${err.message}`));
    });
  });
}

/** One entry as a directory walk sees it, for checkEntries. */
export type EntryHeader = { name: string; size: number; type: NonNullable<TarHeader['type']> };

/**
 * Checks entries (a directory `lint` packs in its mind) as unpacking checks an archive's headers,
 * in order: the first refusal's reason, worded as unpacking words it, or undefined.
 */
export function checkEntries(headers: Iterable<EntryHeader>, limits: ArchiveLimits): string | undefined {
  const check = entryChecker(limits);
  try {
    for (const header of headers) check(header);
  } catch (err) {
    if (err instanceof Refusal) return err.message;
    throw err;
  }
  return undefined;
}

/** Why an entry refuses the whole archive; thrown only inside this file to stop the unpacking. */
class Refusal extends Error {}

async function untar(tar: Uint8Array, limits: ArchiveLimits): Promise<Parsed<Map<string, Uint8Array>>> {
  const check = entryChecker(limits);
  let entries;
  try {
    // The filter sees every header before its body is read; map renames it to the normalised name.
    entries = await unpackTar(tar, {
      strict: true,
      filter: (header) => (check(header), true),
      map: (header) => ({ ...header, name: normaliseName(header.name) }),
    });
  } catch (err) {
    if (err instanceof Refusal) return fail(err.message);
    return fail(`not a valid tar: ${errorText(err)}`);
  }
  const files = new Map<string, Uint8Array>();
  // A name written twice keeps its last bytes, as tar extracts it.
  for (const { header, data } of entries) if (header.type === 'file') files.set(header.name, data ?? new Uint8Array(0));
  return { ok: true, value: files };
}

/** Checks each header in order, counting entries and unpacked bytes; throws a Refusal. */
function entryChecker(limits: ArchiveLimits): (header: TarHeader) => void {
  let entries = 0;
  let total = 0;
  return (header) => {
    const name = JSON.stringify(header.name);
    entries += 1;
    if (entries > limits.maxEntries) refuse(`entry ${name}: more than ${limits.maxEntries} entries, past the entry count limit`);
    const nameProblem = checkName(header);
    if (nameProblem) refuse(`entry ${name}: ${nameProblem}`);
    const refusedType = REFUSED_TYPES[header.type ?? 'file'];
    if (refusedType) refuse(`entry ${name}: ${refusedType} refused`);
    if (header.type === 'directory') return;
    if (header.size > limits.maxEntryBytes) refuse(`entry ${name}: ${header.size} bytes, past the entry limit of ${limits.maxEntryBytes} bytes`);
    total += header.size;
    if (total > limits.maxArchiveBytes) {
      refuse(`entry ${name}: unpacked total reaches ${total} bytes, past the archive limit of ${limits.maxArchiveBytes} bytes`);
    }
  };
}

function checkName(header: TarHeader): string | undefined {
  if (header.name.startsWith('/')) return 'absolute name refused';
  if (header.name.split('/').includes('..')) return '".." segment refused';
  // A directory named "./" is the archive's root, as `tar -C dir .` writes it.
  if (normaliseName(header.name) === '' && header.type !== 'directory') return 'empty name refused';
  return undefined;
}

/** Drops `.` and empty segments: `./conf//web.conf` → `conf/web.conf`, `./` → ``. */
function normaliseName(name: string): string {
  return name
    .split('/')
    .filter((segment) => segment !== '' && segment !== '.')
    .join('/');
}

function refuse(reason: string): never {
  throw new Refusal(reason);
}
