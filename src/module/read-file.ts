// Reading a module's file from disk (an archive, a template of a directory, a plan or composition
// `lint` or `publish` is given, a file:// archive of the client): a regular file only, within a limit.
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { notRegularKind } from '../shared/base/regular-file.ts';

/** A path that is there but is no regular file (a FIFO, a device, a directory, a socket). */
export class NotARegularFile extends Error {
  override name = 'NotARegularFile';
  /** What it is: `a FIFO`, `a character device`… */
  readonly kind: string;

  constructor(path: string, kind: string) {
    super(`${path} is ${kind}, not a regular file`);
    this.kind = kind;
  }
}

/**
 * Reads a regular file within a limit; throws the file system's error (ENOENT when absent) or
 * NotARegularFile. Opened non-blocking and without following a last link, so a FIFO or device
 * put in its place never holds one of Node's file threads.
 */
export async function readFileWithin(path: string, maxBytes: number): Promise<Uint8Array> {
  const handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW | constants.O_NOCTTY);
  try {
    const kind = notRegularKind(await handle.stat());
    if (kind !== undefined) throw new NotARegularFile(path, kind);
    return await collectWithin(handle.createReadStream({ autoClose: false }), maxBytes);
  } finally {
    await handle.close();
  }
}

/** Collects chunks, and stops reading once more than `maxBytes` came: a longer result is past the limit. */
export async function collectWithin(chunks: AsyncIterable<Uint8Array>, maxBytes: number): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  let total = 0;
  for await (const chunk of chunks) {
    parts.push(chunk);
    total += chunk.length;
    if (total > maxBytes) break;
  }
  return concat(parts, total);
}

function concat(parts: Uint8Array[], total: number): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  const out = new Uint8Array(total);
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}
